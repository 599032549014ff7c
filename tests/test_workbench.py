"""The sizing workbench: its logic, then the screen driven by Pilot."""

import pytest
from helpers.cli import run_cli
from textual.widgets import Input

from tui.app import make_app
from tui.screens.workbench import WorkbenchScreen
from tui.workbench import Workbench

from test_sizing import PUBLISHED


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_every_preset_gives_its_published_total(name):
    bench = Workbench.start(name)
    assert not bench.errors and bench.sizing.report["total"] == PUBLISHED[name]
    assert bench.sizing.published == PUBLISHED[name]


def test_a_changed_field_is_no_longer_the_published_model():
    bench = Workbench.start("llama2-7b")
    bench.set("layers", "40")
    assert bench.sizing.report["total"] == 8_357_482_496 and bench.sizing.published is None
    assert not bench.sizing.same


def test_mistrals_sliding_window_caps_its_cache_in_the_workbench_as_in_the_lessons():
    from engine import sizing
    bench = Workbench.start("mistral-7b")
    assert bench.sizing.cfg.window == 4096 and bench.sizing.same
    bench.set("layers", "40")  # the window is how it attends, not a size: typed sizes keep it
    assert bench.sizing.cfg.window == 4096
    assert sizing.kv_cache_bytes(bench.sizing.cfg, 32_768) == 40 * 2 * 8 * 128 * 2 * 4096
    assert Workbench.start("llama2-7b").sizing.cfg.window is None


def test_d_ff_follows_the_swiglu_rule_when_asked():
    bench = Workbench.start("llama3-8b")
    bench.set("d_ff", "")
    bench.set("multiple_of", "1024")
    bench.set("multiplier", "1.3")
    assert bench.values["d_ff"] == "14336" and bench.sizing.report["total"] == 8_030_261_248


@pytest.mark.parametrize("field, text, words", [
    ("layers", "abc", "whole number"),
    ("layers", "0", "from 1"),
    ("vocab", "-5", "from 1"),
    ("heads", "7", "does not divide"),
    ("kv_heads", "5", "must divide"),
    ("layers", "99999999999999999999", "from 1 to 1,048,576"),
    ("context", "1e12", "1,000,000,000"),
    ("weights", "fp8", "one of"),
    ("tied", "maybe", "on or off"),
    ("preset", "gpt-9", "unknown preset"),
])
def test_bad_input_is_marked_and_keeps_the_last_result_stale(field, text, words):
    bench = Workbench.start("llama2-7b")
    before = bench.sizing
    bench.set(field, text)
    assert field in bench.errors and words in bench.errors[field].en and bench.errors[field].zh
    assert bench.stale and bench.sizing is before
    bench.set(field, Workbench.start("llama2-7b").values[field])
    assert not bench.errors and not bench.stale


def test_the_24_gib_question():
    """Does Llama 3 8B with a 32k context fit in 24 GiB in fp16? One screen answers it."""
    bench = Workbench.start("llama3-8b", context=32768)
    s = bench.sizing
    assert s.weight_bytes == 8_030_261_248 * 2 and s.kv_bytes == 4 * 2**30
    assert s.inference_bytes < 24 * 2**30


def summary(app) -> str:
    return app.screen.query_one("#summary").content.plain


def items(app) -> str:
    return app.screen.query_one("#items").content.plain


