"""An engine Table laid out once, for the page and for `print` alike.

`lay_out` turns a table into cells (text, style, spans), the rows shown with a "..." row for each run left
out, what changed marked, the heatmap's shading, each column's width and justification: the layout Rich's
table gives these cells (no box, or the ASCII header rule; one cell of padding between columns, none at the
edges; cells of one line that fit). `justify` and `cut` pad a cell and cut it into style runs as Rich does.
The emitters dress the runs: tui/layout/flatten.py in Rich styles for the app, tui/layout/terminal.py in
SGR codes for `print`; where a table needs more than this (a control character, a screen too narrow) they
let Rich draw it (Grid.rich, the same cells in a Rich Table). Also here: which tables share a line
(`arrange`), the rows a step picks, and the facts' lines.
"""

from rich import box
from rich.cells import cell_len

from ..format import format_value, is_numeric
from .wrap import MARK

CONTROL = frozenset(map(chr, (*range(32), 127)))  # Rich expands tabs, drops some, breaks lines on "\n"

# A header rule of ASCII hyphens, no other lines: box-drawing characters are East Asian
# ambiguous width and can double in CJK terminals, which would break the rows.
PLAIN = box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)
RULE = PLAIN.head_row_horizontal  # the header rule's character
ELLIPSIS = "..."  # the row that stands for rows left out


class Grid:
    """One engine table's cells, laid out: `header` and each row's cells as (text, style, spans), spans being
    (start, end, style); `row_styles` (None, or "dim" for a "..." row); `right`, whether each column is
    justified right; `widths`, each column's widest cell in cells; `header_style`; `rule`, whether a rule
    of hyphens sits under the header (print) or the header is underlined instead (the page)."""

    __slots__ = ("header", "rows", "row_styles", "right", "widths", "header_style", "rule", "plain", "_table")

    def __init__(self, header, rows, row_styles, right, rule):
        self.header, self.rows, self.row_styles, self.right, self.rule = header, rows, row_styles, right, rule
        self.header_style = "bold" if rule else "bold underline"
        self.widths = [max(cell_len(cell[0]) for cell in column) for column in zip(header, *rows)]
        self.plain = not any(CONTROL & set(cell[0]) for cells in (header, *rows) for cell in cells)
        self._table = None

    def lines(self):
        """(style of the row, cells) for the header and each row, in order."""
        return [(self.header_style, self.header), *zip(self.row_styles, self.rows)]

    def __rich__(self):
        """The same cells as a Rich Table, for Rich to draw where the emitters do not (a grid of tables, a
        control character, a table wider than the screen). Made once: Rich asks for it to measure and to draw."""
        if self._table is None:
            self._table = self._rich_table()
        return self._table

    def _rich_table(self):
        from rich.table import Table
        from rich.text import Span, Text

        out = Table(box=PLAIN if self.rule else None, show_edge=False, pad_edge=False, padding=(0, 1),
                    header_style=self.header_style)
        for (label, _, _), right in zip(self.header, self.right):
            out.add_column(Text(label), justify="right" if right else "left", overflow="fold")
        for cells, style in zip(self.rows, self.row_styles):
            if style is not None:  # a "..." row: strings, as Rich's add_row takes them
                out.add_row(*(plain for plain, _, _ in cells), style=style)
            else:
                out.add_row(*(Text(plain, style=st, spans=[Span(a, b, s) for a, b, s in spans])
                              for plain, st, spans in cells))
        return out


