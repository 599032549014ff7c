"""RMSNorm's lesson: every figure the views show, recomputed by plain code that shares nothing with engine/norms.py."""

import math

import numpy as np
import pytest

import engine
from engine import llama, norms, random_llama
from engine.views import run_view


def facts(result):
    return {f.key: f.value for f in result.facts}


def column(result, table, key):
    t = next(t for t in result.tables if t.key == table)
    i = [c.key for c in t.columns].index(key)
    return [row[i] for row in t.rows]


# --- the formula and its scale invariance ------------------------------------------------------------------------

def plain_rms_norm(x, g, eps):
    """RMSNorm of one vector, written out as a loop."""
    mean_square = sum(v * v for v in x) / len(x)
    return [v / math.sqrt(mean_square + eps) * w for v, w in zip(x, g)]


@pytest.mark.parametrize("scale", [10.0, 0.01, 1000.0, 3.7e-4])
def test_scale_invariance_without_eps_is_exact_up_to_rounding(scale):
    rng = np.random.default_rng(7)
    x, g = rng.normal(1.0, 2.0, 64), rng.normal(1.0, 0.2, 64)
    y, y_scaled = plain_rms_norm(x, g, 0.0), plain_rms_norm(scale * x, g, 0.0)
    assert max(abs(a - b) for a, b in zip(y, y_scaled)) < 1e-14
    np.testing.assert_allclose(engine.ops.rms_norm(scale * x, g, 0.0), y, rtol=1e-13)


@pytest.mark.parametrize("scale, eps", [(10.0, 1e-5), (0.01, 1e-5), (1000.0, 1e-5), (10.0, 0.0), (0.01, 0.0)])
def test_the_scale_view_matches_a_plain_rms_norm(scale, eps):
    r = run_view("norm-vector", {"scale": scale, "eps": eps})
    f = facts(r)
    x, g = column(r, "vector", "x"), column(r, "vector", "g")
    y, y_scaled = plain_rms_norm(x, g, eps), plain_rms_norm([scale * v for v in x], g, eps)
    np.testing.assert_allclose(column(r, "vector", "y"), y, rtol=1e-12)
    np.testing.assert_allclose(column(r, "scale", "ys"), y_scaled, rtol=1e-12)
    diff = max(abs(a - b) for a, b in zip(y, y_scaled))
    assert f["max_diff"] == pytest.approx(diff, rel=1e-6, abs=1e-15)
    # with eps every y moves by one factor: scale * sqrt(ms + eps) / sqrt(scale^2 ms + eps)
    ms = sum(v * v for v in x) / len(x)
    factor = scale * math.sqrt(ms + eps) / math.sqrt(scale * scale * ms + eps)
    assert f["rel_diff"] == pytest.approx(abs(factor - 1), rel=1e-6, abs=1e-15)
    assert f["exact"] == (eps == 0.0)  # at the lesson's settings: exact without eps, and only then
    assert f["mean_sq"] == pytest.approx(ms) and f["mean_sq_scaled"] == pytest.approx(scale * scale * ms)


def test_rms_norm_subtracts_no_mean():
    f = facts(run_view("norm-vector"))
    assert abs(f["mean_x"]) > 0.5 and f["mean_xhat"] == pytest.approx(f["mean_x"] / f["rms"])
    assert f["rms_xhat"] == pytest.approx(1.0, abs=1e-5)


# --- the three placements, recomputed by a plain stack ----------------------------------------------------------

def plain_norm_rows(x, g, eps=1e-5):
    return np.array([plain_rms_norm(row, g, eps) for row in x])


def plain_attention(h, wq, wk, wv, wo, n_head):
    """Causal attention with RoPE, head by head, each pair (2i, 2i+1) turned as a complex number."""
    n_seq, d = h.shape
    hd = d // n_head
    theta = 10000.0 ** (-np.arange(0, hd, 2) / hd)
    out = np.zeros((n_seq, d))
    for head in range(n_head):
        cols = slice(head * hd, (head + 1) * hd)
        q, k, v = h @ wq[:, cols], h @ wk[:, cols], h @ wv[:, cols]
        turns = np.exp(1j * np.arange(n_seq)[:, None] * theta)
        qc, kc = (q[:, 0::2] + 1j * q[:, 1::2]) * turns, (k[:, 0::2] + 1j * k[:, 1::2]) * turns
        for i in range(n_seq):
            scores = [float(np.real(np.sum(qc[i] * np.conj(kc[j])))) / math.sqrt(hd) for j in range(i + 1)]
            top = max(scores)
            e = [math.exp(s - top) for s in scores]
            out[i, cols] = sum(e[j] / sum(e) * v[j] for j in range(i + 1))
    return out @ wo


