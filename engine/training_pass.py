"""Training's forward and backward pass: llama.forward's sums, arranged to run fast thousands of times a run.

llama.py is the forward pass to read; this module computes the same numbers (tests/test_llama.py holds the
two equal, logits and gradients, on random weights, both shipped runs and a grouped-query config) with:
    - prefix sharing (Prefixes): a prefix that several sentences of a batch begin with is computed once;
    - fused products: q and k as one matrix product, every weight gradient as one 2-D product;
    - RoPE as one complex product, rms_norm's mean as a product, softmax without the row max where safe.
tiny.py trains with loss_and_grads, and helper_process.py runs a part of each batch in a second process.

The weights are llama.py's flat dict; n_kv_head is read from the shapes of wk.
"""

import functools
import math

import numpy as np

from .ops import causal_mask, merge_heads, split_heads
from .positions import rope_tables


def n_layers(w) -> int:
    return sum(name.endswith(".wq") for name in w)


def dense(x, m):  # [..., n_in], [n_in, n_out] -> [..., n_out]
    """x @ m as one 2-D matrix product: numpy runs a 3-D one as a loop of small products, several times slower."""
    return (x.reshape(-1, x.shape[-1]) @ m).reshape(*x.shape[:-1], m.shape[1])


# ops.rms_norm, positions.rotate_pairs and ops.attention as training needs them, thousands of times a run: the same
# sums in fewer numpy calls. numpy's reductions over a short last axis loop row by row, and so do RoPE's
# strided even/odd writes; the textbook versions in ops.py and positions.py are the ones to read.

def rms_scale(x, eps=1e-5):  # [..., d] -> [..., 1]
    """1 / the root mean square of each vector: ops.rms_norm(x, w) is x * rms_scale(x) * w. The mean of squares
    is a product with a column of 1/d; forward keeps the scale for the backward pass."""
    return 1.0 / np.sqrt(dense(x * x, _mean_column(x.shape[-1], x.dtype)) + eps)


@functools.lru_cache(maxsize=16)
def _mean_column(d, dtype):  # -> [d, 1] of 1/d, read-only
    column = np.full((d, 1), 1.0 / d, dtype)
    column.flags.writeable = False
    return column


@functools.lru_cache(maxsize=64)
def rope_turns(n_seq, head_dim, n_heads, dtype):  # -> [n_seq, n_heads * head_dim // 2] complex, read-only
    """cos + i sin of positions.rope_tables for every pair of n_heads heads: q's heads, then k's."""
    cos, sin = rope_tables(np.arange(n_seq), head_dim)  # [n_seq, head_dim // 2]
    turns = np.tile(cos + 1j * sin, n_heads).astype(np.result_type(dtype, np.complex64))
    turns.flags.writeable = False
    return turns


def turn_pairs(x, turns):  # [..., 2 n], [..., n] complex -> [..., 2 n]
    """positions.rotate_pairs with each pair (x_2i, x_2i+1) read as the complex number x_2i + i x_2i+1 and
    turned by one complex product; conj(turns) turns back."""
    return (x.view(turns.dtype) * turns).view(x.dtype)


@functools.lru_cache(maxsize=64)
def cached_mask(n_seq, dtype):  # -> [n_seq, n_seq], read-only
    """ops.causal_mask, made once per length."""
    mask = causal_mask(n_seq, dtype=dtype)
    mask.flags.writeable = False
    return mask


