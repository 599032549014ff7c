"""The Llama forward pass as the lessons draw it: one plain numpy
function per operation, each line short enough for the code window
at 80 columns.

Every model whose numbers a lesson shows runs through this code: the
residual lesson's random stack (random_llama.py, float64), the RMSNorm
lesson's deep stack (norms.py), the trained tiny Llama (tiny.py,
float32) and a real Llama read from a GGUF file (real_llama.py,
float32, with its own RoPE base and eps, and a KV cache for
generation). Training runs the same sums faster (training_pass.py),
and tests/test_llama.py holds the two equal. Arrays keep the weights'
dtype.

Shapes: T positions, d = d_model, H query heads and K key/value heads
of hd = d // H numbers each, f = d_ff, V = n_vocab; "..." is any
leading axes (a batch of sentences). K = H is multi-head attention;
fewer K/V heads is grouped-query attention (GQA). The weights are one
flat dict:
    embed [V, d]   norm_f [d]   head [d, V]
    layer i:  i.norm1 [d]   i.wq [d, H hd]   i.wk, i.wv [d, K hd]
              i.wo [H hd, d]
              i.norm2 [d]   i.wg, i.wu [d, f]   i.wd [f, d]
"""

import numpy as np

from .ops import attention, merge_heads, rms_norm, split_heads, swiglu
from .positions import rope_tables, rotate_pairs


def rope(x, base=10000.0, start=0, factors=None):  # [..., T, hd]
    """Turn each pair (2i, 2i+1) at pos by pos·θ_i / factors[i]."""
    pos = np.arange(start, start + x.shape[-2])  # [T]
    cos, sin = rope_tables(pos, x.shape[-1], base, x.dtype, factors)
    return rotate_pairs(x, cos, sin)  # cos, sin: [T, hd/2]


def grouped_attention(x, wq, wk, wv, wo, n_head, n_kv_head,
                      base=10000.0, cache=None, factors=None):
    """Causal self-attention with RoPE on q and k, [..., T, d] ->
    [..., T, d], and its weights. Query head h reads K/V head
    h // group: a group of n_head // n_kv_head query heads shares
    each K/V head. cache, a dict, holds the k and v of the positions
    before these T and takes theirs on: S positions in all."""
    q = split_heads(x @ wq, n_head)     # [..., H, T, hd]
    k = split_heads(x @ wk, n_kv_head)  # [..., K, T, hd]
    v = split_heads(x @ wv, n_kv_head)  # [..., K, T, hd]
    start = cache["k"].shape[-2] if cache else 0
    q = rope(q, base, start, factors)
    k = rope(k, base, start, factors)
    if cache:  # the earlier positions' k and v come first
        k = np.concatenate([cache["k"], k], -2)  # [..., K, S, hd]
        v = np.concatenate([cache["v"], v], -2)
    if cache is not None:
        cache.update(k=k, v=v)
    group = n_head // n_kv_head
    k = np.repeat(k, group, axis=-3)  # [..., H, S, hd]: K/V head j
    v = np.repeat(v, group, axis=-3)  # once for each head of group j
    out, weights = attention(q, k, v, causal=True)  # [..., H, T, S]
    return merge_heads(out) @ wo, weights           # [..., T, d]


def block(x, w, i, n_head, n_kv_head, residual=True, *,
          base=10000.0, eps=1e-5, cache=None, factors=None):
    """Layer i, pre-norm, [..., T, d] -> [..., T, d]: each sub-block
    reads a normalised copy of x and adds its output to x.
    residual=False replaces x with each output instead (the
    residual lesson's experiment). cache[i]: layer i's k and v."""
    h = rms_norm(x, w[f"{i}.norm1"], eps)
    a, weights = grouped_attention(
        h, w[f"{i}.wq"], w[f"{i}.wk"], w[f"{i}.wv"], w[f"{i}.wo"],
        n_head, n_kv_head, base,
        None if cache is None else cache.setdefault(i, {}), factors)
    x = x + a if residual else a
    h = rms_norm(x, w[f"{i}.norm2"], eps)
    f = swiglu(h, w[f"{i}.wg"], w[f"{i}.wu"], w[f"{i}.wd"])
    x = x + f if residual else f
    return x, weights


def forward(w, ids, n_head, n_kv_head=None, *, keep=None,
            residual=True, base=10000.0, eps=1e-5, cache=None,
            factors=None):
    """The next-token logits at every position. keep, a dict,
    receives x after the embedding and after each layer
    (residual), each layer's attention weights (attn) and x after
    the last layer (x_out). base, factors: RoPE's; eps: RMSNorm's.
    cache, a dict, keeps each layer's k and v: given it again with
    the next ids, forward goes on where it stopped.
    Shapes: T positions, d = d_model, H query heads and K K/V heads
    of hd numbers each, f = d_ff, V = n_vocab, "..." a batch."""
    x = w["embed"][ids]  # [..., T, d]
    stream, maps = [x], []
    for i in range(n_layers(w)):
        x, weights = block(x, w, i, n_head, n_kv_head or n_head,
                           residual, base=base, eps=eps,
                           cache=cache, factors=factors)
        stream.append(x)
        maps.append(weights)
    if keep is not None:
        keep.update(residual=stream, attn=maps, x_out=x)
    return rms_norm(x, w["norm_f"], eps) @ w["head"]  # [..., T, V]


def n_layers(w) -> int:
    return sum(name.endswith(".wq") for name in w)


def silence_heads(w, head_mask, n_head):  # head_mask [n_layer, H]
    """The weights with every head that head_mask marks 0 silenced:
    its rows of W_o set to zero, so what it computes never reaches
    x, as if its output were zero."""
    out = dict(w)
    for i, row in enumerate(np.asarray(head_mask)):
        wo = w[f"{i}.wo"]
        keep = np.repeat(row, wo.shape[0] // n_head)[:, None]
        out[f"{i}.wo"] = wo * keep.astype(wo.dtype)
    return out


# what the code key shows of this module, read top down
CODE = (forward, block, grouped_attention, rope)
