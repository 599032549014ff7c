"""The random-weight Llama of the residual lesson: small enough to print every layer.

The weights are random (seeded), so the next-token probabilities carry no knowledge; what the pass
shows is the shape of the computation: x keeps its shape through every layer, and each sub-block
adds to x instead of replacing it. The pass itself is llama.forward, the one the trained model runs.
"""

import numpy as np

from .errors import check_bytes
from .llama import forward
from .ops import softmax
from .records import record
from .seeds import DEMO_SEED

VOCAB = ("<bos>", "the", "a", "cat", "dog", "sat", "ran", "on", "under", "mat",
         "rug", "and", "big", "small", "sees", ".")
PROMPT = ("<bos>", "the", "cat", "sat", "on")


@record
class RandomLlamaConfig:
    d_model: int = 16  # width of x
    n_layer: int = 4
    n_head: int = 2    # head_dim 8
    d_ff: int = 48     # swiglu_hidden(16, multiple_of=16)
    n_vocab: int = len(VOCAB)


@record
class ForwardTrace:
    xs: list[np.ndarray]  # x after the embedding and after each layer, each [n_seq, d_model]
    probs: np.ndarray     # [n_vocab] next-token probabilities at the last position


BRANCH_GAIN = 1.0 / np.sqrt(8)  # scales each residual branch's output, as 1/sqrt(2 n_layer) would for 4 layers


def init_weights(cfg: RandomLlamaConfig, seed=DEMO_SEED):
    """Seeded float64 weights: matrices N(0, 1/fan_in), the residual branches' outputs scaled by BRANCH_GAIN.

    The embedding, the output head and each layer draw from their own stream of one seed, and the
    gain does not depend on depth, so a deeper stack is the same stack with more layers on top."""
    d, f = cfg.d_model, cfg.d_ff
    embed_rng, out_rng, *layer_rngs = np.random.SeedSequence(seed).spawn(2 + cfg.n_layer)

    def mat(rng, n_in, n_out, gain=1.0):  # N(0, 1) / sqrt(n_in) * gain, in place (the deep stack: 1.6 M numbers)
        m = rng.standard_normal((n_in, n_out))
        m /= np.sqrt(n_in)
        if gain != 1.0:  # x * 1.0 is x: one pass fewer over most matrices
            m *= gain
        return m

    def layer(i):  # layer i's weights, from its own stream
        rng = np.random.default_rng(layer_rngs[i])
        return {**{f"{i}.{name}": mat(rng, *shape, gain) for name, shape, gain in (
            ("wq", (d, d), 1.0), ("wk", (d, d), 1.0), ("wv", (d, d), 1.0), ("wo", (d, d), BRANCH_GAIN),
            ("wg", (d, f), 1.0), ("wu", (d, f), 1.0), ("wd", (f, d), BRANCH_GAIN))},
                f"{i}.norm1": np.ones(d), f"{i}.norm2": np.ones(d)}

    w = {"embed": np.random.default_rng(embed_rng).standard_normal((cfg.n_vocab, d)), "norm_f": np.ones(d),
         "head": mat(np.random.default_rng(out_rng), d, cfg.n_vocab)}
    layers = _in_two_threads(layer, cfg.n_layer) if cfg.n_layer >= 8 else [layer(i) for i in range(cfg.n_layer)]
    for part in layers:
        w.update(part)
    return w


def _in_two_threads(make, n):  # -> [make(0), ..., make(n - 1)]
    """make(i) for every i, the odd i in a second thread. numpy's generators let go of the GIL while they fill
    an array, and each layer draws from its own stream, so the deep stack of the RMSNorm lesson (1.6 M numbers,
    about 40 ms here) is drawn in about half the time, with the same numbers. Anything the thread did not make
    (it could not start, or it raised) is made here after it."""
    import threading

    out = [None] * n

    def odd():
        try:
            for i in range(1, n, 2):
                out[i] = make(i)
        except Exception:  # made again below, in the caller's thread: its error reaches the caller, where
            pass           # an error in this thread would only print a traceback

    helper = threading.Thread(target=odd, daemon=True)
    try:
        helper.start()
    except RuntimeError:  # no thread to be had: all in this one
        helper = None
    try:
        for i in range(0, n, 2):
            out[i] = make(i)
    finally:  # an error here leaves no thread drawing behind it
        if helper is not None:
            helper.join()
    return [part if part is not None else make(i) for i, part in enumerate(out)]


def trace(tokens, cfg: RandomLlamaConfig = RandomLlamaConfig(), seed=DEMO_SEED, residual=True) -> ForwardTrace:
    """Run the prompt through every layer; keep x after each, and the last position's next-token probabilities."""
    check_bytes(2 * cfg.n_layer * (4 * cfg.d_model**2 + 3 * cfg.d_model * cfg.d_ff) * 8,
                f"a {cfg.n_layer}-layer pass", f"{cfg.n_layer} 层的前向计算")
    keep = {}
    logits = forward(init_weights(cfg, seed), np.array([[VOCAB.index(t) for t in tokens]]), cfg.n_head,
                     keep=keep, residual=residual)  # [1, n_seq, n_vocab]
    return ForwardTrace([x[0] for x in keep["residual"]], softmax(logits[0, -1]))
