"""Where experts and first-time learners trip in lessons 6-8: the sliding window of Mistral 7B v0.1,
the embedding rows decode does not read, one block-scale rule for weights and cache, the 2P and 6P rules,
batched decode, and the prose that follows.

Expected figures are worked out here from the model cards with plain integer arithmetic, not with the
engine's own functions."""

import pytest
from helpers.results import column, facts, table

import engine
from engine import sizing
from lessons.loader import load_lessons
from tui.fill import fill
from tui.format import format_value, human_bytes

MIB, GIB = 2**20, 2**30


def step(lesson_id, step_id):
    lessons, _ = load_lessons()
    return next(s for s in next(x for x in lessons if x.id == lesson_id).steps if s.id == step_id)


# --- 4. Mistral 7B v0.1: a sliding window of 4,096 in 32 layers of 8 KV heads of 128 -------------------

W = 4096
MISTRAL_PER_TOKEN = 2 * 32 * 8 * 128 * 2  # fp16 K and V: 131,072 bytes


def test_mistral_preset_has_its_window():
    cfg = sizing.preset("mistral-7b")
    assert (cfg.window, cfg.n_layer, cfg.n_kv_head, cfg.d_head) == (4096, 32, 8, 128)
    assert all(sizing.preset(p).window is None for p in sizing.PRESETS if p != "mistral-7b")


@pytest.mark.parametrize("n, cached", [(1024, 1024), (4096, 4096), (4097, 4096), (32768, 4096), (131072, 4096)])
def test_the_rolling_cache_stops_at_the_window(n, cached):
    cfg = sizing.preset("mistral-7b")
    assert sizing.kv_cache_bytes(cfg, n) == cached * MISTRAL_PER_TOKEN


def test_mistral_cache_at_32k_is_512_mib_not_4_gib():
    result = engine.run_view("kvcache", {"preset": "mistral-7b", "context": "32768"})
    assert table(result, "cache").rows[1][2] == 512 * MIB == 32 * MISTRAL_PER_TOKEN * 128
    rows = dict(zip(column(result, "context", "context"), column(result, "context", "cache")))
    assert rows[32768] == rows[131072] == 512 * MIB and rows[1024] == 128 * MIB
    assert human_bytes(rows[32768]) == "512 MiB"
    assert facts(result)["windowed"] is True and facts(result)["window_cache"] == 512 * MIB


def test_windowed_pairs_sum_the_cap():
    n = 32768
    expected = sum(min(i, W) for i in range(1, n + 1))
    assert expected == W * (W + 1) // 2 + (n - W) * W == 125_831_168
    assert sizing.causal_pairs(n, W) == expected and sizing.causal_pairs(n) == n * (n + 1) // 2 == 536_887_296
    assert sizing.causal_pairs(W, W) == W * (W + 1) // 2
    result = engine.run_view("context", {"preset": "mistral-7b", "prompt": str(n)})
    rows = dict(zip(column(result, "prefill", "n"), column(result, "prefill", "scores")))
    assert rows[n] == 125_831_168 and rows[1024] == 1024 * 1025 // 2
    f = facts(result)
    assert f["prompt_pairs"] == 125_831_168 and f["prompt_full_pairs"] == 536_887_296
    assert f["reach"] == 4096 * 32  # a window per layer
    assert f["prompt_cut"] is True  # and at the window itself it has cut nothing: no "N pairs, not N"
    assert facts(engine.run_view("context", {"preset": "mistral-7b", "prompt": "4096"}))["prompt_cut"] is False


def test_the_window_step_says_so_in_both_languages():
    s = step("context", "window")
    result = engine.run_view("context", {"preset": "mistral-7b", "prompt": "32768"})
    en, zh = fill(s.text("en"), result, "en"), fill(s.text("zh"), result, "zh")
    assert "125,831,168" in en and "536,887,296" in en and "131,072" in en
    assert "125,831,168" in zh and "536,887,296" in zh and "131,072" in zh
    kv = step("kvcache", "window")
    result = engine.run_view("kvcache", {"preset": "mistral-7b"})
    assert "512 MiB" in fill(kv.text("en"), result, "en") and "512 MiB" in fill(kv.text("zh"), result, "zh")


# --- 5. decode reads one row of an untied embedding --------------------------------------------------

@pytest.mark.parametrize("preset, d, v, total, overcount", [
    ("llama2-7b", 4096, 32000, 6_738_415_616, "1.9 %"), ("llama3-8b", 4096, 128256, 8_030_261_248, "6.5 %")])
def test_decode_reads_one_embedding_row(preset, d, v, total, overcount):
    cfg = sizing.preset(preset)
    read = total - v * d + d
    assert sizing.decode_weight_bytes(cfg, "fp16") == 2 * read
    assert format_value((total - read) / total, "pct", "en") == overcount  # what "every weight" overstated
    f = facts(engine.run_view("context", {"preset": preset}))
    assert f["weights"] == 2 * read and f["stored"] == 2 * total and f["embedding_unread"] == 2 * (v - 1) * d


def test_a_tied_embedding_is_read_whole():
    cfg = sizing.preset("llama3.2-1b")
    assert cfg.tied_embeddings and sizing.decode_weight_bytes(cfg) == sizing.stored_weight_bytes(cfg)


