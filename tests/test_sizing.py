"""Parameter counts: itemised, summed, and checked against published totals."""

import pytest

import engine
from engine import sizing

# Published totals, written out here rather than read from the engine, so the check is independent.
PUBLISHED = {
    "llama2-7b": 6_738_415_616, "llama2-13b": 13_015_864_320, "llama2-70b": 68_976_648_192,
    "llama3-8b": 8_030_261_248, "llama3-70b": 70_553_706_496,
    "llama3.2-1b": 1_235_814_400, "llama3.2-3b": 3_212_749_824,
    "mistral-7b": 7_241_732_096, "mistral-nemo-12b": 12_247_782_400,
    "gemma-2b": 2_506_172_416, "gemma-7b": 8_537_680_896, "tinyllama-1.1b": 1_100_048_384,
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_preset_matches_its_published_total(name):
    cfg = sizing.PRESETS[name]
    assert engine.total_params(cfg) == PUBLISHED[name] == sizing.PUBLISHED[name]


def test_every_preset_is_checked():
    assert set(sizing.PRESETS) == set(PUBLISHED)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_itemised_count_sums_to_the_total(name):
    cfg = sizing.PRESETS[name]
    items = engine.param_count(cfg)
    assert sum(items.values()) == engine.total_params(cfg)
    assert {"embedding", "norm/final", "norm/attention", "norm/ffn", "output"} <= items.keys()
    assert sum(engine.group_shares(cfg).values()) == pytest.approx(1.0)


def test_tied_embeddings_drop_the_output_head():
    cfg = sizing.PRESETS["llama2-7b"]
    assert engine.total_params(cfg) - engine.total_params(cfg.with_(tied_embeddings=True)) == 32000 * 4096


@pytest.mark.parametrize("name, head_dim", [("gemma-7b", 256), ("mistral-nemo-12b", 128)])
def test_head_dim_may_differ_from_d_model_over_heads(name, head_dim):
    cfg = sizing.PRESETS[name]
    assert cfg.d_head == head_dim != cfg.d_model // cfg.n_head
    assert sizing.layer_params(cfg)["attention/q"] == cfg.d_model * cfg.n_head * head_dim


def test_counts_are_exact_python_ints_at_any_size():
    cfg = engine.ModelConfig(d_model=2**20, n_layer=2**20, n_head=2**10, n_kv_head=2**10, d_ff=2**20,
                             n_vocab=2**20)
    total = engine.total_params(cfg)
    assert isinstance(total, int) and total > 2**60


@pytest.mark.parametrize("changes, words", [
    (dict(n_head=3), "does not divide"),
    (dict(n_kv_head=5), "must divide"),
    (dict(n_layer=0), "between 1 and"),
    (dict(d_ff=-4), "between 1 and"),
    (dict(n_vocab=2**21), "between 1 and"),
])
def test_bad_configs_are_refused(changes, words):
    with pytest.raises(engine.ParamError, match=words) as err:
        sizing.PRESETS["llama2-7b"].with_(**changes)
    assert err.value.zh  # every refusal is worded in both languages


def test_int4_halves_int8():
    cfg = sizing.PRESETS["llama3-8b"]
    assert engine.weight_bytes(cfg, "int4") * 2 == engine.weight_bytes(cfg, "int8") == engine.total_params(cfg)
    with pytest.raises(engine.ParamError):
        engine.weight_bytes(cfg, "fp8")


def test_unknown_preset_lists_the_names():
    with pytest.raises(engine.ParamError, match="llama2-7b"):
        engine.preset("gpt-5")
