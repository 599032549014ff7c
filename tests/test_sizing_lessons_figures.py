"""The figures of lessons 6-8 (params, kvcache, context): causal prefill counts, MHA/MQA weights beside the
cache, int4 with its scales, the decode ceiling with the KV cache read, and contexts beyond what a model was
trained for.

Every expected figure is recomputed here with plain integer arithmetic from the model card, not with
the engine's own functions."""

import pytest
from helpers.results import column, facts, table

import engine
from engine import sizing
from lessons.loader import load_lessons
from tui.fill import fill
from tui.format import format_value, human_bytes

# Llama 2 7B, written out: d_model, layers, heads, head_dim, FFN width, vocabulary
D, L, H, HD, F, V = 4096, 32, 32, 128, 11008, 32000
TOTAL = 6_738_415_616
MATMUL = L * (4 * D * D + 3 * D * F) + V * D  # every weight a token multiplies: layers and output head
GIB = 2**30


# --- 2. prefill: count what a causal kernel computes ---------------------------------------------

def test_plain_sum_matches_the_published_total():
    norms = 2 * L * D + D
    assert MATMUL + V * D + norms == TOTAL  # the embedding is a lookup, the norms are not matmuls


def test_prefill_counts_the_causal_pairs():
    result = engine.run_view("context")
    ns = column(result, "prefill", "n")
    assert ns == [1024, 4096, 16384, 65536, 131072]
    assert column(result, "prefill", "scores") == [n * (n + 1) // 2 for n in ns]
    shares, tflops = [], []
    for n in ns:
        linear = 2 * MATMUL * n
        attn = 4 * (n * (n + 1) // 2) * H * HD * L  # q.k and the weighted sum of v, 2 FLOPs per dim each
        shares.append(attn / (linear + attn))
        tflops.append((linear + attn) / 1e12)
    assert column(result, "prefill", "share") == pytest.approx(shares, rel=1e-12)
    assert column(result, "prefill", "tflops") == pytest.approx(tflops, rel=1e-12)
    shown = [format_value(s, "pct", "en") for s in column(result, "prefill", "share")]
    assert shown == ["2.0 %", "7.5 %", "24.5 %", "56.5 %", "72.2 %"]  # the figures
    # not the all-pairs shares the step used to show
    assert shown != ["3.9 %", "14.0 %", "39.4 %", "72.2 %", "83.9 %"]


def test_the_prompt_fact_is_causal_too():
    n = 32768
    f = facts(engine.run_view("context", {"prompt": str(n)}))
    attn = 2 * n * (n + 1) * H * HD * L
    assert f["prompt_share"] == pytest.approx(attn / (attn + 2 * MATMUL * n), rel=1e-12)


# --- 8. kvcache: MHA and MQA change W_k and W_v as well as the cache ----------------------------

def test_mha_to_mqa_splits_into_cache_and_weights():
    result = engine.run_view("kvcache")
    rows = table(result, "memory").rows
    cache_mha = 2 * L * H * HD * 2 * 4096
    cache_mqa = 2 * L * 1 * HD * 2 * 4096
    weights_mha = TOTAL * 2
    weights_mqa = (TOTAL - 2 * L * D * (H - 1) * HD) * 2  # W_k and W_v keep one head of 32
    assert [r[1:] for r in rows] == [(weights_mha, cache_mha, weights_mha + cache_mha),
                                     (weights_mha, cache_mha, weights_mha + cache_mha),
                                     (weights_mqa, cache_mqa, weights_mqa + cache_mqa)]
    assert human_bytes(weights_mha + cache_mha) == "14.55 GiB" and human_bytes(weights_mqa + cache_mqa) == "10.68 GiB"
    f = facts(result)
    assert f["saved_cache"] == cache_mha - cache_mqa == 2_080_374_784
    assert f["saved_weights"] == weights_mha - weights_mqa == 2_080_374_784
    assert human_bytes(f["saved_cache"]) == human_bytes(f["saved_weights"]) == "1.94 GiB"
    # the two halves are equal only at 4,096 tokens (= d_model): at 32k the cache saving is 8 times larger
    f = facts(engine.run_view("kvcache", {"context": "32768"}))
    assert f["saved_cache"] == 8 * 2_080_374_784 and f["saved_weights"] == 2_080_374_784


def test_the_cache_steps_show_no_weights():
    """Steps 1-2 show the cache table, which no longer mixes in each variant's own weights."""
    cache = table(engine.run_view("kvcache"), "cache")
    assert [c.key for c in cache.columns] == ["variant", "per_token", "cache"]
    lessons, _ = load_lessons()
    kv = next(x for x in lessons if x.id == "kvcache")
    assert [s.tables for s in kv.steps if s.id in ("per-token", "gqa")] == [("cache",), ("cache",)]


def test_the_memory_step_says_the_split():
    lessons, _ = load_lessons()
    step = next(s for s in next(x for x in lessons if x.id == "kvcache").steps if s.id == "total")
    result = engine.run_view(step.view, step.params)
    for lang in ("en", "zh"):
        text = fill(step.text(lang), result, lang)
        assert "14.55 GiB" in text and "10.68 GiB" in text and text.count("1.94 GiB") == 2


# --- 12. int4 with its scales, and the decode ceiling with the cache read -----------------------

def test_quantised_weights_carry_one_fp16_scale_per_32():
    rows = {str(r[0]): r[1:] for r in table(engine.run_view("params"), "memory").rows}
    blocks = TOTAL // 32  # 6,738,415,616 is a multiple of 32
    assert TOTAL % 32 == 0
    assert rows["int4"][1] == TOTAL // 2 + 2 * blocks == 3_790_358_784
    assert rows["int8"][1] == TOTAL + 2 * blocks == 7_159_566_592
    assert rows["int4"][0] == 4.5 and rows["int8"][0] == 8.5  # bits a weight, the scale included
    assert human_bytes(rows["int4"][1]) == "3.53 GiB"
    assert rows["fp16"][1] == TOTAL * 2 and human_bytes(rows["fp16"][1]) == "12.55 GiB"  # FIGURES.md
    f = facts(engine.run_view("params"))
    assert f["int4_bare"] == TOTAL // 2 and human_bytes(f["int4_bare"]) == "3.14 GiB"  # the old figure
    assert f["int4_scales"] == 2 * blocks
    # the weights alone are unchanged: the workbench and the FIGURES pins still read them
    assert engine.weight_bytes(sizing.PRESETS["llama2-7b"], "int4") == TOTAL // 2


READ = TOTAL - V * D + D  # a new token reads every matrix but only its own row of the (untied) embedding


@pytest.mark.parametrize("dtype, weight_bytes", [("fp16", READ * 2), ("int8", READ + READ // 16),
                                                 ("int4", READ // 2 + READ // 16)])
@pytest.mark.parametrize("prompt", [4096, 32768])
def test_decode_ceiling_reads_weights_and_cache(dtype, weight_bytes, prompt):
    result = engine.run_view("context", {"dtype": dtype, "prompt": str(prompt)})
    cache = 2 * L * H * HD * 2 * prompt  # fp16 K and V of every token so far
    bandwidths = [50e9, 100e9, 400e9, 1000e9, 3350e9]
    assert column(result, "decode", "tps_weights") == pytest.approx([b / weight_bytes for b in bandwidths],
                                                                    rel=1e-12)
    assert column(result, "decode", "tps") == pytest.approx([b / (weight_bytes + cache) for b in bandwidths],
                                                            rel=1e-12)
    f = facts(result)
    assert f["weights"] == weight_bytes and f["cache"] == cache


def test_decode_figures_at_the_defaults():
    tps = column(engine.run_view("context"), "decode", "tps")
    # every matrix, one embedding row and 2 GiB of cache: 15,362,179,072 bytes a token
    assert [format_value(t, ",.1f", "en") for t in tps] == ["3.3", "6.5", "26.0", "65.1", "218.1"]


# --- 9. contexts beyond what the model was trained for ------------------------------------------

TRAINED = {"llama2-7b": 4096, "llama2-13b": 4096, "llama2-70b": 4096, "llama3-8b": 8192,
           "llama3-70b": 131072, "llama3.2-1b": 131072, "llama3.2-3b": 131072, "mistral-7b": 8192,
           "mistral-nemo-12b": 131072, "gemma-2b": 8192, "gemma-7b": 8192, "tinyllama-1.1b": 2048}


def test_every_preset_has_a_trained_context():
    assert sizing.TRAINED_CONTEXT == TRAINED and set(TRAINED) == set(sizing.PRESETS)


@pytest.mark.parametrize("preset", ["llama2-7b", "llama3-8b", "llama3-70b"])
def test_the_cache_sweep_marks_rows_beyond_training(preset):
    result = engine.run_view("kvcache", {"preset": preset})
    marks = [m.en for m in column(result, "context", "trained")]
    assert marks == ["beyond" if n > TRAINED[preset] else "within" for n in (1024, 4096, 8192, 32768, 131072)]
    assert [m.zh for m in column(result, "context", "trained")] == \
        ["超出" if m == "beyond" else "以内" for m in marks]
    assert str(TRAINED[preset]) in table(result, "context").columns[-1].label.en.replace(",", "")


def test_llama2_7b_at_32k_is_beyond_and_says_so():
    result = engine.run_view("kvcache", {"context": "32768"})
    assert facts(result)["beyond"] is True and facts(result)["trained"] == 4096
    assert facts(engine.run_view("kvcache"))["beyond"] is False
    lessons, _ = load_lessons()
    step = next(x for x in lessons if x.id == "kvcache").steps[0]
    en, zh = fill(step.text("en"), result, "en"), fill(step.text("zh"), result, "zh")
    assert "4,096" in en and "trained" in en and "4,096" in zh and "训练" in zh


def test_the_prefill_table_marks_an_added_length():
    result = engine.run_view("context", {"prompt": "200000"})
    rows = dict(zip(column(result, "prefill", "n"), column(result, "prefill", "trained")))
    assert [rows[n].en for n in sorted(rows)] == ["within", "within", "beyond", "beyond", "beyond", "beyond"]
    assert facts(result)["prompt_beyond"] is True
    rows = dict(zip(column(engine.run_view("context", {"preset": "llama3-8b"}), "prefill", "n"),
                    column(engine.run_view("context", {"preset": "llama3-8b"}), "prefill", "trained")))
    assert rows[4096].en == "within" and rows[16384].en == "beyond"
