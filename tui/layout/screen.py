"""A step's page at a width: where each part sits, to the cell (tui/page.py says what the parts are).

From top to bottom a page is:

    title      the lesson and the step, one line (two if the step's title is long)
    body       the step's tables, then its prose; from 120 columns, side by side
    message    two lines: what the last key changed and what to look for, or what the keys do
    footer     every experiment key with its setting as name=value, the view's other settings,
               then the keys that move and show things

A step fits when the whole page needs no more lines than the window has: then nothing scrolls. Everything
here is Rich, not Textual, so the same code decides what the app shows and whether a step fits 80x24
before any app runs (tui/fit.py).
"""

from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.console import Group
from rich.table import Table
from rich.text import Text

from lessons.template import printable

from .blocks import render_tables
from .flatten import flatten
from .tables import table_width
from .wrap import MARK, prose, shorten, wrap_lines, wrap_spans

MIN_WIDTH, MIN_HEIGHT = 80, 24  # the smallest window the tour runs in, and the one every step must fit
WIDE = 120                      # from this width on, the prose sits beside the tables
PROSE_MIN, PROSE_MAX = 40, 72   # the prose column's width when beside the tables
GUTTER = 3                      # cells between the tables and the prose
PAD = 1                         # cells of padding on each side of every line
MESSAGE_LINES = 2
TRAINING_LINES = 3              # the live-training panel, on the step whose key starts it


TITLE_MIN = 20  # cells the lesson's title keeps at least on the title line before the step's title gives way


def title_lines(lesson, index: int, pages: int, step_title: str, lang: str, width: int) -> list[Text]:
    """The lesson and the step on one line: the number, the lesson's title, "n/N" and the step's title. The
    lesson's title is shortened first, down to TITLE_MIN cells; then the step's title gives way too; never
    either title to nothing. A lesson's pages are its steps and the recap, which `o`, `lessons` and `print`
    count as its last step too."""
    room = width - 2 * PAD
    head, count = f"{lesson.order}. ", f"{index + 1}/{pages} "
    name, step = printable(lesson.title(lang)), printable(step_title)
    spare = room - cell_len(head) - 2 - cell_len(count)  # what the two titles share
    keep = min(cell_len(name), TITLE_MIN)
    if cell_len(name) + cell_len(step) > spare:
        if spare - cell_len(step) >= keep:
            name = shorten(name, spare - cell_len(step))
        elif spare - keep >= TITLE_MIN:  # the lesson's title at its least, the step's shortened to the rest
            name = shorten(name, keep)
            step = shorten(step, spare - cell_len(name))
        else:  # too narrow for both on one line: each on its own
            return [Text(head + name, style="bold"), *wrap_lines(count + step, room)]
    return [Text.assemble((head + name, "bold"), "  ", (count + step, ""))]


def footer_lines(items: list, width: int) -> list[Text]:
    """The footer wrapped to `width`: lit keys in reverse video, the rest dimmed; a changed setting underlined."""
    room, lines, line, used = width - 2 * PAD, [], Text(), 0
    for item in items:
        piece = (cell_len(item.key) + 1 if item.key else 0) + cell_len(item.label)
        if used and (item.newline or used + 2 + piece > room):
            lines.append(line)
            line, used = Text(), 0
        elif used:
            line.append("  ")
            used += 2
        if item.key:
            line.append(item.key, style="bold reverse" if item.live else "dim")
            line.append(" ")
        style = ("" if item.key else "dim") if item.live else "dim"
        line.append(item.label, style=f"{style} {MARK}".strip() if item.marked else style)
        used += piece
    lines.append(line)
    return lines


def message_lines(head: str, tail: str, width: int, style: str = "italic") -> Text:
    """The two message lines: `head` on the first (shortened to fit), `tail` wrapped below it."""
    room = width - 2 * PAD
    head = printable(head)
    lines = [Text(head if cell_len(head) <= room else shorten(head, room), style="bold")] if head else []
    lines += wrap_lines(tail, room, style) if tail else []
    text = Text("\n").join(lines[:MESSAGE_LINES])
    text.no_wrap, text.overflow = True, "ignore"
    return text


