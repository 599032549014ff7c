"""Code: the source of the engine functions behind the current table, highlighted, shapes and all."""

import inspect

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from engine.views import VIEWS

from ..i18n import t


def functions(view_id: str) -> list:
    """The engine functions a view names; a lazy entry (the trained model's code) is looked up now."""
    return [f() if getattr(f, "lazy", False) else f for f in VIEWS[view_id].sources]


def sources(view_id: str) -> str:
    """The source text of every engine function a view names, one after another."""
    return "\n\n".join(inspect.getsource(f).rstrip() for f in functions(view_id))


class CodeScreen(ModalScreen):
    """A scrollable window of highlighted source; Esc, c or q closes it."""

    BINDINGS = [Binding("escape,c,q", "close", "close")]

    def compose(self) -> ComposeResult:
        tour = self.app.tour
        view = VIEWS[tour.step.view]
        names = ", ".join(f"{f.__module__}.{f.__name__}" for f in functions(view.id))
        with VerticalScroll(id="code-box", classes="modal-box"):
            yield Static(Text(t("code_title", tour.lang, names=names), style="bold"))
            yield Static(Syntax(sources(view.id), "python", theme="ansi_dark", line_numbers=False, word_wrap=True))

    def on_mount(self) -> None:
        self.query_one("#code-box").focus()

    def action_close(self) -> None:
        """Close the code."""
        self.dismiss()
