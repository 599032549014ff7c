"""print's emitter: `xf-tour print VIEW` as the characters and SGR codes Rich's console writes, without it.

Importing rich.console (with its styles, texts and tables) costs more than computing most views, so the
printer writes the simple page of a view itself: titles, wrapped prose, tables with an ASCII header
rule (laid out by tui/layout/tables.py, as for the page), weight maps side by side, facts. It follows the
rest of Rich's rules (which runs of text carry which style, the escape codes on a terminal), and wherever
a page needs more than those rules (a line or table wider than the screen, a control character, a
terminal Rich would treat specially) render_views returns None and Rich prints tui/layout/blocks.py's
render_result. tests/test_textout.py compares the two on every view, in both languages.
"""

import os
import sys

from rich.cells import cell_len

from ..format import settings_line
from .tables import CONTROL, RULE, arrange, cut, facts_lines, justify, lay_out, table_width
from .wrap import prose_runs

_SGR = {"bold": "1", "dim": "2", "underline": "4", "reverse": "7"}  # Rich writes them in this order


class Fallback(Exception):
    """This page needs more of Rich than the rules here follow: let Rich print it."""


def screen(environ=os.environ, stdout=None) -> tuple[int, bool] | None:
    """The width Rich's console would use for stdout and whether it would write styles: its checks in
    its order; None where they would not be simple (Windows, IDLE, Jupyter, a dumb terminal)."""
    import builtins

    stdout = sys.stdout if stdout is None else stdout
    if sys.platform == "win32" or hasattr(builtins, "get_ipython"):
        return None
    if getattr(sys.stdin, "__module__", "").startswith("idlelib"):
        return None
    compatible, force = environ.get("TTY_COMPATIBLE", ""), environ.get("FORCE_COLOR")
    if compatible in ("0", "1"):
        terminal = compatible == "1"
    elif force is not None:
        terminal = force != ""
    else:
        try:
            terminal = bool(stdout.isatty())
        except (AttributeError, ValueError):
            terminal = False
    if terminal and environ.get("TERM", "").lower() in ("dumb", "unknown"):
        return None
    columns, lines = environ.get("COLUMNS"), environ.get("LINES")
    width = int(columns) if columns is not None and columns.isdigit() else None
    if width is None or not (lines is not None and lines.isdigit()):
        measured = None
        for fd in (0, 1, 2):
            try:
                measured = os.get_terminal_size(fd)[0]
            except (AttributeError, ValueError, OSError):
                continue
            break
        width = width if width is not None else (measured or 80)
    if width < 1:
        return None
    return width, terminal


# --- texts: (plain, style, spans) as a Rich Text holds them, and the segments Rich cuts them into -----
# A style here is a frozenset of SGR words: the union of the words over a run is its style.

def _words(style: str) -> frozenset:
    words = frozenset(style.split())
    if not words <= _SGR.keys():
        raise Fallback(style)
    return words


def text(plain: str, style: str = "", spans=()) -> tuple:
    """A Rich Text: its characters, its own style, and (start, end, style) spans over parts of it."""
    if CONTROL & set(plain):
        raise Fallback(repr(plain))
    return plain, _words(style), list(spans)


def prose_text(runs, style: str) -> tuple:
    """A line of prose_runs() as wrap.prose builds its Text: the indent, then each piece appended."""
    if not runs:
        return text("")
    plain, spans = runs[0][0], []
    for piece, piece_style in runs[1:]:
        if piece_style:  # Rich's Text.append adds a span only for a style
            spans.append((len(plain), len(plain) + len(piece), _words(piece_style)))
        plain += piece
    return text(plain, style, spans)


def segments(t: tuple, under=frozenset(), width: int = 0, right: bool = False) -> list:
    """The (text, style) segments Rich writes for a text justified in `width` cells: cut wherever a span starts
    or ends; `under` is the style of what holds it (a table cell, a row)."""
    plain, style, spans = t
    if width:
        plain, spans = justify((plain, style, spans), width, right)
        style = frozenset()
    return [(piece, under | style | frozenset().union(*(words or ()))) for piece, words in cut(plain, spans) if piece]


def width_of(runs) -> int:
    return sum(cell_len(t) for t, _ in runs)


# --- tables --------------------------------------------------------------------------------------

_NONE = frozenset()


