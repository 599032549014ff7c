"""Positions: the sinusoidal table added to x, and rotary embeddings that turn q and k."""

import numpy as np


def frequencies(d, base=10000.0):  # -> [d // 2]
    """θ_i = base^(-2i/d) for each dim pair (2i, 2i+1), in radians per position."""
    return base ** (-np.arange(0, d, 2) / d)


def wavelengths(d, base=10000.0):  # -> [d // 2]
    """Positions it takes dim pair i to turn a full circle: 2π·base^(2i/d)."""
    return 2 * np.pi / frequencies(d, base)


def sinusoidal_positions(n_seq, d, base=10000.0):  # -> [n_seq, d]
    """Even dim 2i holds sin(pos·θ_i), odd dim 2i+1 holds cos(pos·θ_i)."""
    angles = np.arange(n_seq)[:, None] * frequencies(d, base)[None, :]  # [n_seq, d // 2]
    pe = np.empty((n_seq, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)
    return pe


def rope_tables(positions, d, base=10000.0, dtype=float, factors=None):  # [n_seq] -> cos, sin [n_seq, d // 2]
    """cos and sin of the angle pos·θ_i for every position and dim pair, in the given dtype. factors [d // 2],
    if given, divide each θ_i: Llama 3.1's RoPE scaling slows the slow pairs down (llama.cpp's rope_freqs)."""
    theta = frequencies(d, base) if factors is None else frequencies(d, base) / np.asarray(factors, float)
    angles = np.asarray(positions, dtype=float)[:, None] * theta[None, :]
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


def rotate_pairs(x, cos, sin):  # [..., n_seq, d], [n_seq, d // 2] x2 -> [..., n_seq, d]
    """Turn each pair (2i, 2i+1) of every row by its angle; with -sin it turns back."""
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty(np.shape(x), np.result_type(x, cos))
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def apply_rope(x, positions, base=10000.0):  # [..., n_seq, d], [n_seq] -> [..., n_seq, d]
    """Rotate each pair (2i, 2i+1) of every row by the angle pos·θ_i."""
    return rotate_pairs(x, *rope_tables(positions, np.shape(x)[-1], base))


def rotate_half(x):  # [..., d] -> [..., d]
    """Hugging Face's helper: the halves (x1, x2) become (-x2, x1), so dim i pairs with dim i + d/2."""
    half = np.shape(x)[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rope_halves(x, positions, base=10000.0):  # [..., n_seq, d], [n_seq] -> [..., n_seq, d]
    """RoPE as Hugging Face's Llama writes it: pair (i, i + d/2) turned by pos·θ_i, x·cos + rotate_half(x)·sin."""
    cos, sin = rope_tables(positions, np.shape(x)[-1], base)  # [n_seq, d // 2] each
    cos, sin = np.concatenate([cos, cos], -1), np.concatenate([sin, sin], -1)  # [n_seq, d]
    return x * cos + rotate_half(x) * sin


def halves_to_pairs(d):  # -> [d]
    """The order of dims that takes the halves layout to the pairs one: 0, d/2, 1, d/2 + 1, ... Reordering
    W_q's and W_k's rows this way, head by head, is what llama.cpp's converter does for a GGUF file."""
    return np.stack([np.arange(d // 2), np.arange(d // 2) + d // 2], axis=-1).reshape(-1)
