"""The operations: softmax, entropy, masks, attention, heads, RoPE."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

import engine
from engine import random_llama


def test_softmax_rows_sum_to_one_and_survive_huge_scores():
    x = np.random.default_rng(0).standard_normal((5, 7)) * 1e3
    p = engine.softmax(x)
    assert np.all(np.isfinite(p))
    assert_allclose(p.sum(axis=-1), 1.0)


def test_softmax_of_a_fully_masked_row_is_zero_not_nan():
    p = engine.softmax(np.array([[-np.inf, -np.inf], [0.0, -np.inf]]))
    assert_allclose(p, [[0.0, 0.0], [1.0, 0.0]])


def test_entropy_in_nats():
    assert_allclose(engine.entropy(np.full(4, 0.25)), np.log(4))
    assert engine.entropy(np.array([1.0, 0.0, 0.0])) == 0.0


def test_causal_mask_shape_and_values():
    m = engine.causal_mask(3)
    assert np.all(np.isneginf(m[np.triu_indices(3, 1)]))
    assert np.all(m[np.tril_indices(3)] == 0)


def test_causal_weights_are_zero_above_the_diagonal():
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((3, 6, 4))
    out, w = engine.attention(q, k, v, causal=True)
    assert np.all(w[np.triu_indices(6, 1)] == 0.0)
    assert_allclose(w.sum(axis=-1), 1.0)
    assert_allclose(out[0], v[0])  # the first token can only see itself


def test_attention_scale_divides_by_sqrt_d():
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((3, 4, 16))
    _, scaled = engine.attention(q, k, v)
    _, raw = engine.attention(q / 4.0, k, v, scale=False)
    assert_allclose(scaled, raw)


def test_split_and_merge_heads_round_trip():
    x = np.arange(24.0).reshape(3, 8)
    heads = engine.split_heads(x, 4)
    assert heads.shape == (4, 3, 2)
    assert_allclose(heads[1], x[:, 2:4])
    assert_allclose(engine.merge_heads(heads), x)


@pytest.mark.parametrize("seed", range(5))
def test_rope_score_depends_only_on_the_offset(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.choice([8, 16, 64]))
    q, k = rng.standard_normal((2, d))
    offset = int(rng.integers(-20, 20))
    scores = []
    for m in rng.integers(0, 500, size=6):
        n = m - offset
        scores.append(engine.apply_rope(q[None], [m])[0] @ engine.apply_rope(k[None], [n])[0])
    assert_allclose(scores, scores[0], rtol=1e-9, atol=1e-9)


def test_rope_is_a_rotation_and_position_zero_is_identity():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 8))
    rotated = engine.apply_rope(x, np.arange(5))
    assert_allclose(np.linalg.norm(rotated, axis=-1), np.linalg.norm(x, axis=-1))
    assert_allclose(rotated[0], x[0])


def test_rope_uses_the_sinusoidal_pairing():
    """Rotating the unit vector (1, 0) in each pair by pos·θ_i gives (cos, sin): the table's sin/cos swapped."""
    n, d = 4, 8
    ones = np.tile([1.0, 0.0], d // 2)[None].repeat(n, axis=0)
    rotated = engine.apply_rope(ones, np.arange(n))
    pe = engine.sinusoidal_positions(n, d)
    assert_allclose(rotated[:, 0::2], pe[:, 1::2])
    assert_allclose(rotated[:, 1::2], pe[:, 0::2])


def test_rms_norm_and_swiglu_shapes():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 8))
    y = engine.rms_norm(x, np.ones(8))
    assert_allclose(np.sqrt(np.mean(y**2, axis=-1)), 1.0, rtol=1e-4)
    g, u = rng.standard_normal((2, 8, 16))
    down = rng.standard_normal((16, 8))
    out = engine.swiglu(x, g, u, down)
    sigmoid = 1 / (1 + np.exp(-(x @ g)))
    assert_allclose(out, ((x @ g) * sigmoid * (x @ u)) @ down)
    assert engine.silu(np.array(0.0)) == 0.0 and engine.silu(np.array(30.0)) == pytest.approx(30.0)


def test_permutation_without_positions_only_moves_the_weights():
    demo = engine.permutation_demo(positions=False)
    assert_allclose(demo.weights_shuffled, demo.permuted, atol=1e-12)
    assert demo.max_diff < 1e-12