def message_overflow(head: str, tail: str, width: int) -> int:
    """How many lines the message would need beyond its two."""
    room = width - 2 * PAD
    need = (1 if head else 0) + (len(wrap_spans(tail, room)) if tail else 0)
    return max(0, need - MESSAGE_LINES)


# --- the body ---------------------------------------------------------------------------------

@dataclass
class Body:
    """A step's tables and prose, rendered, and how they sit."""

    tables: Text
    prose: Text
    wide: bool              # prose beside the tables
    tables_width: int       # cells the tables column takes
    prose_width: int

    @property
    def lines(self) -> int:
        t, p = _height(self.tables), _height(self.prose)
        if self.wide:
            return max(t, p)
        return t + p + (1 if t and p else 0)


    def text(self, height: int = 0) -> Text:
        """The body as one block of lines: the tables, a blank line, the prose (or, wide, the prose
        beside the tables), then blank lines up to `height`. One block of a fixed height means a key
        press repaints only the lines that changed, never the whole screen."""
        tables = list(self.tables.split("\n", allow_blank=True)) if self.tables.plain else []
        prose = list(self.prose.split("\n", allow_blank=True)) if self.prose.plain else []
        if self.wide:
            lines = []
            for i in range(max(len(tables), len(prose))):
                line = tables[i].copy() if i < len(tables) else Text()
                if i < len(prose):
                    line.append(" " * (self.tables_width + GUTTER - cell_len(line.plain)))
                    line.append_text(prose[i])
                lines.append(line)
        else:
            lines = tables + ([Text()] if tables and prose else []) + prose
        lines += [Text()] * (height - len(lines))
        text = Text("\n").join(lines)
        text.no_wrap, text.overflow = True, "ignore"
        return text


def _height(text: Text) -> int:
    return text.plain.count("\n") + 1 if text.plain else 0


def _tables(result, other, step, lang, width, marks, beside, colors, heads):
    """The step's tables, and its compare variant below them or beside them, as one renderable."""
    def tables_of(r, m):
        return render_tables(r, step.tables, lang, width if not beside else (width - GUTTER) // 2, rule=False,
                             rows=step.rows, marks=m, colors=colors)

    main = tables_of(result, marks)
    if other is None:
        return Group(*main)
    label = "beside" if beside else "below"
    head = Text(heads[label], style="bold")
    if beside:
        grid = Table.grid(padding=(0, GUTTER))
        grid.add_column()
        grid.add_column()
        grid.add_row(Group(*main), Group(head, *tables_of(other, None)))
        return grid
    return Group(*main, head, *tables_of(other, None))


def _natural_width(result, other, step, lang) -> int:
    """Cells the step's tables need at their widest, one variant under the other."""
    widths = [0]
    for r in (result, other):
        if r is None:
            continue
        shown = [tb for tb in r.tables if not step.tables or tb.key in step.tables]
        widths += [max(table_width(tb, lang), cell_len(tb.title(lang))) for tb in shown]
    return max(widths)


