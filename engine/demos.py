"""The small numerical experiments the lessons show, each seeded so that a rerun gives the same digits.

DEMO_SEED is the documented default seed of every random demo; each demo takes `seed` for a fresh draw.
"""

import numpy as np

from .errors import check_bytes
from .ops import attention, entropy, silu, softmax, split_heads
from .positions import apply_rope, sinusoidal_positions
from .records import record
from .seeds import DEMO_SEED

SWEEP_DIMS = (8, 64, 512, 4096)


@record
class WeightStats:
    """What the lessons read off an attention weight matrix."""

    max_weight: float    # the largest single weight
    mean_entropy: float  # entropy of each row in nats, averaged over rows

    @classmethod
    def of(cls, weights, causal=False):  # [n_q, n_k]
        """Stats over the rows; with the causal mask, row 0 can only see itself and is left out."""
        rows = weights[1:] if causal and len(weights) > 1 else weights
        return cls(float(np.max(rows)), float(np.mean(entropy(rows))))


# --- scaled vs unscaled -------------------------------------------------------------------

@record
class AttentionDemo:
    q: np.ndarray                # [n_seq, d]
    k: np.ndarray                # [n_seq, d]
    scores: np.ndarray           # [n_seq, n_seq] q·k, before any scaling
    weights_raw: np.ndarray      # [n_seq, n_seq] softmax(q·k)
    weights_scaled: np.ndarray   # [n_seq, n_seq] softmax(q·k / √d)
    raw: WeightStats
    scaled: WeightStats


def attention_demo(d=8, seed=DEMO_SEED, causal=False, n_seq=3, d_model=8):
    """Three tokens projected to q, k, v of width d; the weights with and without ÷√d."""
    # x, the three projections and their scaled copy, q, k, v, and the temporaries of two attention passes
    check_bytes((2 * 3 * d_model * d + 4 * 3 * n_seq * d) * 8, f"the attention demo at d={d}", f"d={d} 的注意力演示")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_seq, d_model))
    w_q, w_k, w_v = rng.standard_normal((3, d_model, d)) / np.sqrt(d_model)  # q, k entries: unit variance at any d
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # [n_seq, d] each
    _, raw = attention(q, k, v, scale=False, causal=causal)
    _, scaled = attention(q, k, v, scale=True, causal=causal)
    return AttentionDemo(q, k, q @ k.T, raw, scaled, WeightStats.of(raw, causal), WeightStats.of(scaled, causal))


@record
class SweepRow:
    d: int
    raw: WeightStats     # each field averaged over the draws
    scaled: WeightStats


def d_sweep(dims=SWEEP_DIMS, draws=1000, seed=DEMO_SEED, n_seq=3):
    """Max weight and entropy with and without ÷√d, averaged over `draws` draws of unit-variance q and k.

    One draw cannot carry the claim, since a single matrix can come out sharp or flat by chance;
    the averages show the unscaled weights collapse toward one-hot as d grows and the scaled ones hold.
    """
    scores = np.empty((2, len(dims), draws, n_seq, n_seq))  # unscaled, then scaled: q.k of every draw at every d
    for i, d in enumerate(dims):
        scores[0, i] = qk_scores(np.random.default_rng([seed, d]), draws, n_seq, d)
        scores[1, i] = scores[0, i] / np.sqrt(d)
    w = softmax(scores)  # [2, n_dims, draws, n_seq, n_seq]
    max_w = w.max(axis=(3, 4)).mean(axis=2)  # [2, n_dims]: each draw's largest weight, averaged over draws
    ent = entropy(w).mean(axis=(2, 3))  # [2, n_dims]: each row's entropy, averaged over rows and draws
    return [SweepRow(d, WeightStats(float(max_w[0, i]), float(ent[0, i])),
                     WeightStats(float(max_w[1, i]), float(ent[1, i]))) for i, d in enumerate(dims)]


def qk_scores(rng, draws, n_seq, d):  # -> [draws, n_seq, n_seq]: q @ k.T for q, k [n_seq, d] of unit normals
    """The scores q @ k.T of `draws` draws, drawn from their exact law with n_seq * (3 n_seq + 1) / 2
    numbers a draw instead of 2 n_seq d, so d = 4096 costs what d = 8 does.

    Only the n_seq directions the keys span matter. Write k.T = U r, U [d, n_seq] orthonormal and
    r [n_seq, n_seq] upper triangular (a QR factorisation). Then q @ k.T = (q @ U) @ r, where:
    - q @ U is n_seq x n_seq unit normals, since a unit-normal q looks the same from every direction;
    - r has independent entries: unit normals above the diagonal and, on it, the length of what is
      left of each key after removing its part along the earlier ones, sqrt(chi-square(d - i))
      (Bartlett's decomposition). Summed over many draws, the plain
      `rng.standard_normal((n_seq, d)) @ rng.standard_normal((n_seq, d)).T` gives the same averages.
    """
    g = rng.standard_normal((draws, n_seq, n_seq))  # q @ U
    r = np.zeros((draws, n_seq, n_seq))
    upper = np.triu_indices(n_seq, 1)
    r[:, upper[0], upper[1]] = rng.standard_normal((draws, len(upper[0])))
    diag = np.arange(n_seq)
    r[:, diag, diag] = np.sqrt(rng.chisquare(d - diag, (draws, n_seq)))
    return g @ r


