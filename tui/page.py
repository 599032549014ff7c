"""One step as one screen: what its page says (the title, the step's tables and prose, the message, the footer's
keys), and what the last key changed. Where each part sits at a width is tui/layout/screen.py's: the page hands
it the parts once.
"""

from rich.cells import cell_len

from engine.errors import EngineError
from engine.records import record, replace
from engine.views import Result, fmt_value

from .fill import fill_marked, ref_label  # noqa: F401  (ref_label: the lesson screen's, as page.ref_label)
from .format import format_value, settings_line
from .i18n import t
from .layout import screen
from .layout.screen import MIN_WIDTH, Body, Page


@record
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


def row_ids(table, lang: str) -> list[tuple]:
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
        old_by_id = dict(zip(row_ids(old, lang), old.rows))
        for i, (row_id, row) in enumerate(zip(row_ids(table, lang), table.rows)):
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

@record
class Key:
    """One item of the footer: a key (or none, for a setting no key changes) and what it does."""

    key: str
    label: str
    live: bool = True
    marked: bool = False
    newline: bool = False  # start a new line before this item


BRIEF = 24  # cells of a text setting's value in the footer: the text is shown whole on the page, begun here


def is_text(view_id: str, name: str) -> bool:
    """Whether a view's setting takes any text (kind "text", up to 200 characters), which the footer and the message
    line begin (brief) where a sentence of the tiny grammar is shown whole. Asked of a view whose result is on
    screen, so it is loaded already."""
    from engine.views import get_view

    return any(p.name == name and p.kind == "text" for p in get_view(view_id).params)


def shown_value(view_id: str, name: str, value) -> str:
    """A setting's value as the footer shows it: a text begun (brief), anything else whole. Only a long string
    asks which it is: the first frame, drawn from the lesson cache, then imports no view."""
    text = fmt_value(value)
    return brief(text) if cell_len(text) > BRIEF and is_text(view_id, name) else text


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
    try:
        result = None if tour.on_recap() else tour.result()
    except EngineError:  # a step its view refuses (no model file): the keys that move, and no settings
        result = None
    params = {} if result is None else result.params
    bound = set()
    for x in tour.lesson.experiments:
        if x.action is not None:
            label = t("train_stop" if training_running else "train_key", lang)
            items.append(Key(x.key, label, lit(x)))
        elif x.param in params:
            bound.add(x.param)
            items.append(Key(x.key, f"{x.param}={shown_value(result.view, x.param, params[x.param])}", lit(x),
                             x.param in marks.settings))
        else:
            items.append(Key(x.key, x.param, False))
    items += [Key("", f"{name}={shown_value(result.view, name, value)}", True, name in marks.settings)
              for name, value in params.items() if name not in bound]
    if editing:  # the typing line is open: what applies it and what closes it
        return items + [Key("Enter", t("apply_key", lang), newline=bool(items)), Key("Esc", t("cancel_key", lang))]
    if params and asking is None:  # e types a setting; not while a question waits for its answer
        items.append(Key("e", t("edit_key", lang)))
    if asking is not None:  # a question waits: its answer keys, and the keys that skip it
        answer = (Key("0-9", t("type_key", lang), newline=bool(items)) if asking.question.kind == "number"
                  else Key(f"a-{'abcd'[len(asking.options) - 1]}", t("answer_key", lang), newline=bool(items)))
        return items + [answer, Key("Esc", t("skip_key", lang)),
                        Key("n", t("next", lang), not tour.at_end()), Key("p", t("prev", lang), not tour.at_start()),
                        Key("l", t("lang", lang)), Key("?", t("help", lang)), Key("q", t("quit", lang))]
    nav = [Key("n", t("next", lang), not tour.at_end(), newline=bool(items)),
           Key("p", t("prev", lang), not tour.at_start()),
           Key("0", t("reset", lang), tour.resettable())]
    if not tour.on_recap() and tour.hides_rows():
        nav.append(Key("t", t("all_rows", lang)))
    nav.append(Key("c", t("code", lang), not tour.on_recap() and tour.has_code()))
    if tour.lesson.id in WORKBENCH_LESSONS:
        nav.append(Key("w", t("workbench", lang)))
    nav += [Key("l", t("lang", lang)), Key("o", t("lessons", lang)), Key("?", t("help", lang)),
            Key("q", t("quit", lang))]
    return items + nav


def footer_height(tour, items: list[Key], width: int) -> int:
    """The lines the footer keeps on this step: the most it needs at any values the step's keys can give their
    settings, which is what it needs with every key at its widest value at once (a wider item never saves a
    line). Pressing through the keys then never changes the footer's height, so the body neither grows nor moves
    and a press repaints what it changed, not the page (over SSH, a moved body is a whole screen sent again: 11
    to 12 KB a press where a footer went from three lines to two)."""
    widest = list(items)
    for x in () if tour.on_recap() else tour.lesson.experiments:
        at = next((i for i, item in enumerate(items)
                   if x.param and item.key == x.key and item.label.startswith(f"{x.param}=")), None)
        if at is not None:
            labels = [items[at].label, *(f"{x.param}={fmt_value(value)}" for value in x.values)]
            widest[at] = replace(items[at], label=max(labels, key=cell_len))
    return max(len(screen.footer_lines(items, width)), len(screen.footer_lines(widest, width)))


WORKBENCH_LESSONS = ("params", "kvcache")  # lessons whose w key opens the sizing workbench


def shows(result: Result, step, lang: str) -> tuple:
    """What a step's tables and charts show at a result, as text and data: two results that show the same are
    one (a key that moves only a chart changes the step)."""
    return tuple((tb.key, tuple(tuple(format_value(v, c.fmt, lang) for v, c in zip(row, tb.columns))
                                for row in tb.rows))
                 for tb in result.tables if not step.tables or tb.key in step.tables) + tuple(
        chart for chart in result.charts if chart.key in step.tables)


