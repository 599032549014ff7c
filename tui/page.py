"""One step as one screen: the layout the lesson screen draws and check-lessons measures (tui/fit.py).

Everything here is Rich, not Textual, so the same code decides what the app shows and whether a step
fits 80x24 before any app runs. From top to bottom a page is:

    title      the lesson and the step, one line (two if the step's title is long)
    body       the step's tables, then its prose; from 120 columns, side by side
    message    two lines: what the last key changed and what to look for, or what the keys do
    footer     every experiment key with its setting as name=value, the view's other settings,
               then the keys that move and show things

A step fits when the whole page needs no more lines than the window has: then nothing scrolls.
"""

from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.console import Group
from rich.table import Table
from rich.text import Text

from engine.errors import EngineError
from engine.views import Result, fmt_value
from lessons.template import printable

from .fill import fill_marked, ref_label  # noqa: F401  (ref_label: the lesson screen's, as page.ref_label)
from .format import format_value, settings_line
from .i18n import t
from .layout.blocks import render_tables
from .layout.flatten import flatten
from .layout.tables import table_width
from .layout.wrap import MARK, prose, shorten, wrap_lines, wrap_spans

MIN_WIDTH, MIN_HEIGHT = 80, 24  # the smallest window the tour runs in, and the one every step must fit
WIDE = 120                      # from this width on, the prose sits beside the tables
PROSE_MIN, PROSE_MAX = 40, 72   # the prose column's width when beside the tables
GUTTER = 3                      # cells between the tables and the prose
PAD = 1                         # cells of padding on each side of every line
MESSAGE_LINES = 2
TRAINING_LINES = 3              # the live-training panel, on the step whose key starts it


@dataclass(frozen=True)
class Marks:
    """What the last experiment key changed: settings, table cells, new rows, and numbers in the prose."""

    settings: frozenset = frozenset()
    cells: frozenset = frozenset()  # (table key, row index, column index) in the new result
    rows: frozenset = frozenset()   # (table key, row index): rows that were not there before
    refs: frozenset = frozenset()   # placeholders whose value changed

    def cells_of(self, key: str) -> frozenset:
        return frozenset((i, j) for k, i, j in self.cells if k == key)

    def rows_of(self, key: str) -> frozenset:
        return frozenset(i for k, i in self.rows if k == key)

    def __bool__(self) -> bool:
        return bool(self.settings or self.cells or self.rows or self.refs)


def _row_ids(table, lang: str) -> list[tuple]:
    """Each row's identity: its first cell as shown, and how many rows before it showed the same."""
    seen, ids = {}, []
    for row in table.rows:
        label = format_value(row[0], table.columns[0].fmt, lang)
        seen[label] = seen.get(label, 0) + 1
        ids.append((label, seen[label]))
    return ids


def diff(before: Result, after: Result, lang: str, refs=()) -> Marks:
    """What differs between two results of one view, as the screen writes it. Rows are matched by their
    first cell, so a row that moved is not a change and a row that appeared is new."""
    from lessons.template import lookup

    settings = frozenset(k for k, v in after.params.items() if before.params.get(k) != v)
    old_tables = {tb.key: tb for tb in before.tables}
    cells, rows = set(), set()
    for table in after.tables:
        old = old_tables.get(table.key)
        if old is None:
            rows.update((table.key, i) for i in range(len(table.rows)))
            continue
        fmts = [c.fmt for c in table.columns]
        old_by_id = dict(zip(_row_ids(old, lang), old.rows))
        for i, (row_id, row) in enumerate(zip(_row_ids(table, lang), table.rows)):
            was = old_by_id.get(row_id)
            if was is None:
                rows.add((table.key, i))
                continue
            for j, (a, b, fmt) in enumerate(zip(was, row, fmts)):
                if j and format_value(a, fmt, lang) != format_value(b, fmt, lang):
                    cells.add((table.key, i, j))
    changed = set()
    for ref in refs:
        try:
            a, fmt_a = lookup(before, ref)
            b, fmt_b = lookup(after, ref)
        except KeyError:
            changed.add(ref)
            continue
        if format_value(a, fmt_a, lang) != format_value(b, fmt_b, lang):
            changed.add(ref)
    return Marks(settings, frozenset(cells), frozenset(rows), frozenset(changed))