def plain_ffn(h, wg, wu, wd):
    gate = h @ wg
    return (gate / (1 + np.exp(-gate)) * (h @ wu)) @ wd


def plain_stack(w, x, n_layer, placement):
    """rms of x after each layer (nan once past float64), and the weight post-norm leaves on the embedding."""
    sizes, keep = [float(np.mean(np.sqrt(np.mean(x**2, -1))))], np.ones(len(x))
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(n_layer):
            for f, g in ((lambda h: plain_attention(h, *(w[f"{i}.w{c}"] for c in "qkvo"), 4), w[f"{i}.norm1"]),
                         (lambda h: plain_ffn(h, w[f"{i}.wg"], w[f"{i}.wu"], w[f"{i}.wd"]), w[f"{i}.norm2"])):
                if placement == "pre":
                    x = x + f(plain_norm_rows(x, g))
                elif placement == "post":
                    s = x + f(x)
                    keep = keep / np.sqrt(np.mean(s**2, -1) + 1e-5)
                    x = plain_norm_rows(s, g)
                else:
                    x = x + f(x)
            size = float(np.mean(np.sqrt(np.mean(x**2, -1))))
            sizes.append(size if math.isfinite(size) else math.nan)
            if not math.isfinite(size):
                break
    return sizes, float(np.mean(keep))


def test_the_deep_stack_is_drawn_as_one_thread_would_draw_it():
    """init_weights draws every other layer of a deep stack in a second thread: the same numbers as drawing
    each layer, one after another, from its own stream of the seed."""
    cfg = random_llama.RandomLlamaConfig(d_model=64, n_layer=norms.MAX_LAYERS, n_head=4, d_ff=176)
    w = random_llama.init_weights(cfg, 3)
    streams = np.random.SeedSequence(3).spawn(2 + cfg.n_layer)[2:]
    assert len(w) == 3 + 9 * cfg.n_layer
    for i, ss in enumerate(streams):
        rng = np.random.default_rng(ss)
        for name, shape, gain in (("wq", (64, 64), 1), ("wk", (64, 64), 1), ("wv", (64, 64), 1),
                                  ("wo", (64, 64), random_llama.BRANCH_GAIN), ("wg", (64, 176), 1),
                                  ("wu", (64, 176), 1), ("wd", (176, 64), random_llama.BRANCH_GAIN)):
            np.testing.assert_array_equal(w[f"{i}.{name}"], rng.standard_normal(shape) / np.sqrt(shape[0]) * gain)


def test_an_error_in_the_drawing_thread_reaches_the_caller_without_a_traceback(capfd):
    tries = []

    def make(i):
        tries.append(i)
        if tries.count(3) == 1 and i == 3:  # the first try at 3, in the second thread, fails; the retry does not
            raise MemoryError("no room")
        return i * i

    assert random_llama._in_two_threads(make, 8) == [i * i for i in range(8)] and tries.count(3) == 2
    with pytest.raises(ValueError, match="bad 5"):
        random_llama._in_two_threads(lambda i: i if i != 5 else int("bad 5"), 8)
    assert capfd.readouterr().err == ""


def stack_inputs(gain, seed=0):
    """The weights and x the view uses, built from random_llama directly."""
    cfg = random_llama.RandomLlamaConfig(d_model=64, n_layer=norms.MAX_LAYERS, n_head=4, d_ff=176)
    w = random_llama.init_weights(cfg, seed)
    for i in range(cfg.n_layer):
        for name in ("wo", "wd"):
            w[f"{i}.{name}"] = w[f"{i}.{name}"] * gain / random_llama.BRANCH_GAIN
    x = w["embed"][[random_llama.VOCAB.index(t) for t in ("<bos>", "the", "cat", "sat", "on")]]
    return w, x


@pytest.mark.parametrize("gain", [0.5, 1.0])
def test_the_three_placements_match_a_plain_stack(gain):
    w, x = stack_inputs(gain)
    r = run_view("norm-stack", {"layers": 4, "gain": gain})
    assert [str(c.en) for c in column(r, "stack", "layer")] == ["embedding", "layer 1", "layer 2", "layer 4"]
    for placement in norms.PLACEMENTS:
        sizes, keep = plain_stack(w, x, 4, placement)
        np.testing.assert_allclose(column(r, "stack", placement), [sizes[i] for i in (0, 1, 2, 4)], rtol=1e-10)
        if placement == "post":
            assert facts(r)["post_keep"] == pytest.approx(keep, rel=1e-10)
            np.testing.assert_allclose(sizes[1:], 1.0, atol=1e-4)  # the prose: 1 after every layer