def lay_out(table, lang: str, rule: bool = True, rows=None, marked=frozenset(), added=frozenset(),
            colors: str = "mono") -> Grid:
    """An engine table's cells. `rows`: the row indices to show, a "..." row standing for each run left out;
    `marked`: (row, column) cells to underline; `added`: rows to underline whole. Without `rule` the header is
    underlined instead of ruled, which saves a line on a small screen. `colors`: how a heatmap is shaded
    (tui/heat.py: "color", "ansi" or "mono")."""
    from ..heat import table_styles

    cols = table.columns
    header = [(c.label(lang), "", ()) for c in cols]
    gap = [(ELLIPSIS, "", ())] + [("", "", ())] * (len(cols) - 1)
    styles = table_styles(table, colors)
    body, row_styles, last = [], [], -1
    for i in (range(len(table.rows)) if rows is None else rows):
        if i > last + 1:
            body.append(gap)
            row_styles.append("dim")
        last = i
        cells = []
        for j, (value, col) in enumerate(zip(table.rows[i], cols)):
            plain = format_value(value, col.fmt, lang)
            marks = ((0, len(plain), MARK),) if plain and (i in added or (i, j) in marked) else ()
            cells.append((plain, styles[i][j], marks))  # the text only: a number's padding is not part of what changed
        body.append(cells)
        row_styles.append(None)
    if rows is not None and last < len(table.rows) - 1:
        body.append(gap)
        row_styles.append("dim")
    return Grid(header, body, row_styles, [is_numeric(c.fmt) for c in cols], rule)


def justify(cell, width: int, right: bool):
    """A cell padded to `width` cells as Rich justifies one: right strips trailing space, then pads on the left.
    The cell's own style becomes a span over all of it, the padding included, ahead of its other spans."""
    plain, style, spans = cell
    if right:
        plain = plain.rstrip()
        spans = [(a, min(b, len(plain)), s) for a, b, s in spans if a < len(plain)]
        pad = width - cell_len(plain)
        plain = " " * pad + plain
        spans = [(a + pad, b + pad, s) for a, b, s in spans]
    else:
        plain += " " * (width - cell_len(plain))
    return plain, [(0, len(plain), style), *spans] if style else list(spans)


def cut(plain: str, spans) -> list[tuple[str, list]]:
    """The runs Rich writes for a text: cut wherever a span starts or ends, each run with the styles of the
    spans over it, in order; None for a text without spans."""
    if not spans:
        return [(plain, None)]
    cuts = sorted({0, len(plain), *(a for a, _, _ in spans), *(b for _, b, _ in spans)})
    return [(plain[a:b], [s for sa, sb, s in spans if sa <= a and b <= sb]) for a, b in zip(cuts, cuts[1:])]


def table_width(table, lang: str) -> int:
    """Cells the rendered table needs: widest cell per column, one space of padding between columns."""
    widths = [cell_len(col.label(lang)) for col in table.columns]
    for row in table.rows:
        for i, (value, col) in enumerate(zip(row, table.columns)):
            widths[i] = max(widths[i], cell_len(format_value(value, col.fmt, lang)))
    return sum(widths) + 2 * (len(widths) - 1)


def shown_rows(table, picks) -> list[int] | None:
    """The row indices a step's `rows` entry picks, in order, each once; None for every row."""
    if picks is None:
        return None
    n = len(table.rows)
    return sorted({i % n for i in picks if -n <= i < n})


def arrange(result, keys, lang, width=80) -> list[list]:
    """The tables to show (those in keys, or all), in order, as lines of the page: a line is one table, or a
    run of weight maps set side by side, as many as the width allows."""
    lines, run = [], []

    def flush():
        while run:
            line = [run.pop(0)]
            used = max(table_width(line[0], lang), cell_len(line[0].title(lang)))
            while run and used + 3 + max(table_width(run[0], lang), cell_len(run[0].title(lang))) <= width:
                line.append(run.pop(0))
                used += 3 + max(table_width(line[-1], lang), cell_len(line[-1].title(lang)))
            lines.append(line)

    for table in result.tables:
        if keys and table.key not in keys:
            continue
        if table.heat == "weights" and not table.heat_cols:  # an attention map
            run.append(table)
            continue
        flush()
        lines.append([table])
    flush()
    return lines


def facts_lines(result, lang) -> list[str]:
    """Each fact as "label: value"."""
    colon = "：" if lang == "zh" else ": "
    return [f"{f.label(lang)}{colon}{format_value(f.value, f.fmt, lang)}" for f in result.facts]
