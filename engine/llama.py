"""The Llama forward pass as the lessons draw it: one plain numpy function per operation.

Every model whose numbers a lesson shows runs through this code: the residual lesson's random
stack (random_llama.py, float64), the RMSNorm lesson's deep stack (norms.py) and the trained
tiny Llama (tiny.py, float32). Training runs the same sums faster (training_pass.py), and
tests/test_llama.py holds the two equal. Arrays keep the weights' dtype.

The weights are one flat dict. head_dim = d_model // n_head; n_kv_head = n_head is plain
multi-head attention, fewer K/V heads is grouped-query attention (GQA).
    embed [n_vocab, d_model]   norm_f [d_model]   head [d_model, n_vocab]
    layer i, attention:   i.norm1 [d_model]   i.wq [d_model, n_head * head_dim]
                          i.wk, i.wv [d_model, n_kv_head * head_dim]
                          i.wo [n_head * head_dim, d_model]
    layer i, SwiGLU FFN:  i.norm2 [d_model]   i.wg, i.wu [d_model, d_ff]   i.wd [d_ff, d_model]
"""

import numpy as np

from .ops import attention, merge_heads, rms_norm, split_heads, swiglu
from .positions import rope_tables, rotate_pairs


def rope(x, base=10000.0):  # [..., n_seq, head_dim] -> [..., n_seq, head_dim]
    """Turn each pair (2i, 2i+1) of the vector at position pos by the angle pos·θ_i."""
    positions = np.arange(x.shape[-2])                              # [n_seq]
    cos, sin = rope_tables(positions, x.shape[-1], base, x.dtype)  # [n_seq, head_dim // 2] each
    return rotate_pairs(x, cos, sin)


def grouped_attention(x, wq, wk, wv, wo, n_head, n_kv_head):  # [..., n_seq, d_model] -> same
    """Causal self-attention with RoPE on q and k. Query head h reads K/V head h // group: each
    K/V head serves a group of n_head // n_kv_head query heads. Returns the output and weights."""
    q = rope(split_heads(x @ wq, n_head))     # [..., n_head, n_seq, head_dim]
    k = rope(split_heads(x @ wk, n_kv_head))  # [..., n_kv_head, n_seq, head_dim]
    v = split_heads(x @ wv, n_kv_head)        # [..., n_kv_head, n_seq, head_dim]
    group = n_head // n_kv_head
    k = np.repeat(k, group, axis=-3)          # [..., n_head, n_seq, head_dim]: K/V head j once
    v = np.repeat(v, group, axis=-3)          # for each query head of its group
    out, weights = attention(q, k, v, causal=True)  # weights [..., n_head, n_seq, n_seq]
    return merge_heads(out) @ wo, weights           # [..., n_seq, d_model]


def block(x, w, i, n_head, n_kv_head, residual=True):  # [..., n_seq, d_model] -> same
    """Layer i, pre-norm: each sub-block reads a normalised copy of x and adds its output to x.
    residual=False replaces x with each output instead (the residual lesson's experiment)."""
    a, weights = grouped_attention(rms_norm(x, w[f"{i}.norm1"]), w[f"{i}.wq"], w[f"{i}.wk"],
                                   w[f"{i}.wv"], w[f"{i}.wo"], n_head, n_kv_head)
    x = x + a if residual else a
    f = swiglu(rms_norm(x, w[f"{i}.norm2"]), w[f"{i}.wg"], w[f"{i}.wu"], w[f"{i}.wd"])
    x = x + f if residual else f
    return x, weights


def forward(w, ids, n_head, n_kv_head=None, *, keep=None, residual=True):  # [..., n_seq] -> logits
    """The next-token logits at every position, [..., n_seq, n_vocab]. keep, a dict, receives x
    after the embedding and after each layer (residual), each layer's attention weights (attn)
    and x after the last layer (x_out)."""
    x = w["embed"][ids]  # [..., n_seq, d_model]
    stream, maps = [x], []
    for i in range(n_layers(w)):
        x, weights = block(x, w, i, n_head, n_kv_head or n_head, residual)
        stream.append(x)
        maps.append(weights)
    if keep is not None:
        keep.update(residual=stream, attn=maps, x_out=x)
    return rms_norm(x, w["norm_f"]) @ w["head"]  # [..., n_seq, n_vocab]


def n_layers(w) -> int:
    return sum(name.endswith(".wq") for name in w)


def silence_heads(w, head_mask, n_head):  # head_mask [n_layer, n_head] of 0/1 -> weights
    """The weights with every head that head_mask marks 0 silenced: its rows of W_o set to zero,
    so what it computes never reaches x, as if its output were zero."""
    out = dict(w)
    for i, row in enumerate(np.asarray(head_mask)):
        wo = w[f"{i}.wo"]
        out[f"{i}.wo"] = wo * np.repeat(row, wo.shape[0] // n_head)[:, None].astype(wo.dtype)
    return out


CODE = (forward, block, grouped_attention, rope)  # what the code key shows of this module, read top down