# --- multi-head -------------------------------------------------------------------------

@record
class HeadStats:
    stats: WeightStats
    sharpest: tuple[int, int]  # (i, j): token i puts its largest weight on token j


@record
class MultiHeadDemo:
    weights: np.ndarray      # [n_head, n_seq, n_seq]
    heads: list[HeadStats]
    entropy_spread: float    # max / min of the heads' mean entropies
    layer_params: int        # W_q, W_k, W_v, W_o: 4·d_model², whatever n_head is


def multi_head_demo(heads=4, seed=DEMO_SEED, n_seq=4, d_model=32):
    """One set of q, k cut into `heads` heads: how sharp each head's attention comes out."""
    check_bytes((2 * 4 * d_model * d_model + 4 * n_seq * d_model + heads * n_seq * n_seq) * 8,
                "the multi-head demo", "多头演示")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_seq, d_model))
    w_q, w_k, w_v, w_o = rng.standard_normal((4, d_model, d_model)) / np.sqrt(d_model)
    q, k = split_heads(x @ w_q, heads), split_heads(x @ w_k, heads)  # [n_head, n_seq, head_dim]
    v = split_heads(x @ w_v, heads)
    weights = np.stack([attention(q[h], k[h], v[h])[1] for h in range(heads)])  # [n_head, n_seq, n_seq]
    per_head = []
    for w in weights:
        i = int(np.argmax(np.max(w, axis=1)))
        per_head.append(HeadStats(WeightStats.of(w), (i, int(np.argmax(w[i])))))
    ents = [h.stats.mean_entropy for h in per_head]
    return MultiHeadDemo(weights, per_head, max(ents) / min(ents), w_q.size + w_k.size + w_v.size + w_o.size)


# --- positions --------------------------------------------------------------------------

PERM_TOKENS = ("Alice", "owes", "Bob")
PERM_ORDER = (2, 1, 0)  # "Bob owes Alice": the same words, subject and object swapped


@record
class PermutationDemo:
    tokens: tuple[str, ...]
    shuffled: tuple[str, ...]
    weights: np.ndarray           # [n_seq, n_seq] A for the original order
    weights_shuffled: np.ndarray  # [n_seq, n_seq] A' for the shuffled order
    permuted: np.ndarray          # [n_seq, n_seq] P·A·Pᵀ, the original weights with rows and columns moved
    max_diff: float               # max |A' − P·A·Pᵀ|: 0 means the model cannot tell the orders apart


def permutation_demo(seed=DEMO_SEED, d=8, positions=False):
    """Attention over "Alice owes Bob" and "Bob owes Alice", with or without sinusoidal positions added."""
    check_bytes((2 * 2 * d * d + 8 * 3 * d) * 8, f"the permutation demo at d={d}", f"d={d} 的打乱演示")
    rng = np.random.default_rng(seed)
    embed = rng.standard_normal((len(PERM_TOKENS), d))  # one vector per word
    w_q, w_k = rng.standard_normal((2, d, d)) / np.sqrt(d)
    order = np.array(PERM_ORDER)
    x, x_shuffled = embed, embed[order]  # [n_seq, d]
    if positions:  # a position belongs to the slot, not to the word
        pe = sinusoidal_positions(len(order), d)
        x, x_shuffled = x + pe, x_shuffled + pe
    a = attention(x @ w_q, x @ w_k, x)[1]
    a_shuffled = attention(x_shuffled @ w_q, x_shuffled @ w_k, x_shuffled)[1]
    p = np.eye(len(order))[order]  # P[i, order[i]] = 1
    permuted = p @ a @ p.T
    shuffled = tuple(PERM_TOKENS[i] for i in order)
    return PermutationDemo(PERM_TOKENS, shuffled, a, a_shuffled, permuted, float(np.max(np.abs(a_shuffled - permuted))))


ROPE_PAIRS = ((1, 3), (5, 7), (10, 12))


