"""Chart data of the positional, dsweep, params, compare, kvcache and context views: each series recomputed
here from the formulas with plain loops, each chart's shape checked, each label short and in both languages."""

import math
import re
import unicodedata

import numpy as np
import pytest
from rich.cells import cell_len

import engine
from engine import sizing

LANGS = ("en", "zh")
LEGEND_CELLS = 14  # a legend entry: a series label or a stack's part
NAMES = {"MHA", "MQA", "GQA", "GiB", "Llama", "Gemma", "Mistral", "NeMo", "TinyLlama"}  # the same in zh
CHARTED = [
    ("positional", {}), ("positional", {"d": "128", "base": "500000"}), ("positional", {"d": "2", "base": "100"}),
    ("dsweep", {}),
    *(("params", {"preset": p}) for p in sizing.PRESETS), ("params", {"layers": "2"}),
    ("params", {"preset": "gemma-2b", "tied": "off"}),
    ("compare", {}), ("compare", {"a": "gemma-7b", "b": "mistral-nemo-12b"}),
    ("kvcache", {}), ("kvcache", {"kv_heads": "8", "context": "100000", "batch": "4", "dtype": "int4"}),
    ("kvcache", {"preset": "llama2-70b", "kv_heads": "1", "context": "1"}),
    ("context", {}), ("context", {"prompt": "300", "preset": "llama3-8b"}),
]


def run(view_id, **settings):
    return engine.run_view(view_id, {k: str(v) for k, v in settings.items()})


def chart(result, key):
    (found,) = [c for c in result.charts if c.key == key]
    return found


def fact(result, key):
    return {f.key: f.value for f in result.facts}[key]


def texts(c):
    """Every text a chart shows."""
    yield c.title
    yield from (s.label for s in c.series)
    yield from c.parts
    yield from (t for t in (c.x_label, c.y_label, c.note) if t is not None)


# --- every chart: shape, keys, labels -------------------------------------------------------

@pytest.mark.parametrize("view_id, settings", CHARTED)
def test_charts_have_their_shape(view_id, settings):
    result = engine.run_view(view_id, settings)
    assert result.charts
    keys = [c.key for c in result.charts]
    assert len(set(keys)) == len(keys)
    assert not set(keys) & {t.key for t in result.tables}, "a step names charts among its tables"
    for c in result.charts:
        assert c.kind in ("line", "strips", "stack") and c.series
        for s in c.series:
            assert all(isinstance(v, (int, float)) and math.isfinite(v) for v in s.values)
            if c.kind == "stack":
                assert len(s.values) == len(c.parts) and not c.x and all(v >= 0 for v in s.values)
            else:
                assert len(s.values) == len(c.x) and not c.parts
        if c.kind != "stack":
            assert list(c.x) == sorted(set(c.x)) and (not c.log_x or c.x[0] > 0)
        if c.y_range is not None:
            lo, hi = c.y_range
            assert all(lo <= v <= hi for s in c.series for v in s.values)


@pytest.mark.parametrize("view_id, settings", CHARTED)
def test_chart_texts_are_bilingual_short_and_fixed_width(view_id, settings):
    for c in engine.run_view(view_id, settings).charts:
        for text in texts(c):
            assert text.en and text.zh, text
            if text.zh == text.en:  # only symbols and names read the same in both languages
                assert not set(re.findall(r"[A-Za-z]{3,}", text.en)) - NAMES, text
            for lang in LANGS:
                bad = [ch for ch in text(lang) if unicodedata.east_asian_width(ch) == "A"]
                assert not bad, f"{c.key}: {text(lang)!r} holds ambiguous-width {bad}"
        for legend in [s.label for s in c.series] + list(c.parts):
            assert max(cell_len(legend(lang)) for lang in LANGS) <= LEGEND_CELLS, legend


# --- positional: the waves --------------------------------------------------------------

def shown_pairs(n_pairs):
    return list(range(n_pairs)) if n_pairs <= 8 else [0, 1, 2, 3] + list(range(n_pairs - 4, n_pairs))


