"""The Textual app, driven by Pilot at 80x24: every key, resume, broken progress, sizes."""

import asyncio
import json
import random

import pytest
from helpers.pilot import at_trained_heads
from helpers.screen import body_fits, plain, screen_text, settings, step_index
from textual.widgets import OptionList

from tui.app import make_app
from tui.screens.code import CodeScreen
from tui.screens.help import HelpScreen
from tui.screens.lesson import LessonScreen
from tui.screens.overview import OverviewScreen


def wide(app) -> bool:
    """Whether the prose sits beside the tables: some line of the body runs past 80 columns."""
    from rich.cells import cell_len
    return any(cell_len(line) > 80 for line in app.lesson_screen().query_one("#page").content.plain.splitlines())


def lit(app) -> dict:
    """Which keys the footer shows lit."""
    return {item.key: item.live for item in app.lesson_screen().footer if item.key}


async def test_positional_base_experiment(state):
    app = make_app(lang="en", lesson="positional", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "0.841" in text and "base=10000" in settings(app) and "+0.100" in text
        await pilot.press("1")
        text = screen_text(app)
        assert "base=500000" in settings(app).split() and "+0.038" in text
        assert "[1] base 10000 -> 500000" in text  # the message says what changed
        await pilot.press("1")
        text = screen_text(app)
        assert "base=100" in settings(app).split() and "+0.311" in text
        await pilot.press("1")  # the last value wraps to the first
        assert "base=10000" in settings(app)


async def test_attention_and_heads_experiments(state):
    app = make_app(lang="en", lesson="attention", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "d=8" in settings(app).split()
        await pilot.press("1")
        assert "d=64" in settings(app).split()
        app.open_lesson("heads")
        await pilot.pause()
        assert "heads=4" in settings(app).split()
        await pilot.press("1")
        assert "heads=8" in settings(app).split() and "4,096" in screen_text(app)


async def test_next_and_prev_cross_lesson_boundaries(state):
    app = make_app(lang="en", lesson="residual", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        steps = app.tour.pages()  # the steps, then the recap
        for _ in range(steps):
            await pilot.press("n")
        assert app.tour.lesson.id == "positional" and app.tour.step_index == 0
        await pilot.press("left")
        assert app.tour.lesson.id == "residual" and app.tour.step_index == steps - 1
        await pilot.press("right", "p")
        assert app.tour.lesson.id == "residual" and app.tour.step_index == steps - 1
        app.open_lesson("residual", 0)
        await pilot.press("p")  # the very first step: a notice, no move
        assert app.tour.step_index == 0 and "first step" in screen_text(app)


async def test_experiment_keys_that_do_nothing_here_are_dimmed_and_explain(state):
    app = make_app(lang="en", lesson="positional", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        keys = lit(app)
        assert keys["1"] and not keys["2"] and not keys["0"]  # positions is not a setting of this step
        await pilot.press("2")
        assert "positions=" not in settings(app) and "is not part of this step" in screen_text(app)
        await pilot.press("9")
        assert "Key 9 is not bound" in screen_text(app)
        await pilot.press("1")
        assert lit(app)["0"]  # now there is something to reset


async def test_zero_resets_the_lessons_settings(state):
    app = make_app(lang="en", lesson="attention", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("1", "1", "3")
        assert "d=512" in settings(app) and "seed=1" in settings(app)
        await pilot.press("0")
        assert sorted(settings(app).split()) == ["causal=off", "d=8", "seed=0"]
        assert "reset" in screen_text(app)


async def test_language_switches_in_place(state):
    app = make_app(lang="en", lesson="positional", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n", "1")
        before = (app.tour.lesson.id, app.tour.step_index, settings(app))
        await pilot.press("l")
        assert app.tour.lang == "zh" and "快的维度与慢的维度" in screen_text(app)
        assert (app.tour.lesson.id, app.tour.step_index, settings(app)) == before
        await pilot.press("l")
        assert app.tour.lang == "en" and "Fast dims and slow dims" in screen_text(app)


async def test_code_help_and_overview_screens(state):
    app = make_app(lang="en", lesson="attention", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("c")
        assert isinstance(app.screen, CodeScreen)
        code = "\n".join(plain(w.content) if not hasattr(w.content, "code") else w.content.code
                         for w in app.screen.query("Static"))
        assert "def attention(q, k, v" in code and "# [n_q, d]" in code  # the shape comments come along
        await pilot.press("escape")
        assert isinstance(app.screen, LessonScreen)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "next step" in "\n".join(plain(w.content) for w in app.screen.query("Static"))
        await pilot.press("escape", "o")
        assert isinstance(app.screen, OverviewScreen)
        listing = app.screen.query_one(OptionList)
        assert listing.option_count == 13 and listing.highlighted == 2
        await pilot.press("down", "enter")
        assert isinstance(app.screen, LessonScreen) and app.tour.lesson.id == "heads"


async def test_help_speaks_chinese(state):
    app = make_app(lang="zh", lesson="attention", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        assert "下一步" in "\n".join(plain(w.content) for w in app.screen.query("Static"))


async def use_palette(pilot, text: str) -> None:
    """Open the palette, type, wait for the search, take the first hit."""
    await pilot.press("ctrl+p")
    await pilot.pause()
    await pilot.press(*text)
    await pilot.pause(0.5)
    await pilot.press("enter")
    await pilot.pause()


async def test_command_palette_jumps_to_a_step(state):
    app = make_app(lang="en", lesson="residual", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await use_palette(pilot, "RoPE: turn")
        assert (app.tour.lesson.id, app.tour.step.id) == ("positional", "rope")


async def test_command_palette_opens_the_overview(state):
    app = make_app(lang="en", lesson="heads", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await use_palette(pilot, "overview")
        assert isinstance(app.screen, OverviewScreen)


async def test_quit_saves_and_bare_start_resumes(state):
    app = make_app(lang="zh", lesson="heads", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n", "n", "q")
    saved = json.loads((state / "progress.json").read_text())
    assert saved["lesson"] == "heads" and saved["step"] == 2 and saved["lang"] == "zh"
    again = make_app(state_dir=state)  # no --lesson, no --lang: resume, in the saved language
    async with again.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert (again.tour.lesson.id, again.tour.step_index, again.tour.lang) == ("heads", 2, "zh")


async def test_first_run_starts_at_the_first_lesson(state):
    app = make_app(lang="en", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert (app.tour.lesson.id, app.tour.step_index) == ("residual", 0)
    first = app.tour.lessons[0]
    assert json.loads((state / "progress.json").read_text())["visited"] == {first.id: [first.steps[0].id]}


@pytest.mark.parametrize("garbage", [b"{not json", b"\xff\xfe\x00", b'{"version": 1, "step": -3}', b"[]",
                                     b"[" * 100_000 + b"]" * 100_000])
async def test_corrupt_progress_means_a_fresh_start_with_a_notice(state, garbage):
    state.mkdir()
    (state / "progress.json").write_bytes(garbage)
    app = make_app(lang="en", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.tour.lesson.id == "residual"
        assert "Fresh start: damaged progress kept as progress.json.broken-" in screen_text(app)
    [kept] = state.glob("progress.json.broken-*")
    assert kept.read_bytes() == garbage  # kept aside, not destroyed
    assert json.loads((state / "progress.json").read_text())["lesson"] == "residual"


async def test_an_unwritable_state_folder_still_runs(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    app = make_app(lang="en", state_dir=blocker / "state")  # mkdir fails, even as root
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "Progress not saved" in screen_text(app) and "The tour runs on" in screen_text(app)
        await pilot.press("n", "1")
        assert app.tour.step_index == 1 and not app.store.writable


async def test_saving_is_atomic_and_leaves_no_temporary_files(state):
    app = make_app(lang="en", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(5):
            await pilot.press("n")
    assert sorted(p.name for p in state.iterdir()) == ["progress.json"]


async def test_nothing_has_the_focus_and_nothing_scrolls(state):
    """The keys are the screen's: the focus moves only to the typing line (e) and back, and a screen whose focus
    moves repaints whole, so nothing else takes it."""
    app = make_app(lang="en", lesson="attention", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        body = app.lesson_screen().query_one("#body")
        assert app.focused is None and body.max_scroll_y == 0 and not body.has_class("-overflow")
        await pilot.press("e", "escape")
        await pilot.pause()
        assert app.focused is None


async def test_palette_paging_before_the_list_is_laid_out_does_not_crash(state):
    app = make_app(lang="en", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+p", "pageup", "pagedown", "escape")
        assert app.is_running and isinstance(app.screen, LessonScreen)


async def test_keys_do_nothing_unseen_while_the_window_is_too_small(state):
    app = make_app(lang="en", lesson="attention", state_dir=state)
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.press("n", "1")
        assert app.tour.step_index == 0 and app.tour.overrides() == {}
        await pilot.press("l")
        assert app.tour.lang == "zh"


async def test_a_key_that_changes_nothing_shown_is_dimmed(state):
    app = make_app(lang="en", lesson="residual", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()  # the first step shows x with and without the residual adds: key 1 has nothing to change
        await pilot.pause()
        assert not lit(app)["1"] and lit(app)["2"]
        app.open_lesson("residual", step_index(app, "residual", "next"))  # the next-token table does depend on it
        await pilot.pause()
        assert lit(app)["1"]


async def test_too_small_asks_for_a_larger_window_and_resize_keeps_the_state(state):
    app = make_app(lang="en", lesson="attention", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n", "1")
        before = (app.tour.lesson.id, app.tour.step_index, settings(app))
        await pilot.resize_terminal(70, 20)
        await pilot.pause()
        screen = app.lesson_screen()
        assert screen.has_class("-small") and "at least 80 x 24" in plain(screen.query_one("#small").content)
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert not screen.has_class("-small") and wide(app)
        assert (app.tour.lesson.id, app.tour.step_index, settings(app)) == before
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert not wide(app) and settings(app) == before[2]


async def test_a_refused_lesson_value_is_an_inline_message(state):
    from engine.records import replace
    from lessons.loader import load_lessons
    lessons, _ = load_lessons()
    heads = next(x for x in lessons if x.id == "heads")
    bad = replace(heads, steps=(replace(heads.steps[0], params={"heads": 3}),) + heads.steps[1:])
    app = make_app(lang="en", lesson="heads", state_dir=state, lessons=[bad])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "The engine refused" in screen_text(app) and "does not divide" in screen_text(app)
        await pilot.press("n")
        assert app.tour.step_index == 1 and "heads=4" in settings(app)


@pytest.mark.slow
async def test_monkey_2000_random_keys(state, monkeypatch):
    """Random keys across every screen and lesson: no exception, and the app still answers."""
    from engine import tiny
    from engine.records import replace
    monkeypatch.setitem(tiny.CONFIGS, "big", replace(tiny.CONFIGS["small"], steps=20))  # key 4 in heads trains
    keys = list("np0123456789clo?q") + ["left", "right", "up", "down", "escape", "enter", "tab", "ctrl+p",
                                         "pagedown", "home", "x"]
    rng = random.Random(20261130)
    app = make_app(lang="en", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        for i in range(2000):
            key = rng.choice(keys)
            if key == "q" and isinstance(app.screen, LessonScreen):
                continue  # quitting would end the run; q is tested on its own
            await asyncio.wait_for(pilot.press(key), 30)  # a crashed app would otherwise hang the run
            if i % 250 == 0:
                await asyncio.wait_for(pilot.resize_terminal(*rng.choice([(80, 24), (120, 40), (100, 30)])), 30)
        while not isinstance(app.screen, LessonScreen):
            await asyncio.wait_for(pilot.press("escape"), 30)
        lang = app.tour.lang
        await pilot.press("l")
        assert app.tour.lang != lang and app.is_running


@pytest.mark.slow
async def test_live_training_runs_in_the_background_and_can_be_stopped(state, monkeypatch):
    import hashlib

    from engine import tiny
    from engine.records import replace
    shipped = hashlib.sha256(tiny.SHIPPED.read_bytes()).hexdigest()
    monkeypatch.setitem(tiny.CONFIGS, "big", replace(tiny.CONFIGS["small"], steps=100_000))
    app = make_app(lang="en", lesson="heads", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        screen, here = await at_trained_heads(app, pilot)
        screen.action_experiment("4")  # as the key does; Pilot's press would wait for the worker to finish
        assert app.training.running
        await pilot.pause(0.3)
        assert "Training big" in plain(screen.query_one("#page").content)
        app.open_lesson("heads", 0)  # the tour answers while the model trains
        screen.action_experiment("1")
        assert "heads=8" in settings(app) and app.training.running
        assert "Training big" not in plain(screen.query_one("#page").content)  # the panel stays on its step
        screen.action_experiment("4")
        assert "works on the step that shows the trained heads" in screen_text(app) and app.training.running
        app.open_lesson("heads", here)
        screen.action_experiment("4")  # stop
        await app.workers.wait_for_complete()
        await pilot.pause()
        tables = plain(screen.query_one("#page").content)
        assert not app.training.running and "Stopped" in tables and "untouched" in tables
        assert body_fits(app)[0]
        await pilot.press("4")  # close the panel
        assert "Stopped" not in plain(screen.query_one("#page").content)
    assert hashlib.sha256(tiny.SHIPPED.read_bytes()).hexdigest() == shipped
