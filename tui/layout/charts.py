"""Charts: an engine Chart (engine/views/core.py) drawn as lines of Rich text, in the page like a table
(tui/layout/blocks.py places them).

Every character is one a terminal measures the same way everywhere: ASCII, and braille dots (U+2800 to
U+28FF, of neutral East Asian width). Box drawing and block elements are ambiguous width and take two cells
in many CJK terminals, so they are never used; a bar is a run of shaded spaces. Labels are measured with
rich.cells.cell_len, so Chinese labels line up.

    line    every series on shared axes: braille dots, 2 x 4 to a cell, one colour per series
    strips  each series in a strip of its own, one under the other, all on one x axis (small multiples)
    stack   each series one horizontal bar, split into its parts in proportion, each part's share printed
            in it when it has room

The renderings follow tui/heat.py's modes. "color": the Okabe-Ito colours, which colour-blind readers can
tell apart; "ansi": seven ANSI colours, distinct too as Textual's theme maps them; "mono" (NO_COLOR,
`xf-tour print --plot`): no colour, so a line chart marks each series with its own ASCII character at one
point a cell, and each part of a bar is filled with its own character.

The library charts (plotext, textual-plot) were measured for this and fail two needs named in the README:
their frames and bars use box-drawing and block characters, which CJK terminals draw two cells wide, and
they are widgets that repaint whole, where the tour's page repaints only the lines a key changed.
"""

import math

from rich.cells import cell_len
from rich.text import Text

from ..format import format_value
from .wrap import wrap_text

HEIGHT = {"line": 4, "strips": 2}  # text rows of a line chart, and of each strip
OKABE_ITO = ("#e69f00", "#56b4e9", "#009e73", "#f0e442", "#cc79a7", "#d55e00", "#0072b2")
# 16 colours: seven that stay seven when Textual reads them through its Monokai theme and a 16-colour terminal
# rounds them back (bright red and bright magenta both came out magenta: FFN and the output head alike)
ANSI = ("bright_cyan", "bright_yellow", "red", "bright_green", "bright_blue", "white", "bright_white")
MARKERS = ("*", "o", "+", "x", "#", "@", "%")    # mono: one per series of a line chart
FILLS = ("#", "=", ":", "+", ".", "~", "%")      # mono: one per part of a bar
DOTS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # braille bit of (dot row, dot column) in a cell
BRAILLE = 0x2800


def colour(i: int, mode: str) -> str:
    """The colour of series or part i: "" in mono."""
    if mode == "mono":
        return ""
    palette = OKABE_ITO if mode == "color" else ANSI
    return palette[i % len(palette)]


def render_chart(chart, lang: str, width: int, mode: str = "mono") -> list[Text]:
    """The chart as lines of text at most `width` cells wide: its title, the picture, the legend, the note."""
    lines = [Text(chart.title(lang), style="bold")]
    if chart.kind == "stack":
        lines += _stack(chart, lang, width, mode)
    else:
        lines += _plot(chart, lang, width, mode)
    if chart.note is not None:
        lines += wrap_text(chart.note(lang), width, "dim").split("\n")
    return [_crop(line, width) for line in lines]


def _crop(line: Text, width: int) -> Text:
    if cell_len(line.plain) > width:
        line.truncate(width)
    return line


def _tick(v: float) -> str:
    return format_value(float(v), "sig3", "en") if math.isfinite(v) else str(v)


# --- line and strips ------------------------------------------------------------------------------------

def _position(xs, log_x):  # [n] -> [n] in [0, 1]
    t = [math.log10(x) for x in xs] if log_x else list(xs)
    lo, hi = min(t), max(t)
    return [(v - lo) / (hi - lo) if hi > lo else 0.5 for v in t]


def _y_range(chart, series):
    if chart.y_range is not None:
        return chart.y_range
    values = [v for s in series for v in s.values if math.isfinite(v) and (v > 0 or not chart.log_y)]
    lo, hi = (min(values), max(values)) if values else (1.0, 10.0)
    if hi == lo:
        return (lo / 2, hi * 2) if chart.log_y else (lo - 0.5, hi + 0.5)
    return lo, hi


def _sample(pos, values, at):  # the series' value at `at` in [0, 1], linear between its points
    if at <= pos[0]:
        return values[0]
    for k in range(1, len(pos)):
        if at <= pos[k]:
            a, b = pos[k - 1], pos[k]
            w = (at - a) / (b - a) if b > a else 1.0
            return values[k - 1] + w * (values[k] - values[k - 1])
    return values[-1]


class _Values:  # what _canvas reads of a series: its values
    def __init__(self, values):
        self.values = tuple(values)


