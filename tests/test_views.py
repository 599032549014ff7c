"""Views: every one runs, refuses what it must, and keeps its table cells a fixed width."""

import re
import unicodedata

import pytest
from helpers.marks import with_real_marks

import engine
from engine.views import VIEWS
from tui.format import format_value

LANGS = ("zh", "en")
SAME_IN_BOTH = {"softmax", "sqrt", "RoPE", "gate", "silu", "TFLOPs", "dtype", "model", "head", "dim", "Llama",
                "Gemma", "Mistral", "NeMo", "TinyLlama", "owes", "Alice", "Bob", "TFLOP",
                "bos", *__import__("engine.corpus").corpus.VOCAB,  # the tiny grammar's words are data
                "The", "capi", "France", "Fran", "logit"}  # and the real model's prompt (its tokens head columns)
VARIANTS = [(v, {}) for v in VIEWS] + [
    ("positional", {"base": "100"}), ("positional", {"d": "64", "n": "12"}), ("attention", {"d": "4096"}),
    ("attention", {"causal": "on"}), ("heads", {"heads": "8"}), ("cat", {"causal": "on"}),
    ("residual", {"residual": "off"}), ("permutation", {"positions": "on"}), ("params", {"preset": "gemma-7b"}),
    ("kvcache", {"kv_heads": "8", "context": "32768"}), ("ffn-width", {"multiplier": "1.3", "multiple_of": "1024"}),
    ("swiglu", {"seed": "2"}),
    ("real-tokens", {"prompt": "法国的首都是 1,000 café"}), ("real-attention", {"layer": "16", "head": "8"}),
    ("real-next", {"temperature": "0", "top_k": "5"}),
]


def real(case) -> bool:
    return VIEWS[case[0] if isinstance(case, tuple) else case].model


def cells(result, lang):
    """Every string a table shows: titles, headers, formatted cells."""
    for table in result.tables:
        yield table.title(lang)
        for col in table.columns:
            yield col.label(lang)
        for row in table.rows:
            for value, col in zip(row, table.columns):
                yield format_value(value, col.fmt, lang)


@pytest.mark.parametrize("view_id, settings", with_real_marks(VARIANTS, real))
def test_view_runs_and_rows_fit_columns(view_id, settings):
    result = engine.run_view(view_id, settings)
    assert result.view == view_id and result.tables
    for table in result.tables:
        assert table.rows and all(len(row) == len(table.columns) for row in table.rows)
    for name, raw in settings.items():  # the settings line shows what was asked for
        assert result.params[name] == VIEWS[view_id].param(name).parse(raw)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("view_id, settings", with_real_marks(VARIANTS, real))
def test_no_ambiguous_width_characters_in_tables(view_id, settings, lang):
    for text in cells(engine.run_view(view_id, settings), lang):
        bad = [c for c in text if unicodedata.east_asian_width(c) == "A"]
        assert not bad, f"{view_id}: {text!r} holds ambiguous-width {bad}"


@pytest.mark.parametrize("view_id", with_real_marks(list(VIEWS), real))
def test_every_text_exists_in_both_languages(view_id):
    view = VIEWS[view_id]
    result = view.run()
    texts = [view.title] + [p.help for p in view.params]
    texts += [t.title for t in result.tables] + [c.label for t in result.tables for c in t.columns]
    texts += [f.label for f in result.facts]
    for text in texts:
        assert text.zh and text.en, text
        if text.zh == text.en:  # the same text in both languages is fine only for symbols and names
            words = set(re.findall(r"[A-Za-z]{3,}", text.en)) - SAME_IN_BOTH
            assert not words, f"{view_id}: {text.en!r} reads as English in zh"


@pytest.mark.parametrize("view_id, settings, words", [
    ("positional", {"n": "100000", "d": "1000"}, "64 MiB"),
    ("positional", {"n": "3000000", "d": "2"}, "64 MiB"),
    ("attention", {"d": "10000000"}, "64 MiB"),
    ("rope", {"d": "10000000"}, "64 MiB"),
    ("permutation", {"d": "4096"}, "64 MiB"),
])
def test_oversized_demos_are_refused(view_id, settings, words):
    with pytest.raises(engine.SizeError, match=words) as err:
        engine.run_view(view_id, settings)
    assert "64 MiB" in err.value.zh


