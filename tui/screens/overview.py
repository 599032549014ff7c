"""The lessons overview (o): the whole tour on one line (steps seen, questions right, the time left), then each
lesson on a line of its own: steps seen, questions right, and about how long it takes. Enter opens one. After
the last recap, the same list ends the tour (EndScreen), with what to revisit."""

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from lessons.estimate import ASK_S, LOOK_S, PRESS_S, READ_CHARS, READ_WORDS, minutes
from lessons.template import printable

from ..i18n import t
from ..layout.wrap import shorten
from . import ClosesOnce

CHROME = 10  # cells of a line the box and the list take at 80 columns (96% wide, border, padding, scrollbar)
MAX_BOX = 110  # the box's max-width in app.tcss
LIST_EDGE = 2  # cells before a lesson's line in the list (its border and padding): the heads start after them


def lesson_counts(tour, lesson) -> tuple[int, int, int, int, int]:
    """(steps seen, steps, right, questions, minutes) of one lesson; its recap counts as its last step."""
    right, _, asked = tour.score(lesson)
    return tour.seen_steps(lesson), tour.pages(lesson), right, asked, minutes(lesson, tour.lang)


def tour_line(tour) -> str:
    """The whole tour on one line: steps seen of all, questions right of all, and about how long the steps not
    seen yet take (each lesson's estimate, times the share of its steps not seen)."""
    seen = steps = right = asked = 0
    left = 0.0
    for lesson in tour.lessons:
        s, n, r, a, m = lesson_counts(tour, lesson)
        seen, steps, right, asked, left = seen + s, steps + n, right + r, asked + a, left + m * (n - s) / n
    return t("tour_line", tour.lang, seen=seen, steps=steps, right=right, asked=asked, left=round(left))


def rows(tour, width: int) -> tuple[Text, list[Text]]:
    """The column heads, and a line for each lesson, no wider than `width` cells: the title is shortened to
    make room for the numbers, which are never cut."""
    lang = tour.lang
    counts = [lesson_counts(tour, lesson) for lesson in tour.lessons]
    steps = [f"{s}/{n}" for s, n, *_ in counts]
    right = [f"{r}/{a}" if a else "-" for _, _, r, a, _ in counts]
    time = [str(m) for *_, m in counts]
    heads = [t(k, lang) for k in ("col_lesson", "col_steps", "col_right", "col_minutes")]
    w_steps, w_right, w_time = (max(cell_len(x) for x in col + [head])
                                for col, head in ((steps, heads[1]), (right, heads[2]), (time, heads[3])))
    room = max(8, width - 4 - (2 + w_steps) - (2 + w_right) - (2 + w_time))

    def line(num, title, a, b, c):
        title = shorten(title, room)
        return Text.assemble((num, "bold"), title, " " * (room - cell_len(title)),
                             "  ", " " * (w_steps - cell_len(a)) + a, "  ", " " * (w_right - cell_len(b)) + b,
                             "  ", " " * (w_time - cell_len(c)) + c)

    head = line(" " * (4 + LIST_EDGE), heads[0], heads[1], heads[2], heads[3])
    head.stylize("dim")
    lines = [line(f"{lesson.order:>2}. ", printable(lesson.title(lang)), a, b, c)
             for lesson, a, b, c in zip(tour.lessons, steps, right, time)]
    return head, lines


def revisit(tour) -> list[int]:
    """The indices of the lessons worth a second look: a question missed or not answered, or a step not seen."""
    out = []
    for i, lesson in enumerate(tour.lessons):
        seen, steps, right, asked, _ = lesson_counts(tour, lesson)
        if right < asked or seen < steps:
            out.append(i)
    return out


class OverviewScreen(ClosesOnce, ModalScreen):
    """A list of lessons with progress; Enter opens the highlighted one, Esc or o goes back."""

    BINDINGS = [Binding("escape,o,q", "close", "close"), Binding("r", "ask_again", "ask again")]
    TITLE_KEY = "overview_title"

    def compose(self) -> ComposeResult:
        tour = self.app.tour
        head, lines = rows(tour, self._width())
        with Vertical(id="overview-box", classes="modal-box"):
            yield Static(Text(t(self.TITLE_KEY, tour.lang), style="bold"))
            yield Static(Text(tour_line(tour)), id="tour-line")
            yield from self._more()
            yield Static(head, id="lesson-heads")
            yield OptionList(*(Option(text, id=lesson.id) for lesson, text in zip(tour.lessons, lines)),
                             id="lesson-list")
            yield from self._note()

    def _more(self):
        return ()

    def _note(self):
        """How the minutes are estimated (lessons/estimate.py)."""
        yield Static(Text(t("estimate_note", self.app.tour.lang, words=READ_WORDS, chars=READ_CHARS, look=LOOK_S,
                            press=PRESS_S, ask=ASK_S), style="dim"), id="estimate-note")

    def _width(self) -> int:
        """The cells a lesson's line has in the list at this window's width."""
        return min(int(self.app.size.width * 0.96), MAX_BOX) - CHROME

    def on_mount(self) -> None:
        listing = self.query_one(OptionList)
        listing.highlighted = self._first()
        listing.focus()

    def _first(self) -> int:
        """The lesson highlighted at first: the one on screen."""
        return self.app.tour.lesson_index

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss()
        self.app.open_lesson(event.option.id)

    def action_ask_again(self) -> None:
        """Ask the highlighted lesson's questions again: the next press of each key asks it."""
        import time

        listing = self.query_one(OptionList)
        lesson = self.app.tour.lessons[listing.highlighted or 0]
        if self.app.tour.progress.ask_again(lesson.id, int(time.time())):
            self.app.save()
            self.refresh_rows()

    def on_resize(self) -> None:
        self.refresh_rows()

    def refresh_rows(self) -> None:
        """Lay the lines out again: after a score changed, or at another width."""
        tour = self.app.tour
        head, lines = rows(tour, self._width())
        listing = self.query_one(OptionList)
        for i, line in enumerate(lines):
            listing.replace_option_prompt_at_index(i, line)
        self.query_one("#lesson-heads", Static).update(head)
        self.query_one("#tour-line", Static).update(Text(tour_line(tour)))

    def action_close(self) -> None:
        """Back to the lesson."""
        self.dismiss()


class EndScreen(OverviewScreen):
    """After the last recap: the tour's score per lesson, as the overview lists it, and what to revisit; Enter
    opens the highlighted lesson, the first one to revisit."""

    TITLE_KEY = "end_title"

    def _more(self):
        yield Static(self._revisit(), id="revisit")

    def _revisit(self) -> Text:
        """The lessons worth a second look, by number, or that none is."""
        tour = self.app.tour
        again = revisit(tour)
        if not again:
            return Text(t("end_all_done", tour.lang), style="bold")
        numbers = ("、" if tour.lang == "zh" else ", ").join(str(tour.lessons[i].order) for i in again)
        return Text(t("end_revisit", tour.lang, lessons=numbers), style="bold")

    def _note(self):
        return ()  # the end has no room for it at 80x24: the overview says it

    def refresh_rows(self) -> None:
        super().refresh_rows()
        self.query_one("#revisit", Static).update(self._revisit())

    def _first(self) -> int:
        """The first lesson worth a second look, or the one on screen (Textual calls each class's on_mount)."""
        again = revisit(self.app.tour)
        return again[0] if again else self.app.tour.lesson_index