def _canvas(series_list, pos, y_lo, y_hi, cols, rows, mode, first=0, log_y=False, markers=None, x_span=(0.0, 1.0)):
    """The plot area as `rows` lines of `cols` cells: (character, style) per cell. Series i takes colour and
    marker first + i. `markers`: one ASCII marker a cell instead of braille (by default in mono); `x_span`: the
    part of the x range to draw, in [0, 1]."""
    markers = mode == "mono" if markers is None else markers
    if log_y:  # plot log10 of every value, on log10 of the limits
        series_list = [_Values(math.log10(v) if v > 0 else -math.inf for v in s.values) for s in series_list]
        y_lo, y_hi = math.log10(y_lo), math.log10(y_hi)
    cells = [[(" ", "")] * cols for _ in range(rows)]
    if markers:  # one marker a cell, at the cell's middle
        for i, s in enumerate(series_list):
            for c in range(cols):
                v = _sample(pos, s.values, (c + 0.5) / cols)
                if math.isfinite(v):
                    r = rows - 1 - min(rows - 1, max(0, int((v - y_lo) / (y_hi - y_lo) * rows)))
                    cells[r][c] = (MARKERS[(first + i) % len(MARKERS)], "")
        return cells
    bits = [[0] * cols for _ in range(rows)]
    owner = [[-1] * cols for _ in range(rows)]
    dot_rows, dot_cols = 4 * rows, 2 * cols
    for i, s in enumerate(series_list):
        last = None
        for dc in range(dot_cols):
            at = (dc + 0.5) / dot_cols
            if not x_span[0] - 0.5 / dot_cols <= at <= x_span[1] + 0.5 / dot_cols:
                continue
            v = _sample(pos, s.values, at)
            if not math.isfinite(v):
                last = None
                continue
            dr = dot_rows - 1 - min(dot_rows - 1, max(0, int((v - y_lo) / (y_hi - y_lo) * dot_rows)))
            span = range(min(last, dr), max(last, dr) + 1) if last is not None and abs(last - dr) > 1 else (dr,)
            for r in span:  # a steep step is drawn as a vertical run, so the curve stays unbroken
                bits[r // 4][dc // 2] |= DOTS[r % 4][dc % 2]
                owner[r // 4][dc // 2] = i
            last = dr
    for r in range(rows):
        for c in range(cols):
            if bits[r][c]:
                cells[r][c] = (chr(BRAILLE + bits[r][c]), colour(first + owner[r][c], mode))
    return cells


def _row_text(gutter: str, cells) -> Text:
    line = Text(gutter)
    run, run_style = "", None
    for ch, style in cells:
        if style != run_style and run:
            line.append(run, run_style or "")
            run = ""
        run, run_style = run + ch, style
    if run:
        line.append(run.rstrip() if not run_style else run, run_style or "")
    return line


def _plot(chart, lang, width, mode) -> list[Text]:
    series = list(chart.series)
    if not series or not chart.x:
        return []
    pos = _position(chart.x, chart.log_x)
    strips = chart.kind == "strips"
    groups = [[s] for s in series] if strips else [series]
    rows = HEIGHT[chart.kind]
    labels = [s.label(lang) for s in series]
    out = []
    if strips:  # label | strip, for each series; the y range shared
        y_lo, y_hi = _y_range(chart, series)
        gutter_w = max(cell_len(lab) for lab in labels) + 1
        cols = max(8, width - gutter_w - 1)
        for i, (group, label) in enumerate(zip(groups, labels)):
            canvas = _canvas(group, pos, y_lo, y_hi, cols, rows, mode, first=i)
            for r, cells in enumerate(canvas):
                text = label if r == 0 else ""
                out.append(_row_text(text + " " * (gutter_w - cell_len(text)) + "|", cells))
        out.append(_x_axis(chart, lang, gutter_w + 1, cols))
        return out
    y_lo, y_hi = _y_range(chart, series)
    top, bottom = _tick(y_hi), _tick(y_lo)
    gutter_w = max(cell_len(top), cell_len(bottom)) + 1
    cols = max(8, width - gutter_w - 1)
    canvas = _canvas(series, pos, y_lo, y_hi, cols, rows, mode, log_y=chart.log_y)
    for r, cells in enumerate(canvas):
        tick = top if r == 0 else bottom if r == rows - 1 else ""
        out.append(_row_text(" " * (gutter_w - 1 - cell_len(tick)) + tick + " |", cells))
    out.append(_x_axis(chart, lang, gutter_w + 1, cols))
    if len(series) > 1 or chart.y_label is not None:  # one series and no unit: the title says it all
        out += _legend([(lab, i) for i, lab in enumerate(labels)], chart.y_label, lang, width, mode, MARKERS)
    return out


def _x_axis(chart, lang, indent, cols) -> Text:
    """The x ticks under the plot, each at its place: the first x, the one nearest the middle and the last;
    then the x label, when it fits."""
    xs, pos = chart.x, _position(chart.x, chart.log_x)
    mid = min(range(len(xs)), key=lambda k: abs(pos[k] - 0.5))
    line = [" "] * cols
    for k in dict.fromkeys((0, len(xs) - 1, mid)):  # the ends first: they must show
        text = _tick(xs[k])
        at = max(0, min(cols - len(text), round(pos[k] * (cols - 1)) - len(text) // 2))
        if all(ch == " " for ch in line[max(0, at - 1):at + len(text) + 1]):
            line[at:at + len(text)] = list(text)
    axis = " " * indent + "".join(line).rstrip()
    if chart.x_label is not None:
        label = chart.x_label(lang)
        if cell_len(axis) + 2 + cell_len(label) <= indent + cols:
            axis += "  " + label
    return Text(axis, style="dim")


def _legend(items, y_label, lang, width, mode, marks) -> list[Text]:
    """Each series' mark and label, wrapped to the width; the y axis' unit first."""
    pieces = []
    if y_label is not None:
        pieces.append([(f"y: {y_label(lang)}", "dim")])
    for label, i in items:
        mark = marks[i % len(marks)] * 2 if mode == "mono" else "--"
        pieces.append([(mark, colour(i, mode) or "bold"), (" " + label, "")])
    return _wrap_pieces(pieces, width)


def _wrap_pieces(pieces, width) -> list[Text]:
    lines, line, used = [], Text(), 0
    for piece in pieces:
        size = sum(cell_len(t) for t, _ in piece)
        if used and used + 2 + size > width:
            lines.append(line)
            line, used = Text(), 0
        if used:
            line.append("  ")
            used += 2
        for t, style in piece:
            line.append(t, style)
        used += size
    if used:
        lines.append(line)
    return lines


# --- stacked bars ---------------------------------------------------------------------------------------

def split(values, cells: int) -> list[int]:
    """Cells for each part in proportion to its value, summing to `cells` (largest remainder)."""
    total = sum(values)
    if total <= 0:
        return [0] * len(values)
    exact = [v / total * cells for v in values]
    out = [math.floor(e) for e in exact]
    for k in sorted(range(len(values)), key=lambda k: exact[k] - out[k], reverse=True)[:cells - sum(out)]:
        out[k] += 1
    return out


def _share(v, total) -> str:
    pct = 100 * v / total
    return f"{pct:.1f}%" if pct < 10 else f"{pct:.0f}%"


def _stack(chart, lang, width, mode) -> list[Text]:
    from ..heat import text_on

    labels = [s.label(lang) for s in chart.series]
    gutter_w = max((cell_len(lab) for lab in labels), default=0) + 1
    cells = max(10, width - gutter_w)
    out = []
    for label, s in zip(labels, chart.series):
        line = Text(label + " " * (gutter_w - cell_len(label)))
        total = sum(s.values)
        for i, (v, n) in enumerate(zip(s.values, split(s.values, cells))):
            if n == 0:
                continue
            share = _share(v, total)
            fill = FILLS[i % len(FILLS)] if mode == "mono" else " "
            body = share if len(share) + 2 <= n else ""
            left = (n - len(body)) // 2
            seg = fill * left + body + fill * (n - left - len(body))
            if mode == "mono":
                line.append(seg)
            else:
                bg = colour(i, mode)
                fg = text_on(bg) if bg.startswith("#") else "black"
                line.append(seg, f"{fg} on {bg}")
        out.append(line)
    marks = [FILLS[i % len(FILLS)] * 2 if mode == "mono" else "  " for i in range(len(chart.parts))]
    pieces = []
    for i, (part, mark) in enumerate(zip(chart.parts, marks)):
        style = "" if mode == "mono" else f"on {colour(i, mode)}"
        pieces.append([(mark, style), (" " + part(lang), "")])
    return out + _wrap_pieces(pieces, width)


# --- the live panel's curves ----------------------------------------------------------------------------

def sparkline(points, total_steps: int, width: int, mode: str = "mono") -> Text:
    """[step, value] points as one line of braille, `width` cells standing for steps 0 .. total_steps, so the
    curve grows to the right while training runs; scaled between the smallest and the largest value so far.
    Braille in every mode (one row has no room for ASCII markers); coloured unless mono."""
    if not points:
        return Text(" " * width)
    steps, values = zip(*points)
    lo, hi = min(values), max(values)
    pos = [s / total_steps for s in steps]
    cells = _canvas([_Values(values)], pos, lo, hi if hi > lo else lo + 1, width, 1, mode, markers=False,
                    x_span=(pos[0], pos[-1]))
    line = _row_text("", cells[0])
    line.append(" " * (width - cell_len(line.plain)))  # the text after it stays in place while the curve grows
    return line
