"""Heatmaps (tui/heat.py): every shade readable, the peak of every row marked in every rendering, and the
numbers still printed in the cells."""

import math

import pytest
from rich.color import Color, ColorSystem
from rich.console import Console
from rich.style import Style
from rich.terminal_theme import DEFAULT_TERMINAL_THEME, TerminalTheme
from textual._ansi_theme import ALABASTER, MONOKAI

from engine.views import VIEWS, Column, Table, Tr
from tui import heat
from tui.format import format_value
from tui.layout.tables import lay_out

WCAG_AA = 4.5


def _pairs(mode):
    """Every (style) a heatmap cell can get in a mode, from a fine sweep of values of each kind."""
    values = [i / 200 for i in range(201)] + [-i / 200 for i in range(1, 201)] + [-math.inf]
    out = set()
    for kind in (heat.WEIGHTS, heat.SIGNED, heat.MASK):
        for v in values:
            for peak in (False, True):
                out.add(heat.style(kind, float(v), mode, 1.0, peak))
    return out


def _colours(style: str, theme):
    """(text, background) of a style as #rrggbb, named ANSI colours read through a terminal theme."""
    s = Style.parse(style)
    if s.bgcolor is None:
        return None
    return tuple(c.get_truecolor(theme).hex for c in (s.color, s.bgcolor))


@pytest.mark.parametrize("system", [ColorSystem.TRUECOLOR, ColorSystem.EIGHT_BIT])
def test_every_shade_keeps_its_text_readable(system):
    """WCAG contrast of text on shade at least 4.5:1, as written and as a 256-colour terminal shows it."""
    seen = 0
    for style in _pairs("color"):
        s = Style.parse(style)
        if s.bgcolor is None:
            continue
        fg, bg = (c.downgrade(system).get_truecolor().hex for c in (s.color, s.bgcolor))
        assert heat.contrast(fg, bg) >= WCAG_AA, (style, system, heat.contrast(fg, bg))
        seen += 1
    assert seen >= len(heat.SEQUENTIAL) + len(heat.POSITIVE) + len(heat.NEGATIVE)


VGA = TerminalTheme((0, 0, 0), (170, 170, 170),  # the Linux console's palette (TERM=linux)
                    [(0, 0, 0), (170, 0, 0), (0, 170, 0), (170, 85, 0), (0, 0, 170), (170, 0, 170), (0, 170, 170),
                     (170, 170, 170)],
                    [(85, 85, 85), (255, 85, 85), (85, 255, 85), (255, 255, 85), (85, 85, 255), (255, 85, 255),
                     (85, 255, 255), (255, 255, 255)])


@pytest.mark.parametrize("theme", [MONOKAI, ALABASTER, VGA, DEFAULT_TERMINAL_THEME],
                         ids=["textual-dark", "textual-light", "linux-console", "xterm"])
def test_the_16_colour_shades_are_readable_in_common_palettes(theme):
    """The terminal decides what "bright cyan" looks like; the pairs used read in all of these."""
    seen = 0
    for style in _pairs("ansi"):
        pair = _colours(style, theme)
        if pair is None:
            continue
        assert heat.contrast(*pair) >= WCAG_AA, (style, pair)
        seen += 1
    assert seen >= 4


def test_contrast_is_wcags():
    assert heat.contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert heat.contrast("#777777", "#777777") == pytest.approx(1.0)
    assert heat.text_on("#fde725") == heat.DARK_TEXT and heat.text_on("#482475") == heat.LIGHT_TEXT


def test_the_mono_rendering_uses_no_colour():
    for style in _pairs("mono"):
        s = Style.parse(style) if style else Style()
        assert s.color is None and s.bgcolor is None, style


def test_the_16_colour_rendering_uses_only_the_ansi_colours():
    for style in _pairs("ansi"):
        s = Style.parse(style) if style else Style()
        for c in (s.color, s.bgcolor):
            assert c is None or c.number is not None and c.number < 16, style


def test_the_mode_follows_the_terminal():
    assert heat.mode_for(True, "truecolor") == "mono"  # NO_COLOR wins
    assert heat.mode_for(False, None) == "mono"
    assert heat.mode_for(False, "standard") == "ansi"  # TERM=linux
    assert heat.mode_for(False, "256") == heat.mode_for(False, "truecolor") == "color"


def _heat_tables():
    """Every heatmap of every view at its defaults (the real model's: tests/test_real_views.py)."""
    for view in (v for v in VIEWS.values() if not v.model):
        for table in view.run({}).tables:
            if table.heat:
                yield view.id, table


HEAT_TABLES = list(_heat_tables())


def test_the_matrices_the_tour_shows_are_heatmaps():
    kinds = {(view, table.key): table.heat for view, table in HEAT_TABLES}
    assert kinds[("attention", "scaled")] == kinds[("attention", "raw")] == "weights"
    assert kinds[("attention", "scores")] == "signed"
    assert kinds[("cat", "sat")] == "weights"
    assert kinds[("positional", "table")] == "signed"
    assert kinds[("rope", "scores")] == "signed"
    assert kinds[("mask", "mask")] == "mask"
    assert kinds[("heads", "head0")] == "weights"
    assert kinds[("tiny-attention", "head0")] == kinds[("tiny-verb", "verb")] == "weights"


