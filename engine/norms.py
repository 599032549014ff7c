"""RMSNorm and where it sits: the formula, its scale invariance, and three placements in a deep random stack.

The stack is the residual lesson's random Llama (random_llama.init_weights), made 64 wide. Each layer has two
sub-blocks, causal attention with RoPE and a SwiGLU FFN, and the placements differ only in where rms_norm goes:
    pre-norm  (Llama):                   x = x + f(rms_norm(x))
    post-norm (the 2017 Transformer):    x = rms_norm(x + f(x))     (it used LayerNorm; here RMSNorm, like for like)
    none:                                x = x + f(x)
Pre-norm is what llama.forward runs, up to rounding; tests/test_norms.py checks that the two agree.
"""

import functools

import numpy as np

from . import random_llama
from .errors import check_bytes
from .llama import grouped_attention, n_layers
from .ops import rms_norm, swiglu
from .records import replace
from .seeds import DEMO_SEED

EPS = 1e-5  # Llama 2's and Llama 3's rms_norm_eps
MAX_LAYERS = 32
PLACEMENTS = ("pre", "post", "none")
STACK = replace(random_llama.RandomLlamaConfig(), d_model=64, n_head=4, d_ff=176)  # 176 = swiglu_hidden(64, 16)


def rms(x):  # [..., d] -> [...]
    """The root mean square of each vector: sqrt(mean(x^2)), what RMSNorm divides by (before eps)."""
    return np.sqrt(np.mean(x * x, axis=-1))


def norm_demo(seed=DEMO_SEED, d=5):  # -> x [d], g [d]
    """A seeded vector x of d numbers, drawn N(1, 2^2) so that its mean is clearly not 0, and a gain g drawn
    N(1, 0.2^2), near 1 as a trained g often is."""
    rng = np.random.default_rng(seed)
    return rng.normal(1.0, 2.0, d), rng.normal(1.0, 0.2, d)


# --- the deep stack ---------------------------------------------------------------------------------------------

def attention_block(h, w, i, n_head):  # [..., n_seq, d_model] -> [..., n_seq, d_model]
    """Layer i's causal multi-head attention with RoPE on q and k: llama.grouped_attention."""
    return grouped_attention(h, w[f"{i}.wq"], w[f"{i}.wk"], w[f"{i}.wv"], w[f"{i}.wo"], n_head, n_head)[0]


def ffn_block(h, w, i):  # [..., n_seq, d_model] -> [..., n_seq, d_model]
    """Layer i's SwiGLU FFN."""
    return swiglu(h, w[f"{i}.wg"], w[f"{i}.wu"], w[f"{i}.wd"])


def sub_block(x, f, g, placements):  # [n_place, n_seq, d_model] -> new x, f's input, f's output (each that shape)
    """One residual sub-block f with its RMSNorm (gain g), for stacks side by side: x[j] has its norm where
    placements[j] puts it."""
    pre, post = _where(placements, "pre"), _where(placements, "post")
    h = np.where(pre, rms_norm(x, g, EPS), x)  # pre-norm: f reads a normalised copy of x
    out = f(h)
    y = x + out
    return np.where(post, rms_norm(y, g, EPS), y), h, out  # post-norm: the sum is normalised


@functools.lru_cache(maxsize=16)
def _where(placements, placement):  # -> [n_place, 1, 1] bool, read-only
    mask = np.array([p == placement for p in placements])[:, None, None]
    mask.flags.writeable = False
    return mask


@functools.lru_cache(maxsize=2)
def _init(n_layer, seed):
    """random_llama's weights for the stack, made once per depth and seed; read-only, since they are shared."""
    w = random_llama.init_weights(replace(STACK, n_layer=n_layer), seed)
    for a in w.values():
        a.flags.writeable = False
    return w


def stack_weights(n_layer, gain, seed=DEMO_SEED):
    """The stack's weights with each sub-block's output matrix (W_o, W_down) scaled by `gain` instead of
    random_llama.BRANCH_GAIN: the size of what a sub-block adds when its input has rms 1."""
    check_bytes(n_layer * (4 * STACK.d_model**2 + 3 * STACK.d_model * STACK.d_ff) * 8 * 2,
                f"a {n_layer}-layer stack", f"{n_layer} 层的堆叠")
    w = dict(_init(n_layer, seed))
    for i in range(n_layer):
        for name in ("wo", "wd"):
            w[f"{i}.{name}"] = w[f"{i}.{name}"] * (gain / random_llama.BRANCH_GAIN)
    return w


def stack_embedding(w):  # -> [n_seq, d_model]
    """x entering the stack: the embeddings of the residual lesson's prompt, "<bos> the cat sat on"."""
    return w["embed"][[random_llama.VOCAB.index(t) for t in random_llama.PROMPT]]


def run_stack(x, w, n_head, placements=PLACEMENTS):  # [n_seq, d_model] -> {placement: (xs, inside)}
    """For each placement, x after the embedding and after each layer ([<= n_layer + 1] of [n_seq, d_model]), and
    what each layer's sub-blocks read and added ([<= n_layer] of dict). The placements run side by side, as one
    batch: the arrays are tiny, so three cost about what one does. Without norms x can overflow: that stack's
    lists stop before the first layer where it does, and it leaves the batch."""
    if isinstance(placements, str):  # ("pre",), not "pre": a string would be read letter by letter
        raise TypeError(f"placements is a tuple of placements, not {placements!r}")
    runs = {p: ([x], []) for p in placements}
    live, x = tuple(placements), np.stack([x] * len(placements))  # [n_live, n_seq, d_model]
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(n_layers(w)):
            x, attn_in, attn_out = sub_block(x, lambda h: attention_block(h, w, i, n_head), w[f"{i}.norm1"], live)
            x, ffn_in, ffn_out = sub_block(x, lambda h: ffn_block(h, w, i), w[f"{i}.norm2"], live)
            fine = np.all(np.isfinite(rms(x)), axis=-1)  # [n_live]; past float64's range a stack has no number
            for j in np.flatnonzero(fine):               # for this layer or any later one
                xs, inside = runs[live[j]]
                xs.append(x[j])
                inside.append(dict(attn_in=attn_in[j], attn_out=attn_out[j], ffn_in=ffn_in[j], ffn_out=ffn_out[j]))
            if not fine.all():
                live, x = tuple(p for p, ok in zip(live, fine) if ok), x[fine]
                if not live:
                    break
    return runs


# --- the parameters a norm costs --------------------------------------------------------------------------------

def bias_count(cfg):
    """The parameters Llama would add with a bias on every linear map (q, k, v, o, gate, up, down, the LM head)
    and a shift beta on every norm, as LayerNorm has. Llama has none of them."""
    q_width, kv_width = cfg.n_head * cfg.d_head, cfg.n_kv_head * cfg.d_head
    per_layer = q_width + 2 * kv_width + cfg.d_model + 2 * cfg.d_ff + cfg.d_model + 2 * cfg.d_model
    return cfg.n_layer * per_layer + cfg.d_model + cfg.n_vocab
