"""Every figure in shared/FIGURES.md, pinned to its shown precision, computed through the engine."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

import engine
from engine import sizing
from tui.format import format_value, human_bytes

SIN_10000 = [
    [+0.000, +1.000, +0.000, +1.000, +0.000, +1.000, +0.000, +1.000],
    [+0.841, +0.540, +0.100, +0.995, +0.010, +1.000, +0.001, +1.000],
    [+0.909, -0.416, +0.199, +0.980, +0.020, +1.000, +0.002, +1.000],
    [+0.141, -0.990, +0.296, +0.955, +0.030, +1.000, +0.003, +1.000],
]


def test_sinusoidal_table_base_10000():
    assert_allclose(np.round(engine.sinusoidal_positions(4, 8), 3), SIN_10000, atol=1e-12)


def test_sinusoidal_rows_base_100():
    pe = np.round(engine.sinusoidal_positions(4, 8, base=100.0), 3)
    assert_allclose(pe[1], [0.841, 0.540, 0.311, 0.950, 0.100, 0.995, 0.032, 1.000], atol=1e-12)
    assert_allclose(pe[3], [0.141, -0.990, 0.813, 0.583, 0.296, 0.955, 0.095, 0.996], atol=1e-12)


def test_the_table_shows_signed_three_decimals():
    rows = engine.run_view("positional").tables[0].rows
    cells = [[format_value(v, "+.3f", "en") for v in row[1:]] for row in rows]
    assert cells[0] == ["+0.000", "+1.000"] * 4
    assert cells[2][:2] == ["+0.909", "-0.416"]


@pytest.mark.parametrize("base, expected", [(10000.0, [6.28, 62.8, 628, 6283]), (100.0, [6.28, 19.9, 62.8, 199])])
def test_wavelengths(base, expected):
    waves = engine.wavelengths(8, base)
    assert [float(f"{w:.3g}") if w < 1000 else round(w) for w in waves] == expected


def test_cat_softmax_is_not_the_illustration():
    assert_allclose(np.round(engine.cat_demo(), 3), [0.039, 0.708, 0.236, 0.018], atol=1e-12)
    assert not np.allclose(engine.cat_demo(), engine.demos.CAT_ILLUSTRATION, atol=0.01)


def test_cat_softmax_with_the_causal_mask():
    w = engine.cat_demo(causal=True)
    assert_allclose(np.round(w[:3], 3), [0.040, 0.721, 0.240], atol=1e-12)
    assert w[3] == 0.0


def test_attention_demo_at_the_documented_seed():
    """README and the lesson quote these four numbers for seed 0."""
    demo = engine.attention_demo(d=8, seed=engine.DEMO_SEED)
    got = [demo.raw.max_weight, demo.raw.mean_entropy, demo.scaled.max_weight, demo.scaled.mean_entropy]
    assert_allclose(np.round(got, 3), [0.941, 0.616, 0.631, 0.982], atol=1e-12)


def test_d_sweep_unscaled_collapses_scaled_holds():
    rows = engine.d_sweep(draws=1000)
    assert [r.d for r in rows] == [8, 64, 512, 4096]
    raw_max = [r.raw.max_weight for r in rows]
    raw_ent = [r.raw.mean_entropy for r in rows]
    assert raw_max == sorted(raw_max) and raw_max[-1] > 0.999
    assert raw_ent == sorted(raw_ent, reverse=True) and raw_ent[-1] < 0.05
    scaled_max = [r.scaled.max_weight for r in rows]
    scaled_ent = [r.scaled.mean_entropy for r in rows]
    assert max(scaled_max) - min(scaled_max) < 0.03  # the scaled weights stay put at every d
    assert max(scaled_ent) - min(scaled_ent) < 0.03
    assert min(scaled_ent) > 0.8


@pytest.mark.parametrize("d", [8, 64, 512, 4096])
def test_q_and_k_have_unit_variance_at_any_d(d):
    """The demo's own q and k, over many seeds, have unit-variance entries: the sqrt(d) argument needs it."""
    demos = [engine.attention_demo(d=d, seed=s) for s in range(max(20, 8000 // d))]
    q = np.concatenate([demo.q.ravel() for demo in demos])
    k = np.concatenate([demo.k.ravel() for demo in demos])
    assert abs(np.var(q) - 1.0) < 0.1 and abs(np.var(k) - 1.0) < 0.1
    scores = np.concatenate([demo.scores.ravel() for demo in demos])
    assert abs(np.var(scores) / d - 1.0) < 0.35  # q.k has variance d: what dividing by sqrt(d) undoes


def test_llama2_7b_table():
    cfg = sizing.PRESETS["llama2-7b"]
    rows = {r[0].en: r[1] for r in engine.run_view("params").tables[0].rows}
    assert rows["attention W_q, W_k, W_v, W_o"] == 67_108_864 == 4 * 4096**2
    assert rows["FFN gate, up, down"] == 135_266_304
    assert rows["one layer, matrices"] == 202_375_168
    assert rows["32 layers"] == 6_476_005_376
    assert rows["token embedding"] == rows["output head"] == 131_072_000
    assert rows["total without norms"] == 6_738_149_376
    assert rows["RMSNorm weights, 2 per layer"] == 262_144
    assert rows["final RMSNorm"] == 4_096
    assert rows["total"] == engine.total_params(cfg) == 6_738_415_616
    assert rows["total"] - rows["total without norms"] == 266_240  # not 262,144: the final norm counts too


def test_llama2_7b_rows_in_yi():
    rows = engine.run_view("params").tables[0].rows
    shown = [format_value(n, "short", "zh") for _, n, _ in rows]
    for value in ("0.67 亿", "1.35 亿", "2.02 亿", "64.76 亿", "1.31 亿", "67.38 亿"):
        assert value in shown
    assert shown[-1] == "67.38 亿"


def test_llama2_7b_fp16_weights():
    b = engine.weight_bytes(sizing.PRESETS["llama2-7b"], "fp16")
    assert b == 6_738_415_616 * 2 and human_bytes(b) == "12.55 GiB"


def test_llama3_8b_figures_as_printed():
    rows = {r[0].en: r[2] for r in engine.run_view("compare").tables[0].rows}
    assert rows["attention, one layer"] == 41_943_040 and rows["FFN, one layer"] == 176_160_768
    assert rows["attention, all layers"] == 1_342_177_280 and rows["FFN, all layers"] == 5_637_144_576
    assert rows["embedding + output"] == 1_050_673_152 and rows["norms"] == 266_240
    assert rows["total"] == 8_030_261_248
    memory = {r[0].en: r[1:] for r in engine.run_view("compare").tables[1].rows}
    assert [human_bytes(b) for b in memory["KV cache per token, fp16"]] == ["512 KiB", "128 KiB"]
    assert [human_bytes(b) for b in memory["KV cache at 8,192 tokens"]][1] == "1 GiB"
    assert memory["the same with MHA"][1] == 4 * memory["KV cache per token, fp16"][1]


def test_llama3_8b_figures():
    cfg = sizing.PRESETS["llama3-8b"]
    per_layer = sizing.layer_params(cfg)
    attn = sum(v for k, v in per_layer.items() if k.startswith("attention/"))
    ffn = sum(v for k, v in per_layer.items() if k.startswith("ffn/"))
    items = engine.param_count(cfg)
    assert attn == 41_943_040 and ffn == 176_160_768
    assert 32 * attn == 1_342_177_280 and 32 * ffn == 5_637_144_576
    assert items["embedding"] + items["output"] == 1_050_673_152
    assert sum(v for k, v in items.items() if k.startswith("norm/")) == 266_240
    assert engine.total_params(cfg) == 8_030_261_248


@pytest.mark.parametrize("name, attention, ffn, embeddings",
                         [("llama2-7b", "31.9 %", "64.2 %", "3.9 %"), ("llama3-8b", "16.7 %", "70.2 %", "13.1 %")])
def test_shares(name, attention, ffn, embeddings):
    shares = engine.group_shares(sizing.PRESETS[name])
    assert [format_value(shares[g], "pct", "en") for g in ("attention", "ffn", "embeddings")] == \
        [attention, ffn, embeddings]


def test_swiglu_widths():
    assert sizing.swiglu_widths(4096, 256) == (10922, 10922, 11008)
    assert sizing.swiglu_widths(4096, 1024, 1.3) == (10922, 14198, 14336)
    assert engine.swiglu_hidden(4096, 256) == sizing.PRESETS["llama2-7b"].d_ff
    assert engine.swiglu_hidden(4096, 1024, 1.3) == sizing.PRESETS["llama3-8b"].d_ff


def test_kv_cache_llama2_7b():
    cfg = sizing.PRESETS["llama2-7b"]
    assert engine.kv_bytes_per_token(cfg) == 524_288 and human_bytes(524_288) == "512 KiB"
    assert engine.kv_cache_bytes(cfg, 4096) == 2 * 2**30


def test_kv_cache_llama3_8b_gqa():
    cfg = sizing.PRESETS["llama3-8b"]
    assert engine.kv_bytes_per_token(cfg) == 131_072 and human_bytes(131_072) == "128 KiB"
    assert engine.kv_cache_bytes(cfg, 8192) == 2**30
    assert engine.kv_bytes_per_token(cfg.with_(n_kv_head=32)) == 4 * engine.kv_bytes_per_token(cfg)


def test_rope_pairs_give_one_score():
    rows = engine.rope_demo()
    assert [(r.m, r.n) for r in rows] == [(1, 3), (5, 7), (10, 12)]
    scores = [r.rope_score for r in rows]
    assert_allclose(scores, scores[0], rtol=0, atol=1e-12)
    added = [r.additive_score for r in rows]
    assert max(added) - min(added) > 0.1  # adding positions instead does depend on where the pair sits