def causal_attention(q, k, v):  # [B, H, T, hd] x3 -> [B, H, T, hd], [B, H, T, T]
    """ops.attention(q, k, v, causal=True). Softmax subtracts each row's max before exp only where it must: when
    no score is over 40 (no exp can overflow) and every row's sum of exp(score) is at least 1e-20 (what underflows
    is under 1e-18 of its row), exp(score) over its row's sum is the same softmax to float precision, and saves
    T - 1 np.maximum over columns for the max. The row sum is a product with ones; no row is fully masked, since
    every query sees key 0. The output is laid out [B, T, H, hd] in memory, so that merge_heads needs no copy."""
    *lead, n_head, T, head_dim = q.shape
    s = q @ np.swapaxes(k, -1, -2)  # [B, H, T, T]
    s /= math.sqrt(head_dim)
    s += cached_mask(T, s.dtype)
    ones = np.ones(T, s.dtype)
    p = np.exp(s) if s.max() <= 40 else None  # (a score that is not a number fails the test too)
    total = None if p is None else p @ ones  # [B, H, T]
    if total is None or not total.min() >= 1e-20:  # the usual way: minus each row's max
        m = s[..., :1].copy()
        for j in range(1, T):
            np.maximum(m, s[..., j:j + 1], out=m)
        p = np.exp(s - m)
        total = p @ ones
    p /= total[..., None]
    out = np.swapaxes(np.empty((*lead, T, n_head, v.shape[-1]), p.dtype), -3, -2)
    return np.matmul(p, v, out=out), p


class Prefixes:
    """A batch of sentences as the distinct prefixes they begin with: what training computes.

    With causal attention, every layer's row at a position depends only on the sentence up to that position, so
    sentences that begin alike have the same rows there. Every sentence starts "<bos> the", and a batch of the main
    config's 64 sentences has about 300 distinct prefixes among its 480 real positions (590 in training's two
    parts, padded). forward() given a Prefixes computes one row per prefix ([M, ...] where ids would give
    [B, T, ...]); attention alone runs in the sentences' layout, where each position reads its prefix's row.

        tokens [M]   each prefix's last token          at [B, T]   the prefix that ends at each position
        pos [M]      its position                      first [M]   one place, b T + t, where it ends

    Prefixes are numbered by position, then in the order of the sentences sorted as token lists. Every position
    up to a sentence's last real one is computed (attention reads them all); a position after it gets no prefix of
    its own (at says 0 there), and attention reads it only from later positions, which are left out too."""

    def __init__(self, ids, real):  # [B, T] token ids, [B, T] bool: the positions to compute
        B, T = ids.shape
        real = np.logical_or.accumulate(np.asarray(real, bool)[:, ::-1], 1)[:, ::-1]  # and every one before them
        order = np.lexsort(ids.T[::-1])  # sentences sorted as token lists: equal prefixes are neighbours
        s, ok = ids[order], real[order]
        new = ok.copy()  # a prefix that the sentence above (in that order) does not compute
        new[1:] &= ~(np.logical_and.accumulate(s[1:] == s[:-1], axis=1) & ok[:-1])
        where = np.flatnonzero(new.T)  # the new prefixes, position by position: their numbers are 0, 1, ...
        number = np.full(T * B, -1)
        number[where] = np.arange(len(where))
        at = np.maximum.accumulate(number.reshape(T, B).T, axis=0)  # the number above, where not new
        at[~ok] = 0
        self.at = np.empty_like(at)
        self.at[order] = at
        self.pos, row = np.divmod(where, B)
        self.tokens, self.first = s[row, self.pos], order[row] * T + self.pos
        spots = np.flatnonzero(real)  # the places where a prefix ends, for sum_copies
        ends = self.at.reshape(-1)[spots]
        copies = np.bincount(ends, minlength=len(where))
        self.shared = np.flatnonzero(copies > 1)
        self._spots = spots[copies[ends] > 1]
        self._onehot = (ends[copies[ends] > 1] == self.shared[:, None]).astype(np.float32)  # [S, R]

    def __len__(self) -> int:
        return len(self.tokens)

    def sum_copies(self, a):  # [B T, n] -> [M, n]
        """Each prefix's sum over the places it ends: the gradient of a row that several sentences share. Most
        prefixes end in one place; the few shared ones (the first positions) are summed by one product."""
        out = a[self.first]
        out[self.shared] = self._onehot.astype(a.dtype, copy=False) @ a[self._spots]
        return out


