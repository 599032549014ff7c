"""Lessons 01-05, 09 and 13: figures an expert review asked for, recomputed by plain code that shares nothing
with the view that shows it (the RoPE layouts, the typical size of a score, the projections' count, the gradient
path through the residual adds, the two Alice-to-Bob weights), and labels and symbols that say what they are."""

import cmath
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest

from engine import demos, llama, random_llama
from engine.views import run_view
from engine.views.residual import embedding_gain

LESSONS = Path(__file__).resolve().parent.parent / "lessons"


def facts(result):
    return {f.key: f.value for f in result.facts}


def table(result, key):
    t = next(t for t in result.tables if t.key == key)
    return [dict(zip((c.key for c in t.columns), row)) for row in t.rows]


# --- RoPE: the pairs layout and Hugging Face's halves layout ----------------------------------------------------

def rope_complex(x, pos, base):
    """Meta's RoPE: dims (2i, 2i+1) as one complex number, times e^(i pos theta_i)."""
    d = len(x)
    z = [complex(x[2 * i], x[2 * i + 1]) * cmath.exp(1j * pos * base ** (-2 * i / d)) for i in range(d // 2)]
    return [v for c in z for v in (c.real, c.imag)]


def rope_hf(x, pos, base):
    """Hugging Face's: x * cos + rotate_half(x) * sin, dim i paired with dim i + d/2, written as a loop."""
    d, h = len(x), len(x) // 2
    out = [0.0] * d
    for i in range(h):
        a = pos * base ** (-2 * i / d)
        out[i] = x[i] * math.cos(a) - x[i + h] * math.sin(a)
        out[i + h] = x[i + h] * math.cos(a) + x[i] * math.sin(a)
    return out


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


@pytest.mark.parametrize("d, base, seed", [(8, 10000.0, 0), (8, 500000.0, 1), (16, 100.0, 2), (2, 10000.0, 0)])
def test_the_two_rope_layouts_give_one_score_once_the_dims_are_reordered(d, base, seed):
    r = run_view("rope", {"d": d, "base": base, "seed": seed})
    q, k = np.random.default_rng(seed).standard_normal((2, d))  # the view's q and k, stored halves-first
    order = [j for i in range(d // 2) for j in (i, i + d // 2)]
    for row in table(r, "layouts"):
        m, n = row["m"], row["n"]
        halves = dot(rope_hf(list(q), m, base), rope_hf(list(k), n, base))
        pairs = dot(rope_complex(list(q[order]), m, base), rope_complex(list(k[order]), n, base))
        mixed = dot(rope_complex(list(q), m, base), rope_complex(list(k), n, base))
        assert row["halves"] == pytest.approx(halves, abs=1e-12)
        assert row["pairs"] == pytest.approx(pairs, abs=1e-12) and pairs == pytest.approx(halves, abs=1e-12)
        assert row["mixed"] == pytest.approx(mixed, abs=1e-12)
    f = facts(r)
    assert f["layout_gap"] < 1e-12
    assert f["mixed_differs"] == (d > 2) and (f["mixed_gap"] > 0.01) == (d > 2)  # d = 2: one pair, one layout


# --- attention: the number that grows like sqrt(d) ---------------------------------------------------------------

@pytest.mark.parametrize("d", demos.SWEEP_DIMS)
def test_the_typical_score_is_near_sqrt_d(d):
    f = facts(run_view("attention", {"d": d}))
    assert f["sqrt_d"] == pytest.approx(math.sqrt(d))
    assert f["score_rms"] == pytest.approx(math.sqrt(d), rel=0.06)  # 9,000 scores: a few % of sampling noise
    # the plain estimate from unit-normal q and k of width d agrees in law (own draws, so only to the noise)
    rng = np.random.default_rng(123)
    q, k = rng.standard_normal((2, 300, min(d, 512)))
    plain = float(np.sqrt(np.mean(np.sum(q * k, -1) ** 2) * d / min(d, 512)))
    assert f["score_rms"] == pytest.approx(plain, rel=0.15)


# --- heads: the projections' count, at any head count ------------------------------------------------------------

@pytest.mark.parametrize("heads", [1, 2, 4, 8, 16, 32])
def test_the_projections_table_stays_at_four_d_model_squared(heads):
    r = run_view("heads", {"heads": heads})
    rows = table(r, "weights")
    assert [row["params"] for row in rows[:4]] == [32 * heads * (32 // heads)] * 4
    assert rows[-1]["params"] == sum(row["params"] for row in rows[:4]) == 4 * 32 * 32 == facts(r)["layer_params"]
    assert rows[0]["shape"] == f"32 * {heads} * {32 // heads}"


# --- misconceptions: each Alice-to-Bob weight has its own fact ---------------------------------------------------

@pytest.mark.parametrize("positions", [False, True])
def test_alice_to_bob_weights_are_the_cells(positions):
    r = run_view("permutation", {"positions": positions})
    f = facts(r)
    a, a2 = table(r, "original"), table(r, "shuffled")
    assert f["bob_in_a"] == a[0]["k2"]    # A: Alice owes Bob, Alice's row, Bob's column
    assert f["bob_in_a2"] == a2[2]["k0"]  # A': Bob owes Alice, Alice's row (last), Bob's column (first)
    assert (abs(f["bob_in_a"] - f["bob_in_a2"]) < 1e-12) == (not positions)


def test_fact_labels_of_one_view_are_all_different():
    """The before -> after line names a fact by its label: two facts of one view must not share one."""
    for view, settings in (("swiglu", {}), ("attention", {}), ("permutation", {}), ("norm-vector", {}),
                           ("norm-stack", {}), ("residual", {}), ("rope", {})):
        labels = [f.label.en for f in run_view(view, settings).facts]
        assert len(labels) == len(set(labels)), view
        labels = [f.label.zh for f in run_view(view, settings).facts]
        assert len(labels) == len(set(labels)), view


# --- residual: the gradient path the adds keep -------------------------------------------------------------------

def stack(layers, seed):
    cfg = random_llama.RandomLlamaConfig(n_layer=layers)
    w = random_llama.init_weights(cfg, seed)
    return w, w["embed"][[random_llama.VOCAB.index(t) for t in random_llama.PROMPT]], cfg.n_head


def plain_jacobian(x0, w, n_head, residual, layers, h=1e-4):
    """d x_L / d x0 one column at a time, through llama.forward's own blocks, at a different step size."""
    def run(x):
        for i in range(layers):
            x = llama.block(x, w, i, n_head, n_head, residual)[0]
        return x.ravel()
    cols = []
    for j in range(x0.size):
        e = np.zeros(x0.size)
        e[j] = h
        cols.append((run(x0 + e.reshape(x0.shape)) - run(x0 - e.reshape(x0.shape))) / (2 * h))
    return np.array(cols).T  # [n, n]


@pytest.mark.parametrize("residual", [True, False])
def test_embedding_gain_is_the_rms_singular_value_of_the_jacobian(residual):
    w, x0, n_head = stack(2, 0)
    jac = plain_jacobian(x0, w, n_head, residual, 2)
    want = math.sqrt(np.mean(np.linalg.svd(jac, compute_uv=False) ** 2))
    assert embedding_gain(x0, w, n_head, residual)[-1] == pytest.approx(want, rel=1e-6)


def test_with_silent_sub_blocks_the_adds_pass_a_nudge_unchanged_and_replacing_loses_it():
    w, x0, n_head = stack(3, 0)
    w = {k: (np.zeros_like(v) if k.endswith((".wo", ".wd")) else v) for k, v in w.items()}
    assert embedding_gain(x0, w, n_head, True) == pytest.approx([1.0] * 4, abs=1e-9)
    assert embedding_gain(x0, w, n_head, False)[1:] == pytest.approx([0.0] * 3, abs=1e-12)


@pytest.mark.parametrize("layers", [4, 8])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_adds_keep_each_layers_factor_near_one(layers, seed):
    """The prose: with the adds each layer multiplies dx/dx0 by a factor near 1; replacing x, by factors
    spread far wider, on both sides."""
    f = facts(run_view("residual", {"layers": layers, "seed": seed}))
    assert 0.95 < f["step_on_min"] <= f["step_on_max"] < 1.2
    assert f["step_off_min"] < f["step_on_min"] and f["step_off_max"] > f["step_on_max"]
    rows = table(run_view("residual", {"layers": layers, "seed": seed}), "paths")
    assert rows[-1]["grad_on"] == pytest.approx(f["last_grad_on"]) and rows[0]["grad_on"] == 1.0


# --- '*' for multiplication beside the residual x ---------------------------------------------------------------

def test_no_ascii_x_for_multiplication_in_these_lessons():
    for name in ("01-residual", "02-positional", "03-attention", "04-heads", "05-ffn", "09-rmsnorm",
                 "13-misconceptions"):
        text = (LESSONS / f"{name}.toml").read_text(encoding="utf-8")
        tomllib.loads(text)
        for wrong in ("z x sigmoid", "pos x theta", "weight x |", "heads x head_dim", "权重 x", "2 pi x"):
            assert wrong not in text, (name, wrong)
