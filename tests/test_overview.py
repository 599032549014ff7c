"""The whole tour's progress: the overview (o) says steps seen of all steps, questions right of all questions and
about how long the rest takes, a line per lesson; after the last recap the end of the tour lists what to revisit.
The step counts agree everywhere: the title line, o, `xf-tour lessons` and `xf-tour print --lesson`."""

import re

import pytest
from helpers.cli import run_cli
from helpers.screen import plain, screen_text
from rich.cells import cell_len

from lessons import estimate
from lessons.loader import load_lessons
from tui.app import make_app
from tui.progress import Progress
from tui.screens.overview import EndScreen, OverviewScreen, rows, tour_line
from tui.tour_state import Tour


def lines_of(screen) -> list[str]:
    listing = screen.query_one("#lesson-list")
    return [str(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]


def test_the_estimate_counts_words_steps_presses_and_questions():
    assert estimate.words("The {d} heads see {if big}far{else}near{end}.", "en") == 6  # both branches
    assert estimate.words("每个头看 {d} 个 token。", "zh") == 5 + 1 + 1  # 每个头看个: 5; the figure; token
    lessons, _ = load_lessons()
    lesson = lessons[0]
    words = sum(estimate.words(s.text("en"), "en") for s in lesson.steps) + sum(
        estimate.words(p("en"), "en") for p in lesson.pitfalls)
    least = 60 * words / estimate.READ_WORDS + estimate.LOOK_S * (len(lesson.steps) + 1) + \
        estimate.ASK_S * len(lesson.questions)
    assert estimate.seconds(lesson, "en") > least  # and the presses on top
    assert estimate.minutes(lesson, "en") == -(-estimate.seconds(lesson, "en") // 60)


def test_the_tour_line_adds_every_lesson_and_the_time_left_falls_as_steps_are_seen():
    lessons, _ = load_lessons()
    progress = Progress()
    tour = Tour(lessons, progress, "en", asks=False)
    steps = sum(len(x.steps) + 1 for x in lessons)
    questions = sum(len(x.questions) for x in lessons)
    total = sum(estimate.minutes(x, "en") for x in lessons)
    assert tour_line(tour) == f"Whole tour: 0/{steps} steps seen, 0/{questions} questions right, " \
                              f"about {total} min left."
    for step in lessons[0].steps:
        progress.visit(lessons[0].id, step.id)
    left = int(re.search(r"about (\d+) min", tour_line(tour))[1])
    assert left < total and f"{len(lessons[0].steps)}/{steps} steps seen" in tour_line(tour)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("width", [50, 70, 100])
def test_each_lesson_is_one_line_that_fits_with_its_numbers_whole(lang, width):
    lessons, _ = load_lessons()
    tour = Tour(lessons, Progress(), lang, asks=False)
    head, lines = rows(tour, width)
    assert len(lines) == len(lessons) and head.plain.split()[:1] == [{"en": "lesson", "zh": "课程"}[lang]]
    for lesson, line in zip(lessons, lines):
        assert cell_len(line.plain) <= width and "\n" not in line.plain
        title, shown = lesson.title(lang), line.plain[4:].split("  ")[0]  # whole, or cut with ... when too long
        assert shown == title or shown.endswith("...") and title.startswith(shown[:-3]) and \
            cell_len(title) > cell_len(shown), line.plain
        steps, right, minutes = line.plain.split()[-3:]
        assert steps == f"0/{len(lesson.steps) + 1}" and right == f"0/{len(lesson.questions)}"
        assert minutes == str(estimate.minutes(lesson, lang))


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_the_overview_fits_80x24_and_the_counts_agree_with_the_title_line(state, lang):
    app = make_app(lang=lang, lesson="tokens", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        n = len(app.tour.lesson.steps) + 1
        assert f"1/{n} " in screen_text(app).splitlines()[0]
        app.tour.goto("tokens", n - 1)
        app.lesson_screen().arrived()
        await pilot.pause()
        assert f"{n}/{n} " in screen_text(app).splitlines()[0]  # the recap is the last step, numbered
        await pilot.press("o")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, OverviewScreen)
        box = screen.query_one("#overview-box")
        assert box.region.height <= 24 and not screen.query_one("#lesson-list").max_scroll_y
        assert lines_of(screen)[9].split()[-3] == f"2/{n}"  # the first step and the recap
        assert "#estimate-note" in {f"#{w.id}" for w in screen.query("Static")}


def test_lessons_and_print_count_the_recap_as_the_last_step():
    lessons, _ = load_lessons()
    listed = run_cli("lessons").stdout
    printed = run_cli("print", "--lesson", "ffn").stdout
    ffn = next(x for x in lessons if x.id == "ffn")
    n = len(ffn.steps) + 1
    assert re.search(rf"\bffn\s+{n} steps, the last a recap", listed)
    assert f"Step 1/{n}: " in printed and f"Step {n}/{n}: Recap" in printed


async def test_after_the_last_recap_the_end_says_what_to_revisit(state):
    app = make_app(lang="en", lesson="misconceptions", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        app.tour.goto("misconceptions", len(app.tour.lesson.steps))
        app.lesson_screen().arrived()
        await pilot.pause()
        assert app.tour.at_end()
        await pilot.press("n")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, EndScreen)
        said = plain(screen.query_one("#revisit").content)
        assert said.startswith("Worth a second look") and said.rstrip(".").endswith("13")
        assert screen.query_one("#overview-box").region.height <= 24
        assert screen.query_one("#lesson-list").highlighted == 0  # the first lesson to revisit
        await pilot.press("enter")
        await pilot.pause()
        assert app.tour.lesson.id == "residual" and not isinstance(app.screen, OverviewScreen)


async def test_the_end_congratulates_when_nothing_is_left(state):
    app = make_app(lang="zh", lesson="misconceptions", state_dir=state)
    tour = app.tour
    for lesson in tour.lessons:
        for step in lesson.steps:
            tour.progress.visit(lesson.id, step.id)
        tour.progress.visit(lesson.id, "recap")
    for lesson in tour.lessons:
        for q in lesson.questions:
            tour.progress.answer(lesson.id, q.id, {"choice": "a", "right": True, "t": 1})
    async with app.run_test(size=(80, 24)) as pilot:
        app.open_end()
        await pilot.pause()
        assert "每一步都看过，每道题都答对了" in plain(app.screen.query_one("#revisit").content)