@pytest.mark.parametrize("view_id, settings, words", [
    ("positional", {"d": "7"}, "even whole number"),
    ("positional", {"base": "abc"}, "must be a number"),
    ("positional", {"n": "0"}, "from 1"),
    ("attention", {"d": "-8"}, "from 1"),
    ("attention", {"causal": "maybe"}, "on or off"),
    ("heads", {"heads": "3"}, "does not divide"),
    ("heads", {"heads": "2.5"}, "whole number"),
    ("params", {"preset": "gpt-9"}, "one of"),
    ("params", {"heads": "7"}, "does not divide"),
    ("kvcache", {"kv_heads": "5"}, "must divide"),
    ("dsweep", {"draws": "10"}, "from 1,000"),
    ("cat", {"nope": "1"}, "no parameter"),
])
def test_bad_settings_are_refused_in_both_languages(view_id, settings, words):
    with pytest.raises(engine.ParamError, match=words) as err:
        engine.run_view(view_id, settings)
    assert err.value.zh and err.value.zh != err.value.en


def test_unknown_view_lists_the_ids():
    with pytest.raises(engine.ParamError, match="positional"):
        engine.get_view("nope")


def test_heads_parameter_count_does_not_change():
    four, eight = (engine.run_view("heads", {"heads": h}) for h in ("4", "8"))
    counts = [{f.key: f.value for f in r.facts}["layer_params"] for r in (four, eight)]
    assert counts == [4096, 4096]
    assert len(four.tables[0].rows) == 4 and len(eight.tables[0].rows) == 8


def test_params_view_overrides_fields_of_the_preset():
    result = engine.run_view("params", {"preset": "llama2-7b", "layers": "40"})
    total = {f.key: f.value for f in result.facts}["total"]
    assert result.params["layers"] == 40
    assert total == engine.total_params(engine.PRESETS["llama2-7b"].with_(n_layer=40))
    assert {f.key: f.value for f in result.facts}["matches"] is False  # a changed model is not the published one


def test_huge_tables_show_a_bounded_number_of_rows():
    """Rendering is part of the budget: a million positions print 16 rows, not a million."""
    result = engine.run_view("positional", {"n": "1000000", "d": "2"})
    table = result.tables[0]
    assert len(table.rows) == 16 and table.rows[-1][0] == 999_999
    assert "1,000,000" in table.note.en and "1,000,000" in table.note.zh


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("view_id, settings", with_real_marks(
    VARIANTS + [("mask", {"n": "10"}), ("heads", {"n": "8", "heads": "8"})], real))
def test_every_table_fits_80_cells_unsqueezed(view_id, settings, lang):
    """Measured at its natural width, so Rich cannot hide an overflow by wrapping cells."""
    from rich.cells import cell_len

    from tui.layout.tables import table_width
    for table in engine.run_view(view_id, settings).tables:
        assert table_width(table, lang) <= 80 and cell_len(table.title(lang)) <= 80, (view_id, table.key)


@pytest.mark.parametrize("settings", [{"n": "11"}, {"n": "0"}])
def test_mask_refuses_sizes_that_would_not_fit(settings):
    with pytest.raises(engine.ParamError, match="from 1 to 10"):
        engine.run_view("mask", settings)


def test_the_ffn_rule_refuses_a_width_of_zero():
    with pytest.raises(engine.ParamError, match="no FFN units"):
        engine.run_view("ffn-width", {"multiplier": "1e-300"})


@pytest.mark.parametrize("raw", ["１２", "1_000", "10,000", "1e400", "nan", "inf", "", "0x10", "2.5"])
def test_one_number_grammar(raw):
    with pytest.raises(engine.ParamError):
        engine.run_view("attention", {"d": raw})


@pytest.mark.parametrize("raw, value", [("64", 64), ("+64", 64), ("6.4e1", 64), ("64.0", 64)])
def test_whole_numbers_may_be_written_several_ways(raw, value):
    assert engine.run_view("attention", {"d": raw}).params["d"] == value


def test_a_view_registered_where_homes_does_not_say_is_refused():
    """HOMES is the one map of where each view lives (load() imports from it): register() holds the two equal."""
    from engine.views import core
    view = core.VIEWS["residual"]
    with pytest.raises(ValueError, match="HOMES names engine.views.residual"):
        core.register(core.View("residual", view.title, view.params, lambda: None, ()))
    with pytest.raises(ValueError, match="HOMES does not name it"):
        core.register(core.View("no-such-view", view.title, view.params, view.compute, ()))
    assert core.VIEWS["residual"] is view and "no-such-view" not in core.VIEWS