def test_post_norms_embedding_weight_is_what_its_x_carries():
    """Split post-norm's x into the embedding's part and the rest: the first is keep * embedding."""
    w, x = stack_inputs(0.5)
    part, rest = x.copy(), np.zeros_like(x)
    for i in range(3):
        for f in (lambda h: plain_attention(h, *(w[f"{i}.w{c}"] for c in "qkvo"), 4),
                  lambda h: plain_ffn(h, w[f"{i}.wg"], w[f"{i}.wu"], w[f"{i}.wd"])):
            out = f(part + rest)
            r = np.sqrt(np.mean((part + rest + out) ** 2, -1, keepdims=True) + 1e-5)
            part, rest = part / r, (rest + out) / r
    keep = part[:, 0] / x[:, 0]
    np.testing.assert_allclose(part, keep[:, None] * x, rtol=1e-9)
    assert facts(run_view("norm-stack", {"layers": 3}))["post_keep"] == pytest.approx(float(np.mean(keep)), rel=1e-9)


def test_without_norms_x_overflows_where_the_view_says():
    w, x = stack_inputs(0.5)
    f = facts(run_view("norm-stack"))
    sizes, _ = plain_stack(w, x, norms.MAX_LAYERS, "none")
    first_bad = next(i for i, s in enumerate(sizes) if not math.isfinite(s))
    assert f["none_overflows"] and f["overflow_layer"] == first_bad
    assert column(run_view("norm-stack"), "stack", "none")[-1].en == "overflow"


def test_pre_norm_is_llama_forward():
    """The stack's pre-norm placement is exactly the pass every model in the tour runs."""
    w = norms.stack_weights(6, 0.5)
    x0 = norms.stack_embedding(w)
    ids = np.array([[random_llama.VOCAB.index(t) for t in random_llama.PROMPT]])
    keep = {}
    llama.forward(w, ids, norms.STACK.n_head, keep=keep)
    for placements in (("pre",), norms.PLACEMENTS):  # alone, and in the batch the view runs
        xs, _ = norms.run_stack(x0, w, norms.STACK.n_head, placements)["pre"]
        assert len(xs) == len(keep["residual"]) == 7
        for mine, theirs in zip(xs, keep["residual"]):
            np.testing.assert_allclose(mine, theirs[0], rtol=1e-10, atol=1e-12)
    with pytest.raises(TypeError):
        norms.run_stack(x0, w, norms.STACK.n_head, "pre")
    final = float(np.mean(np.sqrt(np.mean(engine.rms_norm(keep["x_out"][0], w["norm_f"]) ** 2, -1))))
    assert facts(run_view("norm-stack", {"layers": 6}))["final_rms"] == pytest.approx(final, rel=1e-9)


@pytest.mark.parametrize("layers", [32, 8])
@pytest.mark.parametrize("gain", [0.5, 1.0, 0.25])
def test_the_lessons_claims_hold_at_every_setting(layers, gain):
    f = facts(run_view("norm-stack", {"layers": layers, "gain": gain}))
    assert f["last_pre"] > f["start"]                                # pre-norm's x grows
    assert f["pre_in_min"] > 0.9995 and f["pre_in_max"] <= 1.0        # every sub-block reads rms 1.000
    assert abs(f["final_rms"] - 1) < 5e-4                             # the final norm brings it back to 1.000
    assert f["last_post"] == pytest.approx(1.0, abs=1e-4)
    assert 0 < f["post_keep"] < 1


# --- what the norms cost ----------------------------------------------------------------------------------------

def test_llama2_7b_norm_parameters():
    f = facts(run_view("norm-params", {"preset": "llama2-7b"}))
    assert f["norm_total"] == 2 * 32 * 4096 + 4096 == 266_240
    assert f["norm_count"] == 65
    assert f["total"] == f["published"] == 6_738_415_616 and f["matches"]
    # a bias on q, k, v, o, gate, up, down and the LM head, and a beta on each of the 65 norms
    per_layer = 3 * 4096 + 4096 + 2 * 11008 + 4096
    assert f["bias"] == 32 * per_layer + 65 * 4096 + 32000 == 1_658_112
    assert f["with_bias"] == 6_738_415_616 + 1_658_112


def test_llama3_8b_norms_and_grouped_kv_biases():
    f = facts(run_view("norm-params", {"preset": "llama3-8b"}))
    assert f["norm_total"] == 65 * 4096 and f["matches"]
    per_layer = 4096 + 2 * 1024 + 4096 + 2 * 14336 + 4096  # k and v are 8 heads of 128
    assert f["bias"] == 32 * per_layer + 65 * 4096 + 128256