@pytest.mark.parametrize("preset, total", [("llama2-7b", "6,738,415,616"), ("llama3-8b", "8,030,261,248")])
async def test_workbench_shows_the_total_at_80x24(tmp_path, preset, total):
    app = make_app(lang="en", bench=Workbench.start(preset), lessons=[], state_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert total in summary(app) and "matches" in summary(app) and "source:" in summary(app)


async def test_typing_a_layer_count_updates_the_total_at_once(tmp_path):
    app = make_app(lang="en", bench=Workbench.start("llama2-7b"), lessons=[], state_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.focused.id == "in-layers"
        await pilot.press("backspace")
        assert "Not valid yet" not in app.screen.query_one("#workbench-message").content.plain
        assert f"{engine_total(3):,}" in summary(app)
        await pilot.press("8")
        assert f"{engine_total(38):,}" in summary(app)


def engine_total(layers):
    from engine import sizing
    return sizing.total_params(sizing.PRESETS["llama2-7b"].with_(n_layer=layers))


async def test_bad_input_in_the_screen_keeps_the_app_running(tmp_path):
    app = make_app(lang="zh", bench=Workbench.start("llama2-7b"), lessons=[], state_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("x")
        message = "".join(app.screen.query_one("#workbench-message").content.plain.split())
        assert "结果已过期" in message and "层数" in message
        assert app.screen.query_one("#in-layers", Input).has_class("-bad")
        assert "6,738,415,616" in summary(app)  # the last valid result, still shown
        await pilot.press("backspace")
        assert not app.screen.query_one("#in-layers", Input).has_class("-bad") and app.is_running


async def test_a_half_typed_preset_keeps_the_last_outputs(tmp_path):
    app = make_app(lang="en", bench=Workbench.start("llama2-7b"), lessons=[], state_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        app.screen.query_one("#in-preset", Input).focus()
        await pilot.press("end", "2")  # llama2-7b2: no such preset
        assert app.is_running and "6,738,415,616" in summary(app) and "unknown preset" in " ".join(
            app.screen.query_one("#workbench-message").content.plain.split())


async def test_pin_and_compare(tmp_path):
    app = make_app(lang="en", bench=Workbench.start("llama2-7b"), lessons=[], state_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+t")
        assert "pinned: Llama 2 7B" in summary(app)
        app.screen.query_one("#in-kv_heads", Input).focus()
        await pilot.press("backspace", "backspace", "8")
        assert "pinned" in items(app) and "change" in items(app)
        assert "-" in items(app).split("attention W_k")[1].splitlines()[0]  # fewer K parameters than pinned
        await pilot.press("ctrl+t")
        assert "pinned:" not in summary(app) and "all layers" in items(app)


async def test_workbench_opens_from_the_params_lesson_and_goes_back(tmp_path):
    app = make_app(lang="en", lesson="params", state_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("w")
        assert isinstance(app.screen, WorkbenchScreen) and "6,738,415,616" in summary(app)
        await pilot.press("escape")
        assert not isinstance(app.screen, WorkbenchScreen) and app.tour.lesson.id == "params"
        app.open_lesson("kvcache", 2)  # the GQA step: Llama 3 8B
        await pilot.press("w")
        assert "Llama 3 8B" in summary(app)


async def test_the_w_key_elsewhere_explains(tmp_path):
    app = make_app(lang="en", lesson="heads", state_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("w")
        assert not isinstance(app.screen, WorkbenchScreen)
        message = " ".join(app.lesson_screen().query_one("#message").content.plain.split())
        assert "opens from the params and kvcache lessons" in message


def test_calc_refuses_bad_flags_in_one_line():
    out = run_cli("calc", "--preset", "gpt-9")
    assert out.returncode == 2 and "unknown preset 'gpt-9'" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_workbench_snapshot(snap_compare, tmp_path, lang):
    app = make_app(lang=lang, bench=Workbench.start("llama3-8b", context=32768), lessons=[], state_dir=tmp_path)
    assert snap_compare(app, terminal_size=(80, 24))


async def test_keys_typed_while_the_workbench_opens_arrive_in_order(tmp_path):
    """Backspace then digits, faster than the screen is built and without waiting between keys: none is
    lost and none overtakes another (the Backspace used to run last and eat the 0: "324")."""
    from textual import events
    app = make_app(lang="en", lesson="params", state_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        for key, char in (("w", "w"), ("backspace", None), ("4", "4"), ("0", "0")):
            app.post_message(events.Key(key, char))
        await pilot.pause()
        await pilot.pause(0.3)
        assert isinstance(app.screen, WorkbenchScreen)
        assert app.screen.query_one("#in-layers", Input).value == "340"
        for key, char in (("backspace", None), ("backspace", None), ("7", "7")):  # on an open workbench too
            app.post_message(events.Key(key, char))
        await pilot.pause(0.3)
        assert app.screen.query_one("#in-layers", Input).value == "37"
        assert app.screen.bench.values["layers"] == "37"


async def test_the_tied_field_reads_yes_or_no_in_chinese(tmp_path):
    app = make_app(lang="zh", lesson="params", state_dir=tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("w")
        await pilot.pause()
        tied = app.screen.query_one("#in-tied", Input)
        assert tied.value == "否" and app.screen.bench.values["tied"] == "off"
        tied.value = "是"
        await pilot.pause()
        assert app.screen.bench.values["tied"] == "on"
        await pilot.press("ctrl+l")
        assert tied.value == "on"