def same_place(before: Result, after: Result, ref: str, lang: str) -> bool:
    """Whether a placeholder names the same thing in both results: a cell's row may have moved when a
    press added a row above it, and then its value changed place, not value."""
    parts = ref.split(".")
    if len(parts) != 3:
        return True
    rows = []
    for r in (before, after):
        table = next((tb for tb in r.tables if tb.key == parts[0]), None)
        if table is None or int(parts[1]) >= len(table.rows):
            return False
        rows.append(format_value(table.rows[int(parts[1])][0], table.columns[0].fmt, lang))
    return rows[0] == rows[1]


# --- the parts of a page ----------------------------------------------------------------

def title_lines(lesson, index: int, pages: int, step_title: str, lang: str, width: int) -> list[Text]:
    """The lesson and the step on one line; the lesson's title is shortened before the step's is. A lesson's
    pages are its steps and the recap, which `o`, `lessons` and `print` count as its last step too."""
    room = width - 2 * PAD
    head = f"{lesson.order}. "
    step = f"{index + 1}/{pages} {printable(step_title)}"
    name = full = printable(lesson.title(lang))
    spare = room - cell_len(head) - 2 - cell_len(step)
    if cell_len(name) > spare:
        name = shorten(name, spare)
    line = Text.assemble((head + name, "bold"), "  " if name else "", (step, ""))
    if cell_len(line.plain) <= room:
        return [line]
    return [Text(head + full, style="bold"), *wrap_lines(step, room)]


@dataclass
class Key:
    """One item of the footer: a key (or none, for a setting no key changes) and what it does."""

    key: str
    label: str
    live: bool = True
    marked: bool = False
    newline: bool = False  # start a new line before this item


def footer_lines(items: list[Key], width: int) -> list[Text]:
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


# --- the body -------------------------------------------------------------------------------

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


def _tables(result, other, step, lang, width, marks, beside, colors):
    """The step's tables, and its compare variant below them or beside them, as one renderable."""
    def tables_of(r, m):
        return render_tables(r, step.tables, lang, width if not beside else (width - GUTTER) // 2, rule=False,
                             rows=step.rows, marks=m, colors=colors)

    main = tables_of(result, marks)
    if other is None:
        return Group(*main)
    label = "beside" if beside else "below"
    head = Text(t(label, lang, settings=settings_line(other.params)), style="bold")
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


def shows(result: Result, step, lang: str) -> tuple:
    """What a step's tables show at a result, as text: two results that show the same are one."""
    return tuple((tb.key, tuple(tuple(format_value(v, c.fmt, lang) for v, c in zip(row, tb.columns))
                                for row in tb.rows))
                 for tb in result.tables if not step.tables or tb.key in step.tables)


def body(result: Result, other: Result | None, step, lang: str, width: int, marks: Marks = Marks(),
         training: Text | None = None, colors: str = "mono") -> Body:
    """The tables and the prose of a step at a screen width. Below WIDE, the prose sits under the tables;
    from WIDE, beside them when both fit, the tables taking what they need and the prose the rest.
    `colors`: how heatmaps are shaded for this terminal (tui/heat.py)."""
    if other is not None and shows(other, step, lang) == shows(result, step, lang):
        other = None  # a compare variant identical to the main one says nothing
    room = width - 2 * PAD
    natural = _natural_width(result, other, step, lang)
    beside_pair = other is not None and 2 * natural + GUTTER <= room - GUTTER - PROSE_MIN
    tables_w = (2 * natural + GUTTER if beside_pair else natural)
    wide = width >= WIDE and tables_w + GUTTER + PROSE_MIN <= room
    if wide:
        prose_w = min(PROSE_MAX, room - tables_w - GUTTER)
    else:
        tables_w, prose_w, beside_pair = room, room, False
    tables = flatten(_tables(result, other, step, lang, tables_w, marks, beside_pair, colors), tables_w)
    _strip_blank_tail(tables)
    if training is not None:
        tables = Text("\n").join([tables, training]) if tables.plain else training
    text, char_marks = fill_marked(step.text(lang), result, lang, marks.refs)
    prose_text = Text("\n").join(prose(text, prose_w, marks=char_marks, gap=True)[:-1])
    prose_text.no_wrap, prose_text.overflow = True, "ignore"
    return Body(tables, prose_text, wide, tables_w, prose_w)


