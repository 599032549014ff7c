"""The app's emitter: a Rich renderable flattened into one Text with as few style runs as possible.

Textual writes every style run of a changed line with its own escape codes. A Rich table splits
each row into many runs (cell, padding, separator) that mostly share one style, so a redrawn table
cost several times its visible text. Merging the runs keeps a key press under the byte budget that
an SSH link should carry.

The page's tables come as tui/layout/tables.py laid them out (a Grid): their lines are made here from its
cells, in Rich's styles, where Rich's general layout took two thirds of a key's time. Anything else, and a
Grid that needs more (a header rule, a control character, a screen too narrow), Rich renders.
"""

import io

from rich.console import Console, Group
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from .tables import Grid, cut, justify

_INVISIBLE_ON_SPACE = Style(bold=False, dim=False, italic=False)  # attributes a blank cell cannot show


def _blank_equivalent(a: Style | None, b: Style | None) -> bool:
    """Whether a run of spaces looks the same in style a as in style b."""
    a, b = a or Style(), b or Style()
    return (a + _INVISIBLE_ON_SPACE) == (b + _INVISIBLE_ON_SPACE)


_console: Console | None = None


def console() -> Console:
    """The one console every call draws with: making one costs more than a small table."""
    global _console
    if _console is None:
        _console = Console(width=80, force_terminal=True, color_system="truecolor", legacy_windows=False,
                           highlight=False, emoji=False, file=io.StringIO())
    return _console


def flatten(renderable, width: int) -> Text:
    """Render at `width` cells and rebuild as a Text whose adjacent runs never share a style."""
    lines = _lines(renderable, console().options.update_width(width))
    out = Text(no_wrap=True, overflow="ignore", end="")
    for i, line in enumerate(lines):
        if i:
            out.append("\n")
        runs: list[list] = []
        for seg in Segment.simplify(line):
            if seg.control:
                continue
            style = seg.style
            if runs and (style == runs[-1][1] or (not seg.text.strip() and _blank_equivalent(style, runs[-1][1]))):
                runs[-1][0] += seg.text
            elif runs and not runs[-1][0].strip() and _blank_equivalent(style, runs[-1][1]):
                runs[-1] = [runs[-1][0] + seg.text, style]  # leading blanks take the style of what follows
            else:
                runs.append([seg.text, style])
        for k, (text, style) in enumerate(runs):  # by place: `is` took any equal short string for the last
            last = k == len(runs) - 1
            out.append(text.rstrip() if last and not _shows_on_blank(style) else text, style)
    return out


def _shows_on_blank(style: Style | None) -> bool:
    """Whether spaces in this style are seen as a block: a background (a bar's segment, a shaded cell), reverse.
    (An underline over a header's padding is cut, as it always was.)"""
    return bool(style) and bool(style.bgcolor or style.reverse)


def _lines(renderable, options) -> list:
    """Rich's lines for a renderable, as render_lines(..., pad=False) gives them. A Group is its items' lines
    one after the other, and a table as the page draws it is laid out here (table_lines). Anything else Rich
    renders."""
    if isinstance(renderable, Group) and all(getattr(item, "end", "\n") == "\n" for item in renderable.renderables):
        return [line for item in renderable.renderables for line in _lines(item, options)]
    if isinstance(renderable, Grid):
        lines = table_lines(renderable, options.max_width)
        if lines is not None:
            return lines
    return console().render_lines(renderable, options, pad=False)


def table_lines(grid: Grid, max_width: int) -> list | None:
    """The lines of a laid-out table as Rich draws it without a rule: padding of one cell between columns and
    none at the edges, each row's style under its cells' own. None where Rich must draw it: a table with a
    header rule, a control character in a cell, or wider than `max_width`."""
    if grid.rule or not grid.plain:
        return None
    last = len(grid.widths) - 1
    widths = [w + (j > 0) + (j < last) for j, w in enumerate(grid.widths)]
    if sum(widths) > max_width or min(widths) < 1:
        return None
    get_style = console().get_style
    lines = []
    for i, (row_style, cells) in enumerate(grid.lines()):
        if i == 0:  # the header
            base = get_style(row_style)
        else:
            base = Style.null() + get_style(row_style) if row_style is not None else Style.null()
        line = []
        for j, cell in enumerate(cells):
            plain, spans = justify(cell, grid.widths[j], grid.right[j])
            if j:
                line.append(Segment(" ", base))
            for text, styles in cut(plain, spans):
                style = None if styles is None else Style.combine(
                    [Style.null(), *(get_style(s, default=Style.null()) for s in styles)])
                line.append(Segment(text, (base + style if style else base) if base else style))
            if j < last:
                line.append(Segment(" ", base))
        lines.append(line)
    return lines
