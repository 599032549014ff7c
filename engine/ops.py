"""The operations of a Llama-style block, one plain function each."""

import math

import numpy as np


def softmax(x):  # [..., n] -> [..., n]
    """Softmax over the last axis; subtracts the row max, and a fully masked row gives zeros."""
    m = np.max(x, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)  # an all -inf row has no max to subtract
    e = np.exp(x - m)
    s = np.sum(e, axis=-1, keepdims=True)
    return e / np.where(s == 0.0, 1.0, s)


def log_softmax(z):  # [..., n] -> [..., n]
    """log softmax(z) over the last axis, with the row max subtracted first."""
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def entropy(p):  # [..., n] -> [...]
    """Shannon entropy of each row in nats, with 0·ln 0 taken as 0."""
    p = np.asarray(p, dtype=float)
    logp = np.log(np.where(p > 0.0, p, 1.0))
    return -np.sum(p * logp, axis=-1)


def causal_mask(n_q, n_k=None, dtype=float):  # -> [n_q, n_k]
    """0 where query i may see key j (j ≤ i, aligned at the end), -inf above the diagonal."""
    n_k = n_q if n_k is None else n_k
    return np.triu(np.full((n_q, n_k), -np.inf, dtype), k=n_k - n_q + 1)


def attention(q, k, v, *, scale=True, causal=False):  # [n_q, d], [n_k, d], [n_k, d_v] -> [n_q, d_v], [n_q, n_k]
    """Scaled dot-product attention; returns the output and the weights. Leading axes (batch, heads) broadcast."""
    scores = q @ np.swapaxes(k, -1, -2)  # [..., n_q, n_k]
    if scale:
        scores = scores / math.sqrt(q.shape[-1])  # a Python float keeps float32 arrays float32
    if causal:
        scores = scores + causal_mask(q.shape[-2], k.shape[-2], scores.dtype)
    weights = softmax(scores)
    return weights @ v, weights


def split_heads(x, n_head):  # [..., n_seq, d_model] -> [..., n_head, n_seq, head_dim]
    """Cut each vector into n_head equal slices, one per head."""
    *lead, n_seq, d_model = x.shape
    return np.swapaxes(x.reshape(*lead, n_seq, n_head, d_model // n_head), -3, -2)


def merge_heads(x):  # [..., n_head, n_seq, head_dim] -> [..., n_seq, n_head * head_dim]
    """Concatenate the heads' outputs back into one vector per token."""
    *lead, n_head, n_seq, head_dim = x.shape
    return np.swapaxes(x, -3, -2).reshape(*lead, n_seq, n_head * head_dim)


def rms_norm(x, w, eps=1e-5):  # [..., d], [d] -> [..., d]
    """RMSNorm: divide by the root mean square of each vector, then scale by w."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def silu(x):
    """SiLU (swish): x · sigmoid(x)."""
    return x / (1.0 + np.exp(-x))


def swiglu(x, w_gate, w_up, w_down):  # [n_seq, d], [d, d_ff], [d, d_ff], [d_ff, d] -> [n_seq, d]
    """The SwiGLU FFN: expand twice, let one branch gate the other, project back."""
    return (silu(x @ w_gate) * (x @ w_up)) @ w_down
