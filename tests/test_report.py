"""The message line after a press (tui/report.py): the setting before -> after, and always the first number of
the prose that moved with it, in both languages at 80 columns, however long the labels and settings are."""

import pytest
from helpers.screen import message, step_index
from rich.cells import cell_len

from engine.errors import EngineError
from engine.views import fmt_value
from lessons.loader import load_lessons
from tui import report
from tui.app import make_app
from tui.layout.screen import MIN_HEIGHT, MIN_WIDTH, PAD
from tui.progress import Progress
from tui.tour_state import Tour

LESSONS, _ = load_lessons()


def presses(lang: str):
    """Every press of every experiment key through all its values, on every step: (where, line, figures)."""
    for lesson in LESSONS:
        tour = Tour(LESSONS, Progress(), lang)
        for index in range(len(lesson.steps)):
            tour.goto(lesson.id, index)
            try:
                tour.result()
            except EngineError:  # the real model's lesson without a model file
                continue
            for x in lesson.experiments:
                if x.action is not None or not tour.takes(x):
                    continue
                for _ in x.values:
                    if not tour.applies(x):
                        continue
                    before, was = tour.result(), tour.value_of(x)
                    tour.press(x.key)
                    after = tour.result()
                    marks, changed = report.changed_refs(tour.step, before, after, lang)
                    figs = report.figures(tour.step, before, after, marks, changed, lang)
                    setting = (x.key, x.param, fmt_value(was), fmt_value(tour.value_of(x)))
                    line = report.head_line(setting, figs, lang, MIN_WIDTH)
                    yield (lesson.id, tour.step.id, x.key, line), line, changed, figs
            tour.reset()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_press_names_the_first_number_of_the_prose_that_moved(lang):
    """A press whose prose numbers changed names the first of them, before -> after, on one line of 80 columns."""
    seen = moved = 0
    missing = []
    for where, line, changed, figs in presses(lang):
        seen += 1
        assert cell_len(line) <= MIN_WIDTH - 2 * PAD, where
        if changed:
            moved += 1
            _, a, b = figs[0]
            if f"{a} -> {b}" not in line:
                missing.append(where)
    assert missing == []
    assert seen > 300 and moved > 250  # the walk did walk: 402 presses, 300 moving the prose (December 2026)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_press_that_moves_no_prose_number_names_a_table_cell(lang):
    """Where the prose keeps its numbers, the first changed cell of the step's tables is named instead; only a
    press that adds rows or moves a chart alone says the setting alone."""
    bare = [where for where, line, changed, figs in presses(lang) if not figs]
    named = [line for where, line, changed, figs in presses(lang) if figs and not changed]
    assert named and all(": " in line or "：" in line for line in named)
    assert len(bare) <= 30, bare  # 23 in December 2026, of 402


def test_the_label_gives_way_before_the_numbers():
    """A long label is shortened, then the value before is left out, and the numbers stay whole."""
    figs = [("cos with the embedding after the last layer, with the adds", "+0.83", "+0.77")]
    line = report.head_line(("2", "seed", "0", "1"), figs, "en", MIN_WIDTH)
    assert line.startswith("[2] seed 0 -> 1: cos with the embedding") and line.endswith("+0.83 -> +0.77")
    sentence = ("5", "sentence", "the cat near the dogs sits .", "the cat near the dogs sit .")
    line = report.head_line(sentence, [("the costliest position", "1", "5")], "en", MIN_WIDTH)
    assert line == "[5] sentence -> the cat near the dogs sit .: the costliest position 1 -> 5"
    line = report.head_line(("1", "t", "0", "1"), [("x", "a" * 60, "b" * 60)], "zh", MIN_WIDTH)
    assert cell_len(line) <= MIN_WIDTH - 2 * PAD and "aaa" in line and "bbb" in line


async def test_the_residual_seed_press_names_the_cosine_in_english(tmp_path):
    """A press once bare in English: residual step 2, key 2, seed 0 -> 1."""
    app = make_app(lang="en", lesson="residual", state_dir=tmp_path)
    async with app.run_test(size=(MIN_WIDTH, MIN_HEIGHT)) as pilot:
        app.open_lesson("residual", step_index(app, "residual", "why-add"))
        await pilot.pause()
        await pilot.press("2")
        await pilot.pause()
        assert "[2] seed 0 -> 1: " in message(app) and "+0.83 -> +0.77" in message(app)


def test_a_key_that_moves_only_a_chart_changes_the_step():
    """page.shows, which lights a key and says "no change", sees a step's charts as well as its tables: the
    context lesson's chart of attention's share moves with the prompt even where no row would."""
    from engine.records import replace
    from engine.views import run_view
    from tui import page

    lesson = next(x for x in LESSONS if x.id == "context")
    step = next(s for s in lesson.steps if any(c.key in s.tables for c in run_view(s.view, dict(s.params)).charts))
    before = run_view(step.view, dict(step.params))
    moved = tuple(replace(c, title=replace(c.title, en=c.title.en + "!")) for c in before.charts)
    after = replace(before, charts=moved)
    assert page.shows(before, step, "en") != page.shows(after, step, "en")
    same_tables = replace(before, charts=())
    assert page.shows(same_tables, step, "en") != page.shows(before, step, "en")