def forward(w, ids, n_head, *, keep=None, head_mask=None):  # ids [B, T] -> logits [B, T, n_vocab]
    """llama.forward's logits for every position; given a Prefixes instead of ids, for every prefix ([M, n_vocab]).

    keep, a dict, receives what the backward pass and the views read: the stream x after the embedding
    and after each layer, each layer's attention weights and intermediate arrays.
    head_mask, [n_layer, n_head] of 0/1, silences heads: a 0 sets that head's output to zero.
    """
    rows = ids if isinstance(ids, Prefixes) else None
    B, T = ids.shape if rows is None else rows.at.shape
    d = w["embed"].shape[1]
    dtype = w["embed"].dtype
    hd = d // n_head
    n_kv = w["0.wk"].shape[1] // hd if "0.wk" in w else n_head
    nq = n_head * hd  # q's columns; k's and v's are n_kv * hd each
    turns = rope_turns(T, hd, n_head + n_kv, dtype)  # [T, (n_head + n_kv) hd] complex: q's pairs, then k's
    if rows is not None:
        ids, turns = rows.tokens, turns[rows.pos]  # [M], [M, ...]: a prefix at its last position
    x = w["embed"][ids]  # [B, T, d_model]
    layers, attn, stream = [], [], [x]
    for i in range(n_layers(w)):
        x_in = x
        r1 = rms_scale(x)
        h = x * r1 * w[f"{i}.norm1"]  # rms_norm(x, norm1)
        # q and k as one product, v as another: numpy runs an elementwise operation on a column slice
        # (part of each row) row by row, several times slower than on a whole array
        qk = turn_pairs(dense(h, np.concatenate([w[f"{i}.wq"], w[f"{i}.wk"]], 1)), turns)  # [B, T, nq + kv]:
        v = dense(h, w[f"{i}.wv"])  # q and k turned by RoPE at once, still one row per token; v
        if rows is not None:  # each position reads its prefix's row
            qk, v = qk[rows.at], v[rows.at]
        qr, kr = split_heads(qk[..., :nq], n_head), repeat_kv(split_heads(qk[..., nq:], n_kv), n_head)
        v = repeat_kv(split_heads(v, n_kv), n_head)  # [B, n_head, T, head_dim]
        o, p = causal_attention(qr, kr, v)  # [B, n_head, T, head_dim], [B, n_head, T, T]
        if head_mask is not None:
            o = o * head_mask[i][:, None, None].astype(dtype)
        heads = merge_heads(o)  # [B, T, n_head hd]
        if rows is not None:
            heads = heads.reshape(B * T, nq)[rows.first]  # [M, n_head hd]
        out = dense(heads, w[f"{i}.wo"])
        x = x + out
        x_mid = x
        r2 = rms_scale(x)
        h2 = x * r2 * w[f"{i}.norm2"]
        gate, up = dense(h2, w[f"{i}.wg"]), dense(h2, w[f"{i}.wu"])  # [B, T, d_ff] each: two whole arrays, as q k | v
        sg = 1.0 / (1.0 + np.exp(-gate))  # sigmoid(gate), kept: the backward pass needs it too
        m = gate * sg * up  # silu(gate) * up, as silu(x) = x sigmoid(x)
        out = dense(m, w[f"{i}.wd"])
        x = x + out
        if keep is not None:
            layers.append(dict(x_in=x_in, r1=r1, h=h, v=v, qr=qr, kr=kr, p=p, heads=heads,
                               x_mid=x_mid, r2=r2, h2=h2, gate=gate, sg=sg, up=up, m=m))
        attn.append(p)
        stream.append(x)
    rf = rms_scale(x)
    hf = x * rf * w["norm_f"]
    logits = dense(hf, w["head"])  # [B, T, n_vocab]
    if keep is not None:
        keep.update(layers=layers, x_out=x, rf=rf, hf=hf, attn=attn, residual=stream, turns=turns, ids=ids,
                    n_kv=n_kv)
    return logits