def body(result, other, step, lang: str, width: int, marks, text: str, char_marks: list, heads: dict,
         training: Text | None = None, colors: str = "mono") -> Body:
    """The tables and the prose of a step at a screen width. Below WIDE, the prose sits under the tables;
    from WIDE, beside them when both fit, the tables taking what they need and the prose the rest. `other`:
    the compare variant, None for none (or one that shows what `result` shows). `marks`
    (tui/page.py Marks) says what to underline in the tables; `text` is the step's prose filled at the result,
    `char_marks` which of its characters to underline; `heads` the compare variant's head, "below" and "beside".
    `colors`: how heatmaps are shaded (tui/heat.py)."""
    room = width - 2 * PAD
    natural = _natural_width(result, other, step, lang)
    beside_pair = other is not None and 2 * natural + GUTTER <= room - GUTTER - PROSE_MIN
    tables_w = (2 * natural + GUTTER if beside_pair else natural)
    wide = width >= WIDE and tables_w + GUTTER + PROSE_MIN <= room
    if wide:
        prose_w = min(PROSE_MAX, room - tables_w - GUTTER)
    else:
        tables_w, prose_w, beside_pair = room, room, False
    tables = flatten(_tables(result, other, step, lang, tables_w, marks, beside_pair, colors, heads), tables_w)
    _strip_blank_tail(tables)
    if training is not None:
        tables = Text("\n").join([tables, training]) if tables.plain else training
    prose_text = Text("\n").join(prose(text, prose_w, marks=char_marks, gap=True)[:-1])
    prose_text.no_wrap, prose_text.overflow = True, "ignore"
    return Body(tables, prose_text, wide, tables_w, prose_w)


def _strip_blank_tail(text: Text) -> None:
    """Drop the blank lines after the last table: the gap below is the layout's to set."""
    plain = text.plain
    cut = len(plain.rstrip("\n "))
    if cut < len(plain):
        text.right_crop(len(plain) - cut)


@dataclass
class Page:
    title: list[Text]
    body: Body
    message: Text
    footer: list[Text]
    notes: list[str] = field(default_factory=list)

    @property
    def lines(self) -> int:
        return len(self.title) + self.body.lines + MESSAGE_LINES + len(self.footer)


def recap(parts: list, width: int) -> Body:
    """The page after a lesson's last step, from tui/page.py's recap_parts: each part (kind, text, style) is a
    paragraph wrapped to the width ("wrap"), a line as it is ("line"), or an item of a list ("item")."""
    room, lines = width - 2 * PAD, []
    for kind, text, style in parts:
        if kind == "line":
            lines.append(Text(text, style=style))
        elif kind == "item":
            wrapped = wrap_lines(text, room - 2, style)
            lines += [Text("- ") + wrapped[0], *(Text("  ") + w for w in wrapped[1:])]
        else:
            lines += wrap_lines(text, room, style)
    text = Text("\n").join(lines)
    text.no_wrap, text.overflow = True, "ignore"
    return Body(Text(""), text, False, room, room)


def idle(keys: str, full: str | None, width: int) -> str:
    """The idle message: `full` (what the keys do, and how they behave) where it fits, else `keys`."""
    return full if full is not None and not message_overflow("", full, width) else keys


def page(heading: tuple, width: int, footer: list, message: Text | None, idle_texts: tuple, recap_parts=None,
         step=None, footer_height: int = 0) -> Page:
    """A whole page at this width: `heading` is title_lines' arguments before the width; the body is the recap
    (`recap_parts`) or the step (`step`: body's arguments before the width, and after it); `footer` its items;
    `message` as it is, or the idle message (`idle_texts`: idle's arguments) when None. The footer takes
    `footer_height` lines where it needs fewer (tui/page.py footer_height), blank ones above its keys."""
    title = title_lines(*heading, width)
    if recap_parts is not None:
        page_body = recap(recap_parts, width)
    else:
        before, after = step
        page_body = body(*before, width, *after)
    lines = footer_lines(footer, width)
    lines = [Text()] * (footer_height - len(lines)) + lines
    if message is None:
        message = message_lines("", idle(*idle_texts, width), width, style="dim")
    return Page(title, page_body, message, lines)


def training_panel(lines: list) -> Text:
    """The live-training panel: exactly TRAINING_LINES lines (texts, or Texts with their curves), so the step's
    layout does not jump."""
    lines = (lines + [""] * TRAINING_LINES)[:TRAINING_LINES]
    text = Text("\n").join(line if isinstance(line, Text) else Text(line, style="bold" if i == 0 else "")
                           for i, line in enumerate(lines))
    text.no_wrap, text.overflow = True, "ignore"
    return text
