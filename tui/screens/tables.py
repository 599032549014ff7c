"""Every table, row and figure of the current step's view: what a step leaves out is one key away."""

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import ScrollableContainer
from textual.screen import ModalScreen
from textual.widgets import Static

from engine.views import VIEWS

from ..format import settings_line
from ..i18n import t
from ..layout.blocks import render_tables
from ..layout.flatten import flatten
from ..layout.wrap import wrap_lines
from . import ClosesOnce


class TablesScreen(ClosesOnce, ModalScreen):
    """A scrollable window of the whole view at the current settings; Esc, t or q closes it."""

    BINDINGS = [Binding("escape,t,q", "close", "close")]

    def compose(self) -> ComposeResult:
        tour = self.app.tour
        result, lang = tour.result(), tour.lang
        # the box's inside, as app.tcss lays out #tables-box: the whole window (up to 110) less the border,
        # the padding and the scroll bar. A table wider than that scrolls sideways; it is never wrapped.
        width = min(self.app.size.width, 110) - 5
        with ScrollableContainer(id="tables-box", classes="modal-box"):
            # the title wrapped to the box: the box scrolls sideways, and "(Esc closes)" must not be out of sight
            title = t("all_rows_title", lang, view=VIEWS[result.view].title(lang))
            yield Static(Text("\n").join(wrap_lines(title, width, "bold")))
            yield Static(flatten(Group(Text(settings_line(result.params), style="dim"),
                                       *render_tables(result, (), lang, width, colors=self.app.heat_colors)), width))

    def on_mount(self) -> None:
        self.query_one("#tables-box").focus()

    def action_close(self) -> None:
        """Close the window."""
        self.dismiss()