def _strip_blank_tail(text: Text) -> None:
    """Drop the blank lines after the last table: the gap below is the layout's to set."""
    plain = text.plain
    cut = len(plain.rstrip("\n "))
    if cut < len(plain):
        text.right_crop(len(plain) - cut)


# --- a whole page ---------------------------------------------------------------------------------

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


BRIEF = 24  # cells of a text setting's value in the footer: the text is shown whole on the page, begun here
TEXTS = {"text"}  # the settings of kind "text" (any text, 200 characters): named here, not looked up, so that the
#                   first frame imports no view (a test checks every view's text settings are named here)


def brief(value: str, most: int = BRIEF) -> str:
    """A setting's value cut to `most` cells, "..." ending one that was cut."""
    if cell_len(value) <= most:
        return value
    while cell_len(value) > most - 3:
        value = value[:-1]
    return value + "..."


def footer_items(tour, lit, marks: Marks = Marks(), training_running: bool = False, asking=None,
                 editing: bool = False) -> list[Key]:
    """The footer of the current step: each experiment key with its setting, the view's other settings,
    then the keys that move and show. `lit(experiment)` says whether a key would change the step. While a
    question waits (`asking`, a quiz.Posed), the keys that answer and skip it instead of those that move; while
    the typing line is open (`editing`), the keys that apply and close it."""
    lang, items = tour.lang, []
    params = {} if tour.on_recap() else tour.result().params
    bound = set()
    for x in tour.lesson.experiments:
        if x.action is not None:
            label = t("train_stop" if training_running else "train_key", lang)
            items.append(Key(x.key, label, lit(x)))
        elif x.param in params:
            bound.add(x.param)
            items.append(Key(x.key, f"{x.param}={fmt_value(params[x.param])}", lit(x), x.param in marks.settings))
        else:
            items.append(Key(x.key, x.param, False))
    items += [Key("", f"{name}={brief(fmt_value(value)) if name in TEXTS else fmt_value(value)}", True,
                  name in marks.settings)
              for name, value in params.items() if name not in bound]
    if editing:  # the typing line is open: what applies it and what closes it
        return items + [Key("Enter", t("apply_key", lang), newline=bool(items)), Key("Esc", t("cancel_key", lang))]
    if params and asking is None:  # e types a setting; not while a question waits for its answer
        items.append(Key("e", t("edit_key", lang)))
    if asking is not None:  # a question waits: its answer keys, and the keys that skip it
        answer = (Key("0-9", t("type_key", lang)) if asking.question.kind == "number"
                  else Key(f"a-{'abcd'[len(asking.options) - 1]}", t("answer_key", lang)))
        answer.newline = bool(items)
        return items + [answer, Key("Esc", t("skip_key", lang)),
                        Key("n", t("next", lang), not tour.at_end()), Key("p", t("prev", lang), not tour.at_start()),
                        Key("l", t("lang", lang)), Key("?", t("help", lang)), Key("q", t("quit", lang))]
    nav = [Key("n", t("next", lang), not tour.at_end(), newline=True), Key("p", t("prev", lang), not tour.at_start()),
           Key("0", t("reset", lang), tour.resettable())]
    if not tour.on_recap() and tour.hides_rows():
        nav.append(Key("t", t("all_rows", lang)))
    nav.append(Key("c", t("code", lang), not tour.on_recap() and tour.has_code()))
    if tour.lesson.id in WORKBENCH_LESSONS:
        nav.append(Key("w", t("workbench", lang)))
    nav += [Key("l", t("lang", lang)), Key("o", t("lessons", lang)), Key("?", t("help", lang)),
            Key("q", t("quit", lang))]
    if not items:
        nav[0].newline = False
    return items + nav


WORKBENCH_LESSONS = ("params", "kvcache")  # lessons whose w key opens the sizing workbench


