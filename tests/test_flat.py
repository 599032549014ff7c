"""tui/layout/flatten.py draws the page's tables from their laid-out cells (tui/layout/tables.py) instead of through
Rich's console: its lines must be Rich's, cell for cell and style for style, on every step, and Rich must still draw
what it does not lay out."""

import pytest
from rich.console import Group
from rich.table import Table
from rich.text import Text

from lessons.loader import LANGS, load_lessons
from tui import page
from tui.layout import flatten as flat, screen
from tui.layout.tables import Grid
from tui.progress import Progress
from tui.tour_state import Tour

LESSONS, _ = load_lessons()


def rich_flatten(renderable, width):
    """flatten() with every line drawn by Rich's console, as it was before the fast layout."""
    real = flat._lines
    try:
        flat._lines = lambda r, options: flat.console().render_lines(r, options, pad=False)
        return flat.flatten(renderable, width)
    finally:
        flat._lines = real


def same(a: Text, b: Text) -> bool:
    return a.plain == b.plain and a.spans == b.spans and a.style == b.style


class Both:
    """Stands in for the page's flatten (tui/layout/screen.py): flattens both ways, keeps any difference,
    returns the fast one."""

    def __init__(self):
        self.calls, self.fast, self.differ = 0, 0, []

    def __call__(self, renderable, width):
        self.calls += 1
        fast = flat.flatten(renderable, width)
        slow = rich_flatten(renderable, width)
        if not same(fast, slow):
            self.differ.append((width, fast.plain, slow.plain, fast.spans, slow.spans))
        return fast


def count_fast(monkeypatch):
    """How many tables flatten.py drew itself."""
    laid = []
    real = flat.table_lines

    def counting(table, width):
        out = real(table, width)
        laid.append(out is not None)
        return out
    monkeypatch.setattr(flat, "table_lines", counting)
    return laid


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.slow
@pytest.mark.real_model
def test_every_step_flattens_as_rich_draws_it(lang, monkeypatch):
    """Every step of every lesson, at its own settings and after each experiment key's every value (with what
    the key changed marked), at 80 columns in each terminal's shading, and at 120 (prose beside the tables)."""
    both = Both()
    monkeypatch.setattr(screen, "flatten", both)
    laid = count_fast(monkeypatch)
    tour = Tour(LESSONS, Progress(), lang)
    for lesson in LESSONS:
        for index, step in enumerate(lesson.steps):
            tour.goto(lesson.id, index)
            base = tour.result()
            for colors in ("color", "ansi", "mono"):
                page.body(base, tour.compare_result(), step, lang, 80, page.Marks(), colors=colors)
            page.body(base, tour.compare_result(), step, lang, 120, page.Marks(), colors="color")
            for x in lesson.experiments:
                if x.action is None and tour.takes(x):
                    for _ in x.values:
                        before = tour.result()
                        tour.press(x.key)
                        after = tour.result()
                        marks = page.diff(before, after, lang)
                        page.body(after, tour.compare_result(), step, lang, 80, marks, colors="color")
            tour.reset()
    assert both.calls > 500
    assert both.differ == []
    assert sum(laid) > 0.8 * len(laid), "most of the page's tables should be laid out without Rich"


def test_what_it_does_not_lay_out_rich_draws():
    """A ruled table, a cell too wide for the screen, a control character in a cell, a table inside a grid:
    the emitter declines each, and the page is Rich's."""
    def table(rule=False, cells=(("1.5", "", ()), ("x", "", ()))):
        return Grid([("a", "", ()), ("b", "", ())], [list(cells)], [None], [True, False], rule)

    ruled = table(rule=True)
    wide = table(cells=(("9" * 100, "", ()), ("x", "", ())))
    control = table(cells=(("1\t5", "", ()), ("x", "", ())))
    grid = Table.grid(padding=(0, 3))
    grid.add_column()
    grid.add_row(table())
    for renderable in (ruled, wide, control):
        assert flat.table_lines(renderable, 40) is None
    assert flat.table_lines(table(), 40) is not None
    for renderable in (ruled, wide, control, grid, Group(Text("title", style="bold"), table(), Text(""))):
        assert same(flat.flatten(renderable, 40), rich_flatten(renderable, 40))


def test_cells_justify_and_style_as_rich_does():
    """Right-justified numbers with trailing spaces, a marked cell, a shaded cell, a dim row, wide CJK."""
    t = Grid([("位置", "", ()), ("value", "", ())],
             [[("第一", "", ()), ("-0.25  ", "bold #000000 on #fddbc7", ((0, 7, "underline"),))],
              [("...", "", ()), ("", "", ())],
              [("x", "", ()), ("12", "dim", ())]],
             [None, "dim", None], [False, True], rule=False)
    assert flat.table_lines(t, 30) is not None
    assert same(flat.flatten(t, 30), rich_flatten(t, 30))