def table_lines(table, lang: str) -> list:
    """One engine table as Rich draws it with the header rule (tables.lay_out): lines of segments."""
    grid = lay_out(table, lang, rule=True)
    if not grid.plain:
        raise Fallback("a control character in a cell")
    last = len(grid.widths) - 1

    def row_line(cells, style):
        line = []
        for j, (cell, width) in enumerate(zip(cells, grid.widths)):
            if j:
                line += [(" ", _NONE), (" ", style)]  # the column divider, then the cell's left padding
            line += segments(_words_of(cell), style, width, grid.right[j])
            if j < last:
                line.append((" ", style))
        return line

    total = sum(grid.widths) + 3 * last
    return [row_line(grid.header, _words(grid.header_style)), [(RULE * total, _NONE)],
            *(row_line(cells, _NONE) for cells in grid.rows)]


def _words_of(cell) -> tuple:
    """A laid-out cell with its styles as SGR words."""
    plain, style, spans = cell
    return plain, _words(style), [(a, b, _words(s)) for a, b, s in spans]


def block_texts(table, lang: str, width: int) -> tuple[tuple, list, list]:
    """A table's title, its table and its note lines, as blocks.block draws them."""
    note = [] if table.note is None else [prose_text(runs, "dim")
                                          for runs in prose_runs(table.note(lang), width, style="dim", gap=False)]
    return text(table.title(lang), "bold"), table_lines(table, lang), note


def grid_lines(tables, lang: str) -> list:
    """Weight maps side by side, as blocks.render_tables sets them in a Rich grid: three spaces between.
    In a grid's cell Rich pads each text to the column's width in the text's style, and a table's lines
    with plain spaces."""
    blocks = [block_texts(t, lang, max(table_width(t, lang), 20)) for t in tables]
    columns = []
    for title, lines, note in blocks:
        width = max(cell_len(title[0]), width_of(lines[0]), *(cell_len(n[0]) for n in note))
        columns.append([segments(title, width=width)]
                       + [line + [(" " * (width - width_of(line)), _NONE)] for line in lines]
                       + [segments(n, width=width) for n in note])
    height = max(map(len, columns))
    out = []
    for i in range(height):
        line = []
        for k, column in enumerate(columns):
            line += column[i] if i < len(column) else [(" " * width_of(column[0]), _NONE)]
            if k < len(columns) - 1:
                line.append(("   ", _NONE))
        out.append(line)
    return out


# --- a page of views -----------------------------------------------------------------------------

def result_lines(result, title: str, lang: str, width: int) -> list:
    """blocks.render_result as lines of segments."""
    lines = [segments(text(title, "bold underline"))]
    lines += [segments(prose_text(runs, "dim"))
              for runs in prose_runs(settings_line(result.params), width, style="dim")]
    for line in arrange(result, (), lang, width):
        if len(line) == 1:
            title_text, table, note = block_texts(line[0], lang, width)
            lines += [segments(title_text), *table, *map(segments, note)]
        else:
            lines += grid_lines(line, lang)
        lines.append([])
    if result.facts:
        lines += [[(line, _NONE)] for fact in facts_lines(result, lang) for line in wrap(text(fact)[0], width)] + [[]]
    return lines


def wrap(plain: str, width: int) -> list[str]:
    """An unstyled text as Rich's Text.wrap cuts it for the screen: at spaces, folding a word too long."""
    if cell_len(plain) <= width:
        return [plain]
    from rich._wrap import divide_line

    cuts = [0, *divide_line(plain, width, fold=True), len(plain)]
    out = []
    for a, b in zip(cuts, cuts[1:]):
        line = plain[a:b]
        if len(line) > width:  # Rich drops the trailing spaces that pass the width
            line = line[:len(line) - min(len(line) - len(line.rstrip()), len(line) - width)]
        if cell_len(line) > width:
            raise Fallback("a word wider than the screen")
        out.append(line)
    return out


def render_views(results, lang: str, width: int, styled: bool) -> str | None:
    """(view, result) pairs one under another, a blank line between, as the Rich printer writes them;
    None when this page needs Rich."""
    try:
        lines = []
        for i, (view, result) in enumerate(results):
            lines += ([[]] if i else []) + result_lines(result, view.title(lang), lang, width)
    except Fallback:
        return None
    if any(width_of(line) > width for line in lines):  # Rich would wrap or shrink it
        return None
    return "".join(_line(line, styled) + "\n" for line in lines)


def _line(runs, styled: bool) -> str:
    if not styled:
        return "".join(t for t, _ in runs)
    return "".join(f"\x1b[{';'.join(sorted((_SGR[w] for w in style), key=int))}m{t}\x1b[0m"
                   if style and t else t for t, style in runs)