def repeat_kv(x, n_head):  # [B, n_kv, T, hd] -> [B, n_head, T, hd]
    """Each K/V head once for every query head of its group (llama.grouped_attention); as it is when n_kv = n_head."""
    return x if x.shape[-3] == n_head else np.repeat(x, n_head // x.shape[-3], axis=-3)


def sum_groups(x, n_kv):  # [B, n_head, T, hd] -> [B, n_kv, T, hd]
    """The gradient of a repeated K/V head: the sum over the query heads of its group."""
    *lead, n_head, T, hd = x.shape
    return x if n_head == n_kv else x.reshape(*lead, n_kv, n_head // n_kv, T, hd).sum(-3)


# --- the backward pass ------------------------------------------------------------------------------------------

def rms_back(dy, x, g, r):  # [N, d] x2, [d], [N, 1] -> the gradient through rms_norm(x, g): dx [N, d], dg [d]
    """y = x r g with r = 1 / sqrt(mean(x^2) + eps) (forward's rms_scale, kept), so
    dx = (dy g - x r^2 (x dy . g) / d) r and dg = sum(dy x r). Row sums are products: numpy's reductions over
    a short last axis loop row by row."""
    xdy = x * dy
    k = (r * r * (1.0 / x.shape[-1])) * (xdy @ g)[:, None]  # [N, 1]
    return (dy * g - x * k) * r, r[:, 0] @ xdy


def work(d, n_layer, n_head, n_kv_head, d_ff, n_vocab):  # -> numbers per row, per layout position, per score
    """What loss_and_grads costs, counted in the numbers its arrays are written with: per computed row (a prefix),
    per position of the sentences' layout that attention runs in, and per attention score. Counted from forward
    and the backward pass below: each elementwise result and each product's output, the backward about as many
    as the forward. Multiply-adds are not counted: at the tiny Llama's widths numpy's time follows the numbers
    written, not the multiplies (bench/HISTORY.md: these counts weigh row, position and score about 64 : 9 : 1
    for the main config; a least-squares fit of measured times gave 48 : 10 : 1). helper_process balances a
    batch's two parts by them."""
    hd = d // n_head
    nq, nk = n_head * hd, n_kv_head * hd
    per_layer = 10 * d + 3 * nq + 3 * nk + 8 * d_ff  # norms, q|k|v, RoPE, the heads' rows, FFN, two residual adds
    row = n_layer * 2 * per_layer + 7 * n_vocab + 4 * d  # and the final norm, logits, softmax and their gradient
    repeats = 2 * nq if n_kv_head < n_head else 0  # K and V repeated for a group's query heads
    position = n_layer * (5 * nq + 5 * nk + repeats)  # gathers into the layout, heads merged, their gradients
    score = n_layer * n_head * 9  # scores, mask, exp, weights; and four arrays of their gradient
    return row, position, score


def loss_and_grads(w, n_head, ids, pad, n=None):
    """Mean cross-entropy of predicting each next token of ids [B, T] (targets equal to pad excluded), and its
    gradient for every weight. n, if given, is the count of real targets to divide by instead of ids' own: the
    mean over a whole batch of which ids is a part, so that the parts' losses and gradients add up to the batch's.

    The rows are the batch's distinct prefixes (Prefixes): a prefix that several sentences share is computed
    once, with the sum of their targets (a count of each next token). Every weight gradient is one 2-D product
    over the rows, taken as (d_out.T @ x_in).T, the order OpenBLAS runs fastest here: einsum and 3-D matmul run
    as loops of small products, several times slower."""
    keep = {}
    targets = ids[:, 1:]
    real = targets != pad
    if not real.any():  # nothing to predict
        return 0.0, {k: np.zeros_like(a) for k, a in w.items()}
    rows = Prefixes(ids[:, :-1], real)
    logits = forward(w, rows, n_head, keep=keep)  # [M, V]
    (B, T), (M, V) = rows.at.shape, logits.shape
    dt = logits.dtype  # float32 in training; float64 in the gradient check
    hd, n_kv = w["embed"].shape[1] // n_head, keep["n_kv"]
    nq, nk = n_head * hd, n_kv * hd  # q's columns, and k's (as v's)
    n = float(real.sum()) if n is None else float(n)
    counts = np.bincount(rows.at[real] * V + targets[real], minlength=M * V).reshape(M, V).astype(dt)  # [M, V]
    per_row = counts @ np.ones(V, dt)  # [M]: the targets each prefix has
    z = logits - logits.max(-1, keepdims=True)
    e = np.exp(z)
    s = e @ np.ones(V, dt)  # [M]: the row sums, as a product
    loss = float(-((counts * z).sum() - per_row @ np.log(s)) / n)

    def grad(x, dy):  # the gradient of a weight that takes x [M, n_in] to dy's [M, n_out]
        return (dy.T @ x).T

    g = {}
    dlogits = e * (per_row / (n * s))[:, None] - counts * (1.0 / n)  # [M, V]: (softmax minus the targets) over n
    g["head"] = grad(keep["hf"], dlogits)
    dx, g["norm_f"] = rms_back(dlogits @ w["head"].T, keep["x_out"], w["norm_f"], keep["rf"])  # [M, d]
    # [M, nq + nk] complex: RoPE turned back, times the scores' 1/sqrt(hd), for the gradients of q and k at once
    back = np.conj(keep["turns"]) * (1.0 / math.sqrt(hd))
    for i in reversed(range(n_layers(w))):
        c = keep["layers"][i]
        # feed-forward
        g[f"{i}.wd"] = grad(c["m"], dx)
        dm = dx @ w[f"{i}.wd"].T  # [M, f]
        gate, sg, up, h2 = c["gate"], c["sg"], c["up"], c["h2"]
        dup = dm * gate * sg  # m = silu(gate) up, silu(gate) = gate sg, silu' = sg (1 + gate (1 - sg))
        dgate = dm * up * sg * (1.0 + gate * (1.0 - sg))
        g[f"{i}.wg"], g[f"{i}.wu"] = grad(h2, dgate), grad(h2, dup)
        dh2 = dgate @ w[f"{i}.wg"].T + dup @ w[f"{i}.wu"].T
        dxn, g[f"{i}.norm2"] = rms_back(dh2, c["x_mid"], w[f"{i}.norm2"], c["r2"])
        dx = dx + dxn
        # attention, in the sentences' layout: a prefix's gradient at one place where it ends, zero elsewhere
        p, v = c["p"], c["v"]
        g[f"{i}.wo"] = grad(c["heads"], dx)
        do = np.zeros((B * T, nq), dt)
        do[rows.first] = dx @ w[f"{i}.wo"].T
        do = split_heads(do.reshape(B, T, nq), n_head)  # [B, H, T, hd]
        dp = do @ np.swapaxes(v, -1, -2)
        ds = p * (dp - ((dp * p) @ np.ones(T, dt))[..., None])  # a row sum as a product; 1/sqrt(hd) is in back
        dqkv = np.empty((B, T, nq + 2 * nk), dt)  # d q | d k | d v; each head written straight into its columns
        np.matmul(ds, c["kr"], out=split_heads(dqkv[..., :nq], n_head))
        for j, (a, b) in enumerate(((np.swapaxes(ds, -1, -2), c["qr"]), (np.swapaxes(p, -1, -2), do))):
            cols = split_heads(dqkv[..., nq + j * nk:nq + (j + 1) * nk], n_kv)  # [B, n_kv, T, hd]
            if n_kv == n_head:
                np.matmul(a, b, out=cols)
            else:  # a repeated K/V head: the sum over its group's query heads
                cols[...] = sum_groups(a @ b, n_kv)
        dqkv = rows.sum_copies(dqkv.reshape(B * T, nq + 2 * nk))  # [M, ...]: keys and values are read from many places
        dqk, dv = turn_pairs(dqkv[:, :nq + nk], back), dqkv[:, nq + nk:]  # RoPE turned back
        h = c["h"]
        gqk = grad(h, dqk)
        g[f"{i}.wq"], g[f"{i}.wk"], g[f"{i}.wv"] = gqk[:, :nq], gqk[:, nq:], grad(h, dv)
        wqk = np.concatenate([w[f"{i}.wq"], w[f"{i}.wk"]], 1)
        dxn, g[f"{i}.norm1"] = rms_back(dqk @ wqk.T + dv @ w[f"{i}.wv"].T, c["x_in"], w[f"{i}.norm1"], c["r1"])
        dx = dx + dxn
    seen = np.zeros((M, V), dt)  # [M, V]: which token each row embeds
    seen[np.arange(M), rows.tokens] = 1.0
    g["embed"] = seen.T @ dx
    return loss, g
