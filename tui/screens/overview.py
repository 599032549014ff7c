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

    BINDINGS = [Binding("escape,o,q", "close", "close")]

    def compose(self) -> ComposeResult:
        tour = self.app.tour
        lang = tour.lang
        options = []
        for lesson in tour.lessons:
            seen = len(set(tour.progress.visited.get(lesson.id, [])) & {s.id for s in lesson.steps})
            n = len(lesson.steps)
            bar = "#" * seen + "-" * (n - seen)
            label = Text.assemble((f"{lesson.order}. ", "bold"), printable(lesson.title(lang)), "  ",
                                  (f"[{bar}] " + t("steps_seen", lang, seen=seen, n=n), "dim"))
            options.append(Option(label, id=lesson.id))
        with Vertical(id="overview-box", classes="modal-box"):
            yield Static(Text(t("overview_title", lang), style="bold"))
            yield OptionList(*options, id="lesson-list")

    def on_mount(self) -> None:
        listing = self.query_one(OptionList)
        listing.highlighted = self.app.tour.lesson_index
        listing.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss()
        self.app.open_lesson(event.option.id)

    def action_close(self) -> None:
        """Back to the lesson."""
        self.dismiss()