def test_permutation_with_positions_changes_the_weights():
    assert engine.permutation_demo(positions=True).max_diff > 0.05


def test_multi_head_keeps_the_parameter_count():
    four, eight = engine.multi_head_demo(4), engine.multi_head_demo(8)
    assert four.layer_params == eight.layer_params == 4 * 32 * 32
    assert len(four.heads) == 4 and len(eight.heads) == 8
    assert four.weights.shape == (4, 4, 4)
    for h in four.heads:
        i, j = h.sharpest
        assert four.weights[four.heads.index(h), i, j] == pytest.approx(h.stats.max_weight)
    ents = [h.stats.mean_entropy for h in four.heads]
    assert four.entropy_spread == pytest.approx(max(ents) / min(ents))
    for h, w in zip(four.heads, four.weights):
        assert h.stats.mean_entropy == pytest.approx(np.mean(engine.entropy(w)))


def test_mini_forward_keeps_the_shape_and_adds():
    on = random_llama.trace(random_llama.PROMPT, residual=True)
    off = random_llama.trace(random_llama.PROMPT, residual=False)
    assert {x.shape for x in on.xs} == {(5, 16)} and len(on.xs) == 5
    assert_allclose(on.probs.sum(), 1.0)

    def cos(a, b):
        return np.mean(np.sum(a * b, -1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1))
    # with residual adds the embedding is still in x after every layer; replacing x loses it
    assert cos(on.xs[-1], on.xs[0]) > 0.7 > 0.3 > abs(cos(off.xs[-1], off.xs[0]))


def test_same_seed_same_numbers():
    a, b = engine.attention_demo(seed=7), engine.attention_demo(seed=7)
    assert np.array_equal(a.weights_scaled, b.weights_scaled)
    assert not np.array_equal(a.weights_scaled, engine.attention_demo(seed=8).weights_scaled)


def test_causal_stats_leave_out_the_row_that_sees_only_itself():
    demo = engine.attention_demo(causal=True)
    assert demo.weights_raw[0, 0] == 1.0
    assert demo.scaled.max_weight == pytest.approx(np.max(demo.weights_scaled[1:]))
    assert demo.scaled.mean_entropy == pytest.approx(np.mean(engine.entropy(demo.weights_scaled[1:])))


def test_the_engine_never_touches_numpy_global_random_state():
    """Every demo draws from its own seeded generator, so a rerun gives the same digits."""
    before = np.random.get_state()[1].copy()
    for view in engine.VIEWS.values():  # the real model's views: tests/test_real_views.py
        if not view.model:
            view.run()
    assert np.array_equal(np.random.get_state()[1], before)


@pytest.mark.parametrize("d", [3, 8, 64])
def test_sweep_scores_have_the_law_of_plain_q_and_k_draws(d):
    """The d sweep draws q @ k.T from its exact law (engine.demos.qk_scores): over many draws its
    averages match those of plain q and k of d unit normals, within a few standard errors."""
    from engine.demos import qk_scores
    draws, n_seq = 20000, 3
    rng = np.random.default_rng(7)
    q, k = rng.standard_normal((2, draws, n_seq, d))
    plain = q @ k.transpose(0, 2, 1)
    exact = qk_scores(np.random.default_rng(8), draws, n_seq, d)

    def stats(s):  # per draw: the max weight and mean row entropy, unscaled and scaled; the 4th moment
        out = []
        for scale in (1.0, np.sqrt(d)):
            w = np.exp(s / scale - (s / scale).max(-1, keepdims=True))
            w /= w.sum(-1, keepdims=True)
            out += [w.max(axis=(1, 2)), -(w * np.log(np.where(w > 0, w, 1))).sum(-1).mean(-1)]
        return out + [(s[:, 0, 0] * s[:, 0, 1]) ** 2 / d**2]  # two scores that share q: mean (d + 2) / d

    for a, b in zip(stats(plain), stats(exact)):
        se = np.hypot(a.std(), b.std()) / np.sqrt(draws)
        assert abs(a.mean() - b.mean()) < 5 * se + 1e-12
    assert abs((plain[:, 0, 0] ** 2).mean() / d - 1) < 0.05 and abs((exact[:, 0, 0] ** 2).mean() / d - 1) < 0.05
