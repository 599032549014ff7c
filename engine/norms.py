"""RMSNorm and where it sits: the formula, its scale invariance, and three placements in a deep random stack.

The stack is the residual lesson's random Llama (random_llama.init_weights), made 64 wide. Each layer has two
sub-blocks, causal attention with RoPE and a SwiGLU FFN, and the placements differ only in where rms_norm goes:
    pre-norm  (Llama):                   x = x + f(rms_norm(x))
    post-norm (the 2017 Transformer):    x = rms_norm(x + f(x))     (it used LayerNorm; here RMSNorm, like for like)
    none:                                x = x + f(x)
Pre-norm is exactly what llama.forward runs; tests/test_norms.py checks that the two agree.
"""

import functools
from dataclasses import replace

import numpy as np

from . import random_llama
from .demos import DEMO_SEED
from .errors import check_bytes
from .llama import n_layers
from .ops import attention, merge_heads, rms_norm, split_heads, swiglu
from .positions import apply_rope

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

def attention_block(h, w, i, n_head):  # [n_seq, d_model] -> [n_seq, d_model]
    """Layer i's causal multi-head attention with RoPE on q and k, as llama.forward computes it."""
    q, k, v = (split_heads(h @ w[f"{i}.w{c}"], n_head) for c in "qkv")  # [n_head, n_seq, head_dim] each
    positions = np.arange(h.shape[0])
    out, _ = attention(apply_rope(q, positions), apply_rope(k, positions), v, causal=True)
    return merge_heads(out) @ w[f"{i}.wo"]


def ffn_block(h, w, i):  # [n_seq, d_model] -> [n_seq, d_model]
    """Layer i's SwiGLU FFN."""
    return swiglu(h, w[f"{i}.wg"], w[f"{i}.wu"], w[f"{i}.wd"])


def sub_block(x, f, g, placement):  # [n_seq, d_model] -> new x, f's input, f's output
    """One residual sub-block f with its RMSNorm (gain g) where `placement` puts it."""
    if placement == "pre":
        h = rms_norm(x, g, EPS)
        out = f(h)
        return x + out, h, out
    out = f(x)
    return (rms_norm(x + out, g, EPS) if placement == "post" else x + out), x, out


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


def run_stack(x, w, n_head, placement):  # [n_seq, d_model] -> [<= n_layer + 1] of x, [<= n_layer] of dict
    """x after the embedding and after each layer, and what each layer's sub-blocks read and added. Without
    norms x can overflow: the lists stop before the first layer where it does."""
    xs, inside = [x], []
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(n_layers(w)):
            x, attn_in, attn_out = sub_block(x, lambda h: attention_block(h, w, i, n_head), w[f"{i}.norm1"], placement)
            x, ffn_in, ffn_out = sub_block(x, lambda h: ffn_block(h, w, i), w[f"{i}.norm2"], placement)
            if not np.all(np.isfinite(rms(x))):  # past float64's range: this layer and every later one has no number
                break
            xs.append(x)
            inside.append(dict(attn_in=attn_in, attn_out=attn_out, ffn_in=ffn_in, ffn_out=ffn_out))
    return xs, inside


# --- the parameters a norm costs --------------------------------------------------------------------------------

def bias_count(cfg):
    """The parameters Llama would add with a bias on every linear map (q, k, v, o, gate, up, down, the LM head)
    and a shift beta on every norm, as LayerNorm has. Llama has none of them."""
    q_width, kv_width = cfg.n_head * cfg.d_head, cfg.n_kv_head * cfg.d_head
    per_layer = q_width + 2 * kv_width + cfg.d_model + 2 * cfg.d_ff + cfg.d_model + 2 * cfg.d_model
    return cfg.n_layer * per_layer + cfg.d_model + cfg.n_vocab