def _compared(result: Result, other: Result | None, step, lang: str) -> Result | None:
    """The step's compare variant, None where it shows what the result shows: then it says nothing."""
    return None if other is not None and shows(other, step, lang) == shows(result, step, lang) else other


def body(result: Result, other: Result | None, step, lang: str, width: int, marks: Marks = Marks(),
         training=None, colors: str = "mono") -> Body:
    """The tables and the prose of a step at a screen width (tui/layout/screen.py body), its prose filled at the
    result with the numbers the last key changed marked. `colors`: how heatmaps are shaded (tui/heat.py)."""
    other = _compared(result, other, step, lang)
    text, char_marks = fill_marked(step.text(lang), result, lang, marks.refs)
    return screen.body(result, other, step, lang, width, marks, text, char_marks, _heads(other, lang), training,
                       colors)


def _heads(other: Result | None, lang: str) -> dict:
    """The head of a step's compare variant, below the tables and beside them."""
    if other is None:
        return {}
    settings = settings_line(other.params)
    return {label: t(label, lang, settings=settings) for label in ("below", "beside")}


def recap_body(tour, width: int) -> Body:
    """The page after a lesson's last step (tui/layout/screen.py recap)."""
    return screen.recap(recap_parts(tour), width)


def recap_parts(tour) -> list[tuple[str, str, str]]:
    """What the page after a lesson's last step says: the lesson is done, what to remember, and what comes next.
    Each part is (kind, text, style), as tui/layout/screen.py recap lays it out."""
    lang, lesson = tour.lang, tour.lesson
    seen = tour.seen_steps(lesson)
    parts = [("wrap", t("recap_done", lang, seen=seen, n=len(lesson.steps) + 1), "bold")]
    parts += _score_parts(tour)
    if lesson.pitfalls:
        parts += [("line", "", ""), ("line", t("recap_remember", lang), "bold")]
        parts += [("item", p(lang), "") for p in lesson.pitfalls]
    following = tour.following_lesson()
    parts.append(("line", "", ""))
    parts.append(("wrap", t("recap_next", lang, order=following.order, title=following.title(lang))
                  if following is not None else t("recap_last", lang), ""))
    return parts


def _score_parts(tour) -> list[tuple[str, str, str]]:
    """The lesson's questions on its recap: how many were right, and the first one missed with its answer."""
    from .fill import fill
    from .quiz import NotPosable, figures, setting_change

    lang, lesson = tour.lang, tour.lesson
    if not lesson.questions:
        return []
    right, answered, n = tour.score()
    rest = t("recap_score_rest", lang, skipped=n - answered) if answered < n else ""
    parts = [("wrap", t("recap_score", lang, right=right, n=n, rest=rest), "")]
    missed = tour.missed()
    if missed is not None:
        try:
            posed = tour.pose_first(missed)
        except (NotPosable, EngineError):  # a learner's own lesson: the checker says why
            return parts
        ask = fill(missed.ask(lang), posed.before, lang)
        parts.append(("wrap", t("recap_missed", lang, ask=ask, setting=setting_change(posed),
                                answer=figures(posed, lang), why=fill(missed.why(lang), posed.after, lang)), "italic"))
    return parts


def build(tour, width: int, lit=None, marks: Marks = Marks(), message=None, training=None,
          training_running: bool = False) -> Page:
    """The current step of a tour as a page at this width: its parts, then their places (tui/layout/screen.py
    page). `lit` decides which keys are lit (by default the exact test: the key changes what the step shows)."""
    lit = lit or tour.applies
    lang, lesson = tour.lang, tour.lesson
    heading = (lesson, tour.step_index, tour.pages(), tour.page_title(), lang)
    footer = footer_items(tour, lit, marks, training_running)
    height = footer_height(tour, footer, width)
    idle_texts = idle_choices(tour) if message is None else ("", None)
    if tour.on_recap():
        return screen.page(heading, width, footer, message, idle_texts, recap_parts=recap_parts(tour),
                           footer_height=height)
    result, step = tour.result(), tour.step
    other = _compared(result, tour.compare_result(), step, lang)
    text, char_marks = fill_marked(step.text(lang), result, lang, marks.refs)
    return screen.page(heading, width, footer, message, idle_texts,
                       step=((result, other, step, lang), (marks, text, char_marks, _heads(other, lang), training)),
                       footer_height=height)


def idle_message(tour, width: int = MIN_WIDTH, lit=None) -> str:
    """What the keys do, before any is pressed on this step (idle_choices), as it fits the width."""
    return screen.idle(*idle_choices(tour, lit), width)


def idle_choices(tour, lit=None) -> tuple[str, str | None]:
    """What the keys do, before any is pressed on this step: each key that works here (by `lit`, by default
    every key whose setting the step has) and its title; and that with how the keys behave, or None where
    there is nothing more to say. The page shows the longer where it fits."""
    lang = tour.lang
    if tour.on_recap():
        return t("recap_keys", lang), None
    if tour.settings().get("run") == "yours":  # the learner's own weights: what is theirs, and what is not
        return t("yours_idle", lang, name=tour.weights or ""), None
    live = [x for x in tour.lesson.experiments if (lit or tour.takes)(x)]
    if not live:
        return t("no_experiments_here", lang), None
    sep = "；" if lang == "zh" else "; "
    keys = t("try", lang, keys=sep.join(f"{x.key} {x.title(lang)}" for x in live))
    if all(x.action is not None for x in live):  # a key that runs something moves no setting
        return keys, None
    return keys, keys + t("try_more", lang)
