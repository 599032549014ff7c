"""The screen at 80 columns: the title keeps both titles, the windows (t, o, c, ?) show their whole
title and rows, and nothing of the screen behind shows at their edges."""

import pytest
from rich.cells import cell_len

from lessons.loader import load_lessons
from tui.app import make_app
from tui.i18n import t
from tui.layout.screen import MIN_HEIGHT, MIN_WIDTH, PAD, TITLE_MIN, title_lines
from tui.screens.code import code_width
from tui.screens.help import help_rows, help_text
from tui.tour_state import RECAP_TITLE

LESSONS, _ = load_lessons()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_title_keeps_the_number_the_step_and_both_titles(lang):
    """At 80 columns each page's title is one line holding the lesson's number, n/N, the beginning of the
    lesson's title (TITLE_MIN cells at least, or all of it) and the beginning of the step's."""
    for lesson in LESSONS:
        pages = len(lesson.steps) + 1
        for i in range(pages):
            step = lesson.steps[i].title(lang) if i < len(lesson.steps) else RECAP_TITLE(lang)
            lines = [line.plain for line in title_lines(lesson, i, pages, step, lang, MIN_WIDTH)]
            assert len(lines) == 1, lines
            line, name = lines[0], lesson.title(lang)
            assert cell_len(line) <= MIN_WIDTH - 2 * PAD
            kept = name if cell_len(name) <= TITLE_MIN else name[:TITLE_MIN // 2 - 3]
            assert line.startswith(f"{lesson.order}. {kept}"), line
            assert f"  {i + 1}/{pages} {step[:6]}" in line, line


class Named:
    order = 10

    def title(self, lang):
        return "Tokens in, probabilities out"


def test_a_long_step_title_leaves_the_lesson_title_on_the_line():
    """Once "10. 2/9 Byte-pair..." lost the lesson's title. Both stay, the step's shortened."""
    step = "Byte-pair encoding: merge the commonest pair, again and again, until the vocabulary is full"
    (line,) = [x.plain for x in title_lines(Named(), 1, 9, step, "en", MIN_WIDTH)]
    assert line.startswith("10. Tokens in, probab") and "  2/9 Byte-pair encoding" in line and line.endswith("...")
    assert cell_len(line) <= MIN_WIDTH - 2 * PAD


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_help_rows_wrap_beside_their_keys(lang):
    """Each help row's text wraps in its own column: no line of it starts under the keys."""
    width = code_width(MIN_WIDTH)
    rows = help_rows(t("help_body", lang))
    lines = help_text(t("help_body", lang), width).plain.splitlines()
    keys_w = max(cell_len(k) for k, _ in rows) + 2
    assert len(lines) >= len(rows) and all(cell_len(x) <= width for x in lines)
    starts = [x for x in lines if not x.startswith(" ")]
    assert len(starts) == len(rows) and all(x.startswith(k + "  ") for x, (k, _) in zip(starts, rows))
    assert all(x.startswith(" " * keys_w) for x in lines if x not in starts)


def screen_lines(app) -> list[str]:
    """What the terminal shows, line by line."""
    return ["".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("key", ["t", "o", "c", "question_mark"])
async def test_a_window_at_80x24_shows_nothing_of_the_screen_behind(key, lang, tmp_path):
    """Outside a window's border there are only blanks: no letter of the lesson behind at its edges."""
    app = make_app(lang=lang, lesson="attention", state_dir=tmp_path)
    async with app.run_test(size=(MIN_WIDTH, MIN_HEIGHT)) as pilot:
        app.open_lesson("attention", 1)
        await pilot.pause()
        behind = screen_lines(app)
        await pilot.press(key)
        await pilot.pause()
        lines = screen_lines(app)
        assert lines != behind
        boxed = [x for x in lines if "│" in x]
        assert len(boxed) > 10
        for line in boxed:
            left, right = line.index("│"), line.rindex("│")
            assert line[:left].strip() == "" and line[right + 1:].strip() == "", line


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_the_all_rows_window_says_how_to_close_it(lang, tmp_path):
    """The t window's title wraps inside the box: "(Esc closes)" is in sight at 80 columns."""
    app = make_app(lang=lang, lesson="attention", state_dir=tmp_path)
    async with app.run_test(size=(MIN_WIDTH, MIN_HEIGHT)) as pilot:
        app.open_lesson("attention", 1)
        await pilot.pause()
        await pilot.press("t")
        await pilot.pause()
        shown = " ".join(x.strip().strip("│").strip() for x in screen_lines(app)[:5])
        assert ("(Esc closes)" if lang == "en" else "（Esc 关闭）") in shown