# --- refusals ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("view_id, settings", [
    ("norm-stack", {"layers": "0"}), ("norm-stack", {"layers": "33"}), ("norm-stack", {"layers": "2.5"}),
    ("norm-stack", {"gain": "0"}), ("norm-stack", {"gain": "-1"}), ("norm-stack", {"gain": "nan"}),
    ("norm-stack", {"norm": "middle"}), ("norm-stack", {"seed": "-1"}),
    ("norm-vector", {"scale": "0"}), ("norm-vector", {"scale": "1e9"}), ("norm-vector", {"eps": "-1e-5"}),
    ("norm-params", {"preset": "gpt2"}),
])
def test_bad_settings_are_refused(view_id, settings):
    with pytest.raises(engine.ParamError) as err:
        run_view(view_id, settings)
    assert err.value.zh and err.value.en


# --- eps made visible, and how far each layer moves pre-norm's x ----------------------------------------

@pytest.mark.parametrize("eps", [1e-5, 0.0])
def test_eps_shows_on_a_tiny_x(eps):
    """Step 1's key 5: y of x * tiny against y of x, by the loop above; eps shrinks it, and only eps does."""
    r = run_view("norm-vector", {"eps": eps})
    f = facts(r)
    x, g = column(r, "vector", "x"), column(r, "vector", "g")
    y, y_tiny = plain_rms_norm(x, g, eps), plain_rms_norm([f["tiny"] * v for v in x], g, eps)
    ratio = math.sqrt(sum(v * v for v in y_tiny) / sum(v * v for v in y))
    assert f["tiny_rms"] == pytest.approx(ratio, rel=1e-9)
    assert f["tiny_mean_sq"] == pytest.approx(f["tiny"] ** 2 * sum(v * v for v in x) / len(x))
    if eps:
        assert f["tiny_rms"] < 0.5  # the hint's "is 0.386 the size": the press shows something
    else:
        assert f["tiny_rms"] == pytest.approx(1.0, abs=1e-12)


def test_one_format_per_quantity_on_the_scale_step():
    """x * scale keeps x's three significant places; differences in one exponent format."""
    from tui.format import format_value
    for scale, want in ((10.0, "+12.51"), (0.01, "+0.01251"), (1000.0, "+1251")):
        r = run_view("norm-vector", {"scale": scale})
        t = next(t for t in r.tables if t.key == "scale")
        shown = [format_value(row[3], t.columns[3].fmt, "en") for row in t.rows]
        xs = [format_value(row[1], t.columns[1].fmt, "en") for row in t.rows]
        digits = lambda s: s.lstrip("+-").replace(".", "").lstrip("0")  # noqa: E731
        assert shown[0] == want and [digits(s) for s in shown] == [digits(s) for s in xs]
        assert t.columns[5].fmt == ".1e"
    f = {x.key: x for x in run_view("norm-vector", {"eps": 0.0}).facts}
    assert format_value(f["rel_diff"].value, f["rel_diff"].fmt, "en").count("e") == 1


@pytest.mark.parametrize("layers, gain", [(32, 0.5), (8, 0.5), (32, 1.0), (8, 0.25), (32, 0.25)])
def test_deep_layers_move_pre_norms_x_less(layers, gain):
    """The moved / x column: rms(x_l - x_(l-1)) / rms(x_(l-1)), by the plain stack; it falls with depth."""
    w, x = stack_inputs(gain)
    xs = [x]
    for i in range(layers):
        for f, g in ((lambda h: plain_attention(h, *(w[f"{i}.w{c}"] for c in "qkvo"), 4), w[f"{i}.norm1"]),
                     (lambda h: plain_ffn(h, w[f"{i}.wg"], w[f"{i}.wu"], w[f"{i}.wd"]), w[f"{i}.norm2"])):
            x = x + f(plain_norm_rows(x, g))
        xs.append(x)

    def moved(i):
        rms = lambda a: np.sqrt(np.mean(a ** 2, -1))  # noqa: E731
        return float(np.mean(rms(xs[i] - xs[i - 1]) / rms(xs[i - 1])))

    r = run_view("norm-stack", {"layers": layers, "gain": gain})
    f = facts(r)
    assert f["moved_first"] == pytest.approx(moved(1), rel=1e-9)
    assert f["moved_last"] == pytest.approx(moved(layers), rel=1e-9)
    assert column(r, "inside", "moved")[-1] == pytest.approx(moved(layers), rel=1e-9)
    assert f["moved_last"] < f["moved_first"]  # the prose: a deep layer moves x proportionally less
    if layers == 32 and gain >= 0.5:  # at the default, 0.45 -> 0.21
        assert f["moved_last"] < 0.6 * f["moved_first"]
