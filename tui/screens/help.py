"""Help: every key, in the current language."""

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..i18n import t
from . import ClosesOnce


class HelpScreen(ClosesOnce, ModalScreen):
    """A window listing the keys; Esc, ? or q closes it."""

    BINDINGS = [Binding("escape,question_mark,q", "close", "close")]

    def compose(self) -> ComposeResult:
        lang = self.app.tour.lang
        with VerticalScroll(id="help-box", classes="modal-box"):
            yield Static(Text(t("help_title", lang), style="bold underline"))
            yield Static(Text(t("help_body", lang)))

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss()
