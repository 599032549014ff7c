"""Sampling the next token: temperature, then top-k, then top-p, then renormalise; and seeded continuations.

The order and the rules are those of the common implementations (Hugging Face's logits warpers apply
temperature, top-k and top-p in this order). Every function works on the last axis, so one call filters one
distribution or a whole batch of them.

Ties are broken one way everywhere: tokens are ranked by logit, highest first, and equal logits by token id,
lowest first (a stable sort). Greedy decoding takes the first token of that ranking (np.argmax does too),
top-k keeps exactly k tokens (Hugging Face keeps every token tied with the k-th), and top-p keeps a prefix of
the ranking. Temperature never changes the ranking, so it is computed once, from the raw logits.
"""

import numpy as np

from .ops import softmax


def ranking(logits):  # [..., n_vocab] -> [..., n_vocab] token ids, most likely first
    """Token ids by logit, highest first; equal logits by lower id first."""
    return np.argsort(-np.asarray(logits), axis=-1, kind="stable")


def unsort(order, in_order):  # [..., n_vocab] ids, [..., n_vocab] values in ranking order -> [..., n_vocab] by id
    """Values listed in ranking order, put back at their tokens' ids."""
    out = np.empty_like(in_order)
    np.put_along_axis(out, order, in_order, axis=-1)
    return out


def apply_temperature(logits, temperature, order=None):  # [..., n_vocab], float -> [..., n_vocab] probabilities
    """softmax(logits / T). T = 0 is greedy: probability 1 on the first token of ranking(), 0 elsewhere."""
    logits = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        order = ranking(logits) if order is None else order
        return unsort(order, np.broadcast_to(np.arange(logits.shape[-1]) == 0, logits.shape)).astype(np.float64)
    return softmax(logits / temperature)


def top_k_keep(order, k):  # [..., n_vocab] ranking(), int -> [..., n_vocab] bool
    """The k most likely tokens; k = 0 keeps them all."""
    if k == 0:
        return np.ones(order.shape, dtype=bool)
    return unsort(order, np.broadcast_to(np.arange(order.shape[-1]) < k, order.shape))


def top_p_keep(order, p, top_p):  # [..., n_vocab] ranking(), [..., n_vocab] probabilities, float -> [..., n_vocab] bool
    """The smallest prefix of the ranking whose probabilities p add up to at least top_p (the nucleus).

    top_p = 1 keeps every token: the cumulative sum of many small p can round to 1.0 before the last token."""
    if top_p >= 1:
        return np.ones(order.shape, dtype=bool)
    cum = np.cumsum(np.take_along_axis(p, order, axis=-1), axis=-1)  # [..., n_vocab] mass of the first i + 1
    n_keep = 1 + np.sum(cum < top_p, axis=-1, keepdims=True)        # [..., 1] up to the first reaching top_p
    return unsort(order, np.arange(order.shape[-1]) < n_keep)


def renormalise(p, keep):  # [..., n_vocab] probabilities, bool -> [..., n_vocab]
    """Zero the removed tokens and rescale the rest to sum to 1."""
    kept = np.where(keep, p, 0.0)
    return kept / kept.sum(axis=-1, keepdims=True)


def filtered(logits, temperature, top_k, top_p, order=None):  # [..., n_vocab] -> dict of [..., n_vocab] arrays
    """Every stage of the pipeline: p after temperature, after top-k, after top-p (final); what top-k keeps, what
    top-k and top-p keep, and what is left to draw from (one token when greedy).

    Top-p reads the distribution that top-k left, renormalised, as Hugging Face does. order, ranking(logits),
    may be given when the same logits are filtered again."""
    order = ranking(logits) if order is None else order
    p_temp = apply_temperature(logits, temperature, order)
    keep_k = top_k_keep(order, top_k)
    p_k = renormalise(p_temp, keep_k)
    keep_p = top_p_keep(order, p_k, top_p) & keep_k
    p = renormalise(p_k, keep_p)
    keep = p > 0 if temperature == 0 else keep_p  # greedy keeps one token, whatever the filters allow
    return dict(p_temp=p_temp, keep_k=keep_k, p_k=p_k, keep_p=keep_p, keep=keep, p=p)


def final_probs(logits, temperature, top_k, top_p, order=None):  # [..., n_vocab] -> [..., n_vocab]
    """The distribution a token is drawn from: temperature, top-k, top-p, renormalised."""
    return filtered(logits, temperature, top_k, top_p, order)["p"]


def draw(p, u):  # [n_vocab], float in [0, 1) -> token id
    """Inverse-CDF sampling: the first token, in vocabulary order, whose cumulative p exceeds u * total."""
    cum = np.cumsum(p)
    return int(min(np.searchsorted(cum, u * cum[-1], side="right"), len(p) - 1))


def sample_continuations(next_logits, prompt, stop, cap, n_samples, seed, temperature, top_k, top_p):
    """n_samples continuations of prompt (a list of token ids), token by token until stop or cap tokens.

    next_logits(batch) maps a list of id sequences of one length to their next-token logits [n, n_vocab].
    The random numbers: u = np.random.default_rng(seed).random((n_samples, cap)); token t of sample i is
    draw(p, u[i, t]), with p filtered as final_probs does at every step. A prompt ending with stop gets
    nothing."""
    u = np.random.default_rng(seed).random((n_samples, cap))  # [n_samples, cap]
    out = [[] for _ in range(n_samples)]
    running = [] if prompt and prompt[-1] == stop else list(range(n_samples))
    for t in range(cap):
        if not running:
            break
        logits = next_logits([prompt + out[i] for i in running])  # [n_running, n_vocab]
        p = final_probs(logits, temperature, top_k, top_p)
        for row, i in enumerate(running):
            out[i].append(draw(p[row], u[i, t]))
        running = [i for i in running if out[i][-1] != stop]
    return out
