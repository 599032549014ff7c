"""Flatten a Rich renderable into one Text with as few style runs as possible.

Textual writes every style run of a changed line with its own escape codes. A Rich table splits
each row into many runs (cell, padding, separator) that mostly share one style, so a redrawn table
cost several times its visible text. Merging the runs keeps a key press under the byte budget that
an SSH link should carry.
"""

import io

from rich.cells import cell_len
from rich.console import Console, Group
from rich.segment import Segment
from rich.style import Style
from rich.text import Span, Text

_INVISIBLE_ON_SPACE = Style(bold=False, dim=False, italic=False)  # attributes a blank cell cannot show


def _blank_equivalent(a: Style | None, b: Style | None) -> bool:
    """Whether a run of spaces looks the same in style a as in style b."""
    a, b = a or Style(), b or Style()
    return (a + _INVISIBLE_ON_SPACE) == (b + _INVISIBLE_ON_SPACE)


_console: Console | None = None


def flatten(renderable, width: int) -> Text:
    """Render at `width` cells and rebuild as a Text whose adjacent runs never share a style."""
    global _console
    if _console is None:  # one console for every call: making one costs more than a small table
        _console = Console(width=width, force_terminal=True, color_system="truecolor", legacy_windows=False,
                           highlight=False, emoji=False, file=io.StringIO())
    lines = _lines(renderable, _console.options.update_width(width))
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
        for text, style in runs:
            out.append(text.rstrip() if text is runs[-1][0] else text, style)
    return out


_CONTROL = frozenset(map(chr, (*range(32), 127)))


def _lines(renderable, options) -> list:
    """Rich's lines for a renderable, as render_lines(..., pad=False) gives them. A Group is its items' lines
    one after the other, and a table of the page's kind is laid out here (_table_lines): Rich's general
    layout took two thirds of a key's time. Anything else Rich renders."""
    from rich.table import Table  # where a table is drawn, not at start-up

    if isinstance(renderable, Group) and all(getattr(item, "end", "\n") == "\n" for item in renderable.renderables):
        return [line for item in renderable.renderables for line in _lines(item, options)]
    if isinstance(renderable, Table):
        lines = _table_lines(renderable, options.max_width)
        if lines is not None:
            return lines
    return _console.render_lines(renderable, options, pad=False)


def _cell_text(cell):
    """A cell as the Text Rich would render, or None where it would do more (markup, wrapping, tabs)."""
    if isinstance(cell, str):
        if "[" in cell or _CONTROL & set(cell):
            return None
        return Text(cell)
    if not isinstance(cell, Text) or _CONTROL & set(cell.plain) or cell.justify or cell.no_wrap \
            or cell.overflow not in (None, "fold"):
        return None
    return cell


def _table_lines(table, max_width: int) -> list | None:
    """The lines of a table as Rich draws it, for tables as tui/plain.py's render_table makes them without a
    rule: no box, padding of one cell between columns and none at the edges, a header, cells of one line that
    fit their columns. None for any other table: Rich draws it."""
    columns = table.columns
    if (table.box is not None or not table.show_header or table.show_footer or table.show_lines or table.leading
            or table.expand or table.width is not None or table.min_width is not None or table.title
            or table.caption or table.collapse_padding or table.pad_edge or table.style not in (None, "", "none")
            or table.row_styles
            or not columns or tuple(table.padding) != (0, 1, 0, 1)):
        return None
    get_style = _console.get_style
    grid, widths, last = [], [], len(columns) - 1
    for j, col in enumerate(columns):
        if (col.width is not None or col.min_width is not None or col.max_width is not None or col.ratio
                or col.no_wrap or col.style or col.header_style or col.vertical != "top"
                or col.justify not in ("left", "right") or col.overflow != "fold"):
            return None
        cells = [_cell_text(c) for c in (col.header, *col.cells)]
        if None in cells:
            return None
        pad = (j > 0) + (j < last)
        widths.append(max(cell_len(c.plain) for c in cells) + pad)
        grid.append(cells)
    if sum(widths) > max_width or min(widths) < 1:
        return None
    header = get_style(table.header_style or "")
    bases = [header, *(Style.null() + get_style(row.style) if row.style is not None else Style.null()
                       for row in table.rows)]
    lines = []
    for i, base in enumerate(bases):
        line = []
        for j, col in enumerate(columns):
            left, right = int(j > 0), int(j < last)
            runs = _justified(grid[j][i], widths[j] - left - right, col.justify)
            if left:
                line.append(Segment(" ", base))
            line += [Segment(text, (base + style if style else base) if base else style) for text, style in runs]
            if right:
                line.append(Segment(" ", base))
        lines.append(line)
    return lines


def _justified(text, width: int, justify: str) -> list:
    """(text, style) runs of a one-line Text justified in `width` cells, cut where Rich cuts them: at every
    span's start and end; the style as Rich combines it, None for none."""
    plain, spans = text.plain, list(text.spans)
    if justify == "right":
        stripped = plain.rstrip()
        spans = [Span(a, min(b, len(stripped)), s) for a, b, s in spans if a < len(stripped)]
        pad = width - cell_len(stripped)
        plain = " " * pad + stripped
        spans = [Span(a + pad, b + pad, s) for a, b, s in spans]
    else:
        plain += " " * (width - cell_len(plain))
    if text.style:
        spans = [Span(0, len(plain), text.style), *spans]
    if not spans:
        return [(plain, None)]
    get_style = _console.get_style
    styles = [get_style(s, default=Style.null()) for _, _, s in spans]
    cuts = sorted({0, len(plain), *(a for a, _, _ in spans), *(b for _, b, _ in spans)})
    runs = []
    for a, b in zip(cuts, cuts[1:]):
        on = [st for (sa, sb, _), st in zip(spans, styles) if sa <= a and b <= sb]
        runs.append((plain[a:b], Style.combine([Style.null(), *on])))
    return runs