@record
class RopeRow:
    m: int
    n: int
    rope_score: float      # rope(q, m) · rope(k, n)
    additive_score: float  # (q + pe[m]) · (k + pe[n])


def rope_demo(d=8, base=10000.0, seed=DEMO_SEED, pairs=ROPE_PAIRS):
    """One q and one k placed at several (m, n) with the same gap: RoPE gives one score, adding positions does not."""
    n_pos = max(max(p) for p in pairs) + 1
    check_bytes((3 * n_pos * d + 8 * d) * 8, f"the RoPE demo at d={d}", f"d={d} 的 RoPE 演示")
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, d))
    pe = sinusoidal_positions(n_pos, d, base)
    rows = []
    for m, n in pairs:
        rq, rk = apply_rope(q[None], [m], base)[0], apply_rope(k[None], [n], base)[0]
        rows.append(RopeRow(m, n, float(rq @ rk), float((q + pe[m]) @ (k + pe[n]))))
    return rows


# --- "The cat sat on" -------------------------------------------------------------------

CAT_TOKENS = ("The", "cat", "sat", "on")
CAT_SCORES = (1.2, 4.1, 3.0, 0.4)          # the reference's q·k scores of "sat" against each token
CAT_ILLUSTRATION = (0.05, 0.60, 0.31, 0.04)  # the weights the reference prints: illustrative, not a softmax
CAT_QUERY = 2                              # "sat"


def cat_demo(causal=False):  # -> [n_seq] weights of "sat"
    """Softmax of "sat"'s scores; with the causal mask "sat" cannot see the later "on"."""
    scores = np.array(CAT_SCORES)
    if causal:
        scores = scores + np.where(np.arange(len(scores)) > CAT_QUERY, -np.inf, 0.0)
    return softmax(scores)


# --- SwiGLU -----------------------------------------------------------------------------

@record
class SwigluDemo:
    units: np.ndarray   # [d_ff, 4] per hidden unit: x·W_gate, silu of it, x·W_up, the gated product
    w_down: np.ndarray  # [d_ff, d] the rows the units add back to x
    out: np.ndarray     # [d] what the FFN adds to x: the products times W_down


def swiglu_demo(seed=DEMO_SEED, d=8, d_ff=8):
    """One token's hidden units: x·W_gate, silu of it, x·W_up, the gated product, and W_down's rows."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(d)
    w_gate, w_up = rng.standard_normal((2, d, d_ff)) / np.sqrt(d)
    w_down = rng.standard_normal((d_ff, d)) / np.sqrt(d_ff)
    gate, up = x @ w_gate, x @ w_up
    units = np.stack([gate, silu(gate), up, silu(gate) * up], axis=1)
    return SwigluDemo(units, w_down, units[:, 3] @ w_down)


# --- attention weights are not explanations ---------------------------------------------

@record
class WeightVsEffect:
    weights: np.ndarray        # [n_seq] the query's attention weights
    value_norms: np.ndarray    # [n_seq] |v_j|
    removal_effect: np.ndarray  # [n_seq] |out - out without token j|
    disagree_rate: float       # share of `draws` draws where the most-weighted token is not the most needed


def weight_vs_effect(seed=DEMO_SEED, draws=1000, n_seq=4, d=8):
    """Does the token with the largest weight matter most? Remove each token and see how far the output moves.

    Token vectors get lengths that differ by a random factor (log-normal), as vectors in a real
    residual stream do; a long value vector with a small weight can move the output more.
    """
    check_bytes(draws * n_seq * d * 8 * 8, "the weight-versus-effect demo", "权重与影响演示")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((draws, n_seq, d)) * np.exp(rng.standard_normal((draws, n_seq, 1)))
    w_q, w_k, w_v = rng.standard_normal((3, d, d)) / np.sqrt(d)
    q, k, v = x[:, -1] @ w_q, x @ w_k, x @ w_v  # the last token asks: [draws, d], [draws, n_seq, d] x2
    scores = np.einsum("bd,bnd->bn", q, k) / np.sqrt(d)  # [draws, n_seq]
    weights = softmax(scores)
    out = np.einsum("bn,bnd->bd", weights, v)
    effect = np.empty_like(weights)
    for j in range(n_seq):  # drop token j: the softmax renormalises over the rest
        kept = softmax(np.where(np.arange(n_seq) == j, -np.inf, scores))
        effect[:, j] = np.linalg.norm(out - np.einsum("bn,bnd->bd", kept, v), axis=-1)
    disagree = float(np.mean(np.argmax(weights, 1) != np.argmax(effect, 1)))
    return WeightVsEffect(weights[0], np.linalg.norm(v[0], axis=-1), effect[0], disagree)