def recap_body(tour, width: int) -> Body:
    """The page after a lesson's last step: the lesson is done, what to remember, and what comes next."""
    lang, lesson, room = tour.lang, tour.lesson, width - 2 * PAD
    seen = tour.seen_steps(lesson)
    lines = wrap_lines(t("recap_done", lang, seen=seen, n=len(lesson.steps) + 1), room, "bold")
    lines += _score_lines(tour, room)
    if lesson.pitfalls:
        lines += [Text(""), Text(t("recap_remember", lang), style="bold")]
        for p in lesson.pitfalls:
            wrapped = wrap_lines(p(lang), room - 2)
            lines += [Text("- ") + wrapped[0], *(Text("  ") + w for w in wrapped[1:])]
    following = tour.following_lesson()
    lines.append(Text(""))
    lines += wrap_lines(t("recap_next", lang, order=following.order, title=following.title(lang))
                   if following is not None else t("recap_last", lang), room)
    text = Text("\n").join(lines)
    text.no_wrap, text.overflow = True, "ignore"
    return Body(Text(""), text, False, room, room)


def _score_lines(tour, room: int) -> list[Text]:
    """The lesson's questions on its recap: how many were right, and the first one missed with its answer."""
    from .fill import fill
    from .quiz import NotPosable, figures, setting_change

    lang, lesson = tour.lang, tour.lesson
    if not lesson.questions:
        return []
    right, answered, n = tour.score()
    rest = t("recap_score_rest", lang, skipped=n - answered) if answered < n else ""
    lines = wrap_lines(t("recap_score", lang, right=right, n=n, rest=rest), room)
    missed = tour.missed()
    if missed is not None:
        try:
            posed = tour.pose_first(missed)
        except (NotPosable, EngineError):  # a learner's own lesson: the checker says why
            return lines
        ask = fill(missed.ask(lang), posed.before, lang)
        lines += wrap_lines(t("recap_missed", lang, ask=ask, setting=setting_change(posed), answer=figures(posed, lang),
                         why=fill(missed.why(lang), posed.after, lang)), room, "italic")
    return lines


def build(tour, width: int, lit=None, marks: Marks = Marks(), message: Text | None = None,
          training: Text | None = None, training_running: bool = False) -> Page:
    """The current step of a tour as a page at this width. `lit` decides which keys are lit (by default
    the exact test: the key changes what the step shows)."""
    lit = lit or tour.applies
    lang, lesson = tour.lang, tour.lesson
    title = title_lines(lesson, tour.step_index, tour.pages(), tour.page_title(), lang, width)
    if tour.on_recap():
        page_body = recap_body(tour, width)
    else:
        page_body = body(tour.result(), tour.compare_result(), tour.step, lang, width, marks, training)
    footer = footer_lines(footer_items(tour, lit, marks, training_running), width)
    if message is None:
        message = message_lines("", idle_message(tour, width), width, style="dim")
    return Page(title, page_body, message, footer)


def idle_message(tour, width: int = MIN_WIDTH, lit=None) -> str:
    """What the keys do, before any is pressed on this step: each key that works here (by `lit`, by default
    every key whose setting the step has) and its title, then how the keys behave if that still fits."""
    lang = tour.lang
    if tour.on_recap():
        return t("recap_keys", lang)
    if tour.settings().get("run") == "yours":  # the learner's own weights: what is theirs, and what is not
        return t("yours_idle", lang, name=tour.weights or "")
    live = [x for x in tour.lesson.experiments if (lit or tour.takes)(x)]
    if not live:
        return t("no_experiments_here", lang)
    sep = "；" if lang == "zh" else "; "
    keys = t("try", lang, keys=sep.join(f"{x.key} {x.title(lang)}" for x in live))
    if all(x.action is not None for x in live):  # a key that runs something moves no setting
        return keys
    full = keys + t("try_more", lang)
    return full if not message_overflow("", full, width) else keys


def training_panel(lines: list) -> Text:
    """The live-training panel: exactly TRAINING_LINES lines (texts, or Texts with their curves), so the step's
    layout does not jump."""
    lines = (lines + [""] * TRAINING_LINES)[:TRAINING_LINES]
    text = Text("\n").join(line if isinstance(line, Text) else Text(line, style="bold" if i == 0 else "")
                           for i, line in enumerate(lines))
    text.no_wrap, text.overflow = True, "ignore"
    return text