def _rendered_cells(table, mode):
    """The rendered table's body rows, as lists of (text, style) per non-blank run."""
    console = Console(width=200, force_terminal=True, color_system="truecolor", file=None, highlight=False)
    lines = console.render_lines(lay_out(table, "en", colors=mode), console.options, pad=False)
    rows = []
    for line in lines[2:]:  # after the header and its rule
        runs = [(seg.text, seg.style or Style()) for seg in line if seg.text.strip()]
        rows.append(runs)
    return rows


@pytest.mark.parametrize("mode", heat.MODES)
@pytest.mark.parametrize("view,table", HEAT_TABLES, ids=[f"{v}-{t.key}" for v, t in HEAT_TABLES])
def test_every_rendering_marks_the_largest_weight_of_each_row(view, table, mode):
    """In 16 colours and without colour (and in colour) the peak of a row is bold and no other cell is:
    a learner never has to tell two shades apart to find it. Every number is still printed."""
    rows = _rendered_cells(table, mode)
    assert len(rows) == len(table.rows)
    keys = [c.key for c in table.columns]
    cols = [keys.index(k) for k in table.heat_cols] if table.heat_cols else list(range(1, len(keys)))
    for row, runs in zip(table.rows, rows):
        texts = [format_value(v, c.fmt, "en") for v, c in zip(row, table.columns)]
        shown = "".join(t for t, _ in runs).replace(" ", "")
        assert shown == "".join(texts).replace(" ", ""), "every value is printed as it is"
        if table.heat != "weights" or len(cols) < 2:
            continue
        numbers = [row[j] for j in cols if isinstance(row[j], float)]
        top = max(numbers)
        by_text = {}
        for text, style in runs:
            by_text.setdefault(text.strip(), []).append(bool(style.bold))
        peak_text = format_value(top, table.columns[cols[numbers.index(top)]].fmt, "en")
        assert all(by_text[peak_text]), (row, mode)
        for j in cols:
            if row[j] != top and not (mode == "mono" and row[j] >= 0.4):
                text = format_value(row[j], table.columns[j].fmt, "en")
                if text != peak_text:
                    assert not any(by_text[text]), (row, j, mode)


def test_one_shaded_column_marks_its_largest_value():
    """The cat sentence shades one column: its peak is the column's, not every cell of it."""
    table = Table("t", Tr("t", "t"), (Column("tok", Tr("tok", "tok")), Column("w", Tr("w", "w"), ".3f")),
                  (("a", 0.2), ("b", 0.7), ("c", 0.1)), heat="weights", heat_cols=("w",))
    for mode in heat.MODES:
        bold = ["bold" in s for _, s in heat.table_styles(table, mode)]
        assert bold == [False, True, False], mode


def test_signed_shades_follow_the_sign_and_the_tables_scale():
    table = Table("t", Tr("t", "t"), (Column("r", Tr("r", "r")), Column("a", Tr("a", "a"), "+.2f"),
                                      Column("b", Tr("b", "b"), "+.2f")),
                  (("x", 4.0, -4.0), ("y", 0.1, -2.0)), heat="signed")
    styles = heat.table_styles(table, "color")
    strongest_pos, strongest_neg = styles[0][1], styles[0][2]
    assert strongest_pos.endswith(heat.POSITIVE[-1]) and strongest_neg.endswith(heat.NEGATIVE[-1])
    assert styles[1][1] == "dim"  # 0.1 of a scale of 4: next to nothing
    assert styles[1][2].endswith(heat.NEGATIVE[1])  # half the scale: a middle shade
    assert Color.parse(heat.POSITIVE[-1]).triplet.red > Color.parse(heat.NEGATIVE[-1]).triplet.red


def test_a_changed_line_repaints_only_from_its_first_difference_to_its_last():
    """The page's Lines widget (tui/widgets/lines.py) refreshes the cells of a line that changed, so one new
    number in a heatmap row sends that number; wide characters are never cut in half."""
    from rich.text import Text

    from tui.widgets.lines import _changed

    assert _changed(Text("tok 0  0.500  0.250"), Text("tok 0  0.700  0.250")) == (9, 10)  # the one digit
    assert _changed(Text("same"), Text("same")) == (0, 0)
    bold = Text("ab 0.5")
    bold.stylize("bold", 3, 6)
    assert _changed(Text("ab 0.5"), bold) == (3, 6)  # a new style is a change, with the same characters
    assert _changed(Text("头 0.5"), Text("头 0.7")) == (5, 6)  # 头 takes two cells
    assert _changed(Text("中文"), Text("中字")) == (2, 4)  # both cells of the changed character
    assert _changed(Text("abc"), Text("ab")) == (2, 3)  # a shorter line blanks what it left
