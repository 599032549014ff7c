"""The Llama forward pass, written once for every model in the tour.

Each block is pre-norm: x = x + attention(rms_norm(x)), then x = x + swiglu(rms_norm(x)). Attention is
causal, with RoPE on q and k; a last RMSNorm and the LM head turn x into logits. Two models run through
this code: the random-weight stack of the residual lesson (random_llama.py, float64) and the trained
tiny Llama (tiny.py, float32, which adds the backward pass). Arrays keep the weights' dtype.

The weights are one flat dict:
    embed [n_vocab, d_model]    norm_f [d_model]    head [d_model, n_vocab]
    for each layer i:  i.norm1 [d_model]  i.wq i.wk i.wv i.wo [d_model, d_model]          (attention)
                       i.norm2 [d_model]  i.wg i.wu [d_model, d_ff]  i.wd [d_ff, d_model]  (SwiGLU FFN)
"""

import numpy as np

from .ops import attention, merge_heads, rms_norm, silu, split_heads
from .positions import rope_tables, rotate_pairs


def n_layers(w) -> int:
    return sum(name.endswith(".wq") for name in w)


def dense(x, m):  # [..., n_in], [n_in, n_out] -> [..., n_out]
    """x @ m as one 2-D matrix product: numpy runs a 3-D one as a loop of small products, several times slower."""
    return (x.reshape(-1, x.shape[-1]) @ m).reshape(*x.shape[:-1], m.shape[1])


def forward(w, ids, n_head, *, keep=None, head_mask=None, residual=True):  # ids [B, T] -> logits [B, T, n_vocab]
    """Logits for every position.

    keep, a dict, receives what the backward pass and the views read: the stream x after the embedding
    and after each layer, each layer's attention weights and intermediate arrays.
    head_mask, [n_layer, n_head] of 0/1, silences heads: a 0 sets that head's output to zero.
    residual=False replaces x by each sub-block's output instead of adding to it (the residual lesson).
    """
    B, T = ids.shape
    d = w["embed"].shape[1]
    dtype = w["embed"].dtype
    cos, sin = rope_tables(np.arange(T), d // n_head, dtype=dtype)  # [T, head_dim // 2]
    cos2, sin2 = np.tile(cos, 2 * n_head), np.tile(sin, 2 * n_head)  # [T, d_model]: q then k, head by head
    x = w["embed"][ids]  # [B, T, d_model]
    layers, attn, stream = [], [], [x]
    for i in range(n_layers(w)):
        x_in = x
        h = rms_norm(x, w[f"{i}.norm1"])
        qkv = dense(h, np.concatenate([w[f"{i}.wq"], w[f"{i}.wk"], w[f"{i}.wv"]], 1))  # [B, T, 3 d_model]
        qk = rotate_pairs(qkv[..., : 2 * d], cos2, sin2)  # RoPE on q and k at once, still one row per token
        q, k, v = (split_heads(qkv[..., j * d:(j + 1) * d], n_head) for j in range(3))  # [B, n_head, T, head_dim]
        qr, kr = split_heads(qk[..., :d], n_head), split_heads(qk[..., d:], n_head)
        o, p = attention(qr, kr, v, causal=True)  # [B, n_head, T, head_dim], [B, n_head, T, T]
        if head_mask is not None:
            o = o * head_mask[i][:, None, None].astype(dtype)
        heads = merge_heads(o)  # [B, T, d_model]
        out = dense(heads, w[f"{i}.wo"])
        x = x + out if residual else out
        x_mid = x
        h2 = rms_norm(x, w[f"{i}.norm2"])
        f = w[f"{i}.wg"].shape[1]
        gu = dense(h2, np.concatenate([w[f"{i}.wg"], w[f"{i}.wu"]], 1))  # [B, T, 2 d_ff]
        gate, up = gu[..., :f], gu[..., f:]
        m = silu(gate) * up
        out = dense(m, w[f"{i}.wd"])
        x = x + out if residual else out
        if keep is not None:
            layers.append(dict(x_in=x_in, h=h, q=q, k=k, v=v, qr=qr, kr=kr, p=p, heads=heads,
                               x_mid=x_mid, h2=h2, gate=gate, up=up, m=m))
        attn.append(p)
        stream.append(x)
    hf = rms_norm(x, w["norm_f"])
    logits = dense(hf, w["head"])  # [B, T, n_vocab]
    if keep is not None:
        keep.update(layers=layers, x_out=x, hf=hf, attn=attn, residual=stream, cos=cos, sin=sin, ids=ids)
    return logits
