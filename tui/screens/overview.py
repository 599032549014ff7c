"""The lessons overview: each lesson with the steps seen so far; Enter opens one."""

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from lessons.template import printable

from ..i18n import t
from . import ClosesOnce


class OverviewScreen(ClosesOnce, ModalScreen):
    """A list of lessons with progress; Enter opens the highlighted one, Esc or o goes back."""

    BINDINGS = [Binding("escape,o,q", "close", "close"), Binding("r", "ask_again", "ask again")]

    def compose(self) -> ComposeResult:
        with Vertical(id="overview-box", classes="modal-box"):
            yield Static(Text(t("overview_title", self.app.tour.lang), style="bold"))
            yield OptionList(*self._options(), id="lesson-list")

    def _options(self) -> list[Option]:
        """A line for each lesson: its steps seen, and its questions answered right."""
        tour = self.app.tour
        lang = tour.lang
        options = []
        for lesson in tour.lessons:
            seen = len(set(tour.progress.visited.get(lesson.id, [])) & {s.id for s in lesson.steps})
            n = len(lesson.steps)
            bar = "#" * seen + "-" * (n - seen)
            right, _, asked = tour.score(lesson)
            score = t("questions_right", lang, right=right, n=asked) if asked else ""
            label = Text.assemble((f"{lesson.order}. ", "bold"), printable(lesson.title(lang)), "  ",
                                  (f"[{bar}] " + t("steps_seen", lang, seen=seen, n=n) + score, "dim"))
            options.append(Option(label, id=lesson.id))
        return options

    def on_mount(self) -> None:
        listing = self.query_one(OptionList)
        listing.highlighted = self.app.tour.lesson_index
        listing.focus()

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
            listing.replace_option_prompt_at_index(listing.highlighted or 0,
                                                   self._options()[listing.highlighted or 0].prompt)

    def action_close(self) -> None:
        """Back to the lesson."""
        self.dismiss()