# --- 6. one block-scale rule for weights and the KV cache --------------------------------------------

@pytest.mark.parametrize("dtype, head_bytes, bits", [("fp16", 256, 16), ("int8", 128 + 4 * 2, 8.5),
                                                     ("int4", 64 + 4 * 2, 4.5)])
def test_cache_blocks_carry_scales_like_weights(dtype, head_bytes, bits):
    cfg = sizing.preset("llama2-7b")  # head_dim 128: four blocks of 32, one fp16 scale each
    assert sizing.kv_bytes_per_token(cfg, dtype) == 2 * 32 * 32 * head_bytes
    assert sizing.bits_per_weight(dtype) == bits
    f = facts(engine.run_view("kvcache", {"dtype": dtype}))
    assert f["cache_bits"] == bits


# --- 3. the FLOP rules -------------------------------------------------------------------------------

def test_two_p_and_six_p():
    f = facts(engine.run_view("context"))
    p = 6_738_415_616
    assert f["forward_gflop"] == pytest.approx(2 * p / 1e9) and f["train_gflop"] == pytest.approx(6 * p / 1e9)
    shown = [format_value(g, ",.1f", "en") for g in column(engine.run_view("context"), "flops", "gflop")]
    matmul = 32 * (4 * 4096**2 + 3 * 4096 * 11008) + 32000 * 4096
    attention = 4 * 4097 * 32 * 128 * 32  # the new token's q.k and sum over v for 4,097 keys
    assert shown == ["13.5", format_value(2 * matmul / 1e9, ",.1f", "en"),
                     format_value(attention / 1e9, ",.1f", "en"), "40.4"]


# --- 2. batched decode on one GPU ---------------------------------------------------------------------

BW, PEAK = 3350e9, 989e12


def plain_step(preset, n, b):
    cfg = sizing.preset(preset)
    p, v, d = sizing.total_params(cfg), cfg.n_vocab, cfg.d_model
    matmul = p - v * d - (2 * cfg.n_layer + 1) * d
    read = 2 * (p - (v - min(b, v)) * d) + b * 2 * 2 * cfg.n_layer * cfg.n_kv_head * cfg.d_head * n
    flops = b * (2 * matmul + 4 * (n + 1) * cfg.n_head * cfg.d_head * cfg.n_layer)
    return read / BW, flops / PEAK


def test_batch_table_recomputes():
    result = engine.run_view("context", {"batch": "16"})
    batches = column(result, "batch", "batch")
    assert batches == [1, 4, 16, 64, 256, 1024]
    each, total = column(result, "batch", "tps_seq"), column(result, "batch", "tps_all")
    for b, e, t in zip(batches, each, total):
        seconds = max(plain_step("llama2-7b", 4096, b))
        assert e == pytest.approx(1 / seconds, rel=1e-12) and t == pytest.approx(b / seconds, rel=1e-12)
    assert each == sorted(each, reverse=True) and total == sorted(total)  # each slows, the batch gains
    assert [m.en for m in column(result, "batch", "bound")] == ["memory"] * 6
    f = facts(result)
    assert f["binds"] is False and f["batch_tps"] == pytest.approx(each[2])


def test_compute_binds_only_when_the_caches_are_small():
    # Llama 3 8B at 128 tokens: each sequence's FLOPs outlast its cache's bytes, so a big batch binds
    binds = sizing.compute_binds_from(sizing.preset("llama3-8b"), 128, BW, PEAK)
    memory, compute = plain_step("llama3-8b", 128, binds)
    assert compute > memory
    memory, compute = plain_step("llama3-8b", 128, binds - 1)
    assert compute <= memory
    assert binds == 438
    f = facts(engine.run_view("context", {"preset": "llama3-8b", "prompt": "128", "batch": "1024"}))
    assert f["binds"] is True and f["binds_at"] == 438 and f["batch_compute"] is True
    assert sizing.compute_binds_from(sizing.preset("llama2-7b"), 4096, BW, PEAK) is None


# --- 8 and 10: key 1 always changes the chart step's prose; one unit for memory ---------------------------

def test_every_press_of_key_1_shows_on_the_chart_step():
    s = step("context", "share")
    texts = [fill(s.text("en"), engine.run_view("context", {"prompt": str(n)}), "en")
             for n in (4096, 32768, 200000)]
    assert len(set(texts)) == 3  # so the app never calls the next value "the same numbers", and 200000 wraps


def test_the_cache_reads_the_same_in_gib_on_every_step():
    result = engine.run_view("context")
    rows = dict(zip(column(result, "prefill", "n"), column(result, "prefill", "cache")))
    for s in ("prefill", "decode"):
        assert "2 GiB" in fill(step("context", s).text("en"), result, "en") or s == "prefill"
    assert human_bytes(rows[4096]) == "2 GiB" and human_bytes(facts(result)["cache"]) == "2 GiB"
    for s in step("context", "decode"), step("context", "batch"):
        assert " GB " not in fill(s.text("en"), result, "en")


def test_the_kvcache_lesson_explains_the_mask():
    s = step("kvcache", "why")
    assert s.view == "mask" and "lesson 3" in s.text("en") and "第 3 课" in s.text("zh")