@pytest.mark.parametrize("d, base", [(8, 10000), (2, 100), (128, 500000), (4096, 10000)])
def test_waves_are_sin_of_each_shown_pair(d, base):
    c = chart(run("positional", d=d, base=base), "waves")
    pairs = shown_pairs(d // 2)
    assert c.kind == "strips" and c.y_range == (-1, 1) and list(c.x) == list(range(64))
    assert [(s.label.en, s.label.zh) for s in c.series] == [(f"d{2 * i}", f"d{2 * i}") for i in pairs]
    for s, i in zip(c.series, pairs):
        theta = 1.0 / base ** (2 * i / d)
        expected = [math.sin(p * theta) for p in range(64)]
        np.testing.assert_allclose(s.values, expected, rtol=1e-12, atol=1e-12)


def test_waves_match_the_table_where_both_show_a_position():
    result = run("positional", n=12, d=8)
    c, table = chart(result, "waves"), result.tables[0]
    keys = [col.key for col in table.columns]
    for row in table.rows:
        for s in c.series:
            assert s.values[row[0]] == pytest.approx(row[keys.index(s.label.en)], abs=1e-12)


def test_a_larger_base_flattens_the_slowest_wave():
    def swing(base):  # how far the slowest pair's sin moves over positions 0 .. 63
        values = chart(run("positional", base=base), "waves").series[-1].values
        return max(values) - min(values)
    assert swing(100) > swing(10000) > swing(500000)
    assert swing(500000) < swing(10000) / 10  # 50 times the base, base^(-6/8): about 19 times slower


# --- dsweep: entropy and max weight against d ------------------------------------------

PLAIN_SEED = 7  # the plain simulation's own draws: it agrees with the view in the mean, not draw for draw


def plain_sweep(dims, draws):
    """Unit-normal q and k of width d drawn directly, softmax and entropy written out by hand."""
    out = {}
    for d in dims:
        rng = np.random.default_rng([PLAIN_SEED, d])
        q, k = rng.standard_normal((2, draws, 3, d))
        scores = np.einsum("bid,bjd->bij", q, k)
        for scaled, s in ((False, scores), (True, scores / math.sqrt(d))):
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            w = e / e.sum(axis=-1, keepdims=True)
            plogp = np.where(w > 0, w * np.log(np.where(w > 0, w, 1.0)), 0.0)
            out[d, scaled] = (w.max(axis=(1, 2)).mean(), (-plogp.sum(axis=-1)).mean())
    return out


def test_dsweep_charts_draw_the_sweep_table():
    result = run("dsweep")
    table = result.tables[0]
    col = {c.key: i for i, c in enumerate(table.columns)}
    ent, top = chart(result, "entropy"), chart(result, "maxweight")
    for c, raw, scaled in ((ent, "raw_entropy", "scaled_entropy"), (top, "raw_max", "scaled_max")):
        assert c.kind == "line" and c.log_x and list(c.x) == [row[col["d"]] for row in table.rows]
        assert [s.label.en for s in c.series] == ["unscaled", "scaled"]
        assert list(c.series[0].values) == [row[col[raw]] for row in table.rows]
        assert list(c.series[1].values) == [row[col[scaled]] for row in table.rows]
    assert top.y_range == (0, 1) and ent.y_label.en == "nats"


def test_dsweep_charts_agree_with_a_plain_simulation():
    """A fresh draw of q and k written out directly: averages of 1,000 draws agree to a few hundredths."""
    result = run("dsweep")
    ent, top = chart(result, "entropy"), chart(result, "maxweight")
    dims = [int(d) for d in ent.x]
    assert dims == [8, 64, 512, 4096]
    plain = plain_sweep(dims, 1000)
    for i, d in enumerate(dims):
        for j, scaled in enumerate((False, True)):
            max_w, entropy = plain[d, scaled]
            assert top.series[j].values[i] == pytest.approx(max_w, abs=0.02), (d, scaled)
            assert ent.series[j].values[i] == pytest.approx(entropy, abs=0.02), (d, scaled)
    # the picture the chart exists for: unscaled entropy falls towards 0 while the scaled one holds
    assert ent.series[0].values[-1] < 0.1 < 0.8 < min(ent.series[1].values)


# --- params and compare: where the parameters live --------------------------------------

def plain_split(cfg):
    """embedding, attention, FFN, norms, output head, from the config's fields."""
    d, L, v, f, hd = cfg.d_model, cfg.n_layer, cfg.n_vocab, cfg.d_ff, cfg.d_head
    attention = L * (d * cfg.n_head * hd + 2 * d * cfg.n_kv_head * hd + cfg.n_head * hd * d)
    return (v * d, attention, L * 3 * d * f, L * 2 * d + d, 0 if cfg.tied_embeddings else v * d)


@pytest.mark.parametrize("preset", list(sizing.PRESETS))
def test_params_split_recomputes_and_sums_to_the_total(preset):
    result = run("params", preset=preset)
    c = chart(result, "split")
    assert c.kind == "stack" and [p.en for p in c.parts] == ["embedding", "attention", "FFN", "norms", "output head"]
    cfg = sizing.PRESETS[preset]
    shown, other = c.series
    assert shown.values == plain_split(cfg)
    assert sum(shown.values) == fact(result, "total") == sizing.PUBLISHED[preset]
    other_id = "llama3-8b" if preset == "llama2-7b" else "llama2-7b"
    assert other.values == plain_split(sizing.PRESETS[other_id])
    assert sum(other.values) == sizing.PUBLISHED[other_id]
    assert shown.label.en.split()[0] in cfg.name and other.label.en == sizing.PRESETS[other_id].name
    assert (c.note is not None) == cfg.tied_embeddings  # a tied matrix is counted once: the note says so
    if cfg.tied_embeddings:
        assert shown.values[-1] == 0 and shown.label.en in c.note.en and shown.label.zh in c.note.zh


def test_a_changed_model_is_custom_beside_llama2_7b():
    result = run("params", preset="llama2-7b", layers=2, tied="on")
    c = chart(result, "split")
    shown, other = c.series
    assert (shown.label.en, shown.label.zh) == ("custom", "自定义")
    assert shown.values == plain_split(sizing.PRESETS["llama2-7b"].with_(n_layer=2, tied_embeddings=True))
    assert sum(shown.values) == fact(result, "total")
    assert other.label.en == "Llama 2 7B" and "custom" in c.note.en and "Llama" not in c.note.en


@pytest.mark.parametrize("a, b", [("llama2-7b", "llama3-8b"), ("gemma-7b", "mistral-nemo-12b"),
                                  ("gemma-2b", "gemma-2b")])
def test_compare_split_has_its_two_models(a, b):
    result = run("compare", a=a, b=b)
    c = chart(result, "split")
    counts = result.tables[0]
    (total_row,) = [row for row in counts.rows if row[0].en == "total"]
    assert [s.values for s in c.series] == [plain_split(sizing.PRESETS[a]), plain_split(sizing.PRESETS[b])]
    assert [sum(s.values) for s in c.series] == [total_row[1], total_row[2]]
    assert (c.note is not None) == (sizing.PRESETS[a].tied_embeddings or sizing.PRESETS[b].tied_embeddings)


# --- kvcache: the cache against the context -------------------------------------------

def plain_cache_gib(cfg, kv_heads, n, batch, nbytes):
    return batch * n * 2 * cfg.n_layer * kv_heads * cfg.d_head * nbytes / 2**30


@pytest.mark.parametrize("preset, kv, context, batch, dtype, nbytes", [
    ("llama2-7b", 32, 4096, 1, "fp16", 2), ("llama2-7b", 8, 100000, 4, "int4", 0.5 + 2 / 32),
    ("llama3-8b", 8, 1, 1, "fp32", 4), ("llama2-70b", 2, 131072, 3, "int8", 1 + 2 / 32)])  # one fp16 scale per 32
def test_kvcache_growth_recomputes(preset, kv, context, batch, dtype, nbytes):
    result = run("kvcache", preset=preset, kv_heads=kv, context=context, batch=batch, dtype=dtype)
    c = chart(result, "growth")
    cfg = sizing.PRESETS[preset]
    xs = sorted({2**k for k in range(10, 18)} | {context})
    assert c.kind == "line" and c.log_x and list(c.x) == xs and c.y_label.en == "GiB"
    assert [s.label.en for s in c.series] == [f"MHA kv={cfg.n_head}", f"model kv={kv}", "MQA kv=1"]
    for s, heads in zip(c.series, (cfg.n_head, kv, 1)):
        np.testing.assert_allclose(s.values, [plain_cache_gib(cfg, heads, n, batch, nbytes) for n in xs], rtol=1e-12)
    cache = result.tables[0]  # the cache table's rows, MHA, this model, MQA, at the view's own context
    at = xs.index(context)
    assert [s.values[at] for s in c.series] == pytest.approx([row[2] / 2**30 for row in cache.rows], rel=1e-12)


def test_kv_heads_moves_only_the_middle_line():
    eight, two = (chart(run("kvcache", kv_heads=kv), "growth") for kv in (8, 2))
    assert eight.series[0].values == two.series[0].values and eight.series[2].values == two.series[2].values
    assert [a / b for a, b in zip(eight.series[1].values, two.series[1].values)] == pytest.approx([4] * len(eight.x))
    assert eight.series[1].label.zh == "本模型 kv=8" and two.series[1].label.zh == "本模型 kv=2"


# --- context: attention's share of the prefill --------------------------------------------

def plain_share_pct(cfg, n):
    d, L, hd = cfg.d_model, cfg.n_layer, cfg.d_head
    weights = L * (d * cfg.n_head * hd + 2 * d * cfg.n_kv_head * hd + cfg.n_head * hd * d + 3 * d * cfg.d_ff)
    weights += 0 if cfg.tied_embeddings else cfg.n_vocab * d  # the output head multiplies; the embedding looks up
    linear = 2 * weights * n
    attention = 4 * (n * (n + 1) // 2) * cfg.n_head * hd * L
    return 100 * attention / (linear + attention)


@pytest.mark.parametrize("preset, prompt", [("llama2-7b", 4096), ("llama3-8b", 300), ("gemma-2b", 1),
                                            ("llama3.2-1b", 200000)])
def test_context_share_recomputes(preset, prompt):
    result = run("context", preset=preset, prompt=prompt)
    c = chart(result, "share")
    xs = sorted({1024, 4096, 16384, 65536, 131072} | {prompt})
    assert c.kind == "line" and c.log_x and c.y_range == (0, 100) and list(c.x) == xs
    (s,) = c.series
    np.testing.assert_allclose(s.values, [plain_share_pct(sizing.PRESETS[preset], n) for n in xs], rtol=1e-12)
    assert s.values[xs.index(prompt)] == pytest.approx(100 * fact(result, "prompt_share"), rel=1e-12)
    assert all(a < b for a, b in zip(s.values, s.values[1:]))  # the n^2 term takes over as the prompt grows
