"""Help: every key, in the current language."""

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..i18n import t
from ..layout.wrap import wrap_lines
from . import ClosesOnce
from .code import code_width


def help_rows(body: str) -> list[tuple[str, str]]:
    """The help's rows, (keys, what they do): a line is the keys, two spaces or more, then what they do; a line
    that starts with spaces goes on with the row above."""
    rows = []
    for line in body.splitlines():
        if line[:1].isspace() and rows:
            rows[-1] = (rows[-1][0], f"{rows[-1][1]} {line.strip()}")
            continue
        keys, _, what = line.partition("  ")
        rows.append((keys.strip(), what.strip()))
    return rows


def help_text(body: str, width: int) -> Text:
    """The help's rows at a width: the keys in a column, what they do wrapped beside them, never under them."""
    rows = help_rows(body)
    keys_w = max(cell_len(keys) for keys, _ in rows) + 2
    lines = []
    for keys, what in rows:
        for i, piece in enumerate(wrap_lines(what, width - keys_w)):
            lead = keys if i == 0 else ""
            lines.append(Text(lead + " " * (keys_w - cell_len(lead))) + piece)
    return Text("\n").join(lines)


class HelpScreen(ClosesOnce, ModalScreen):
    """A window listing the keys; Esc, ? or q closes it."""

    BINDINGS = [Binding("escape,question_mark,q", "close", "close")]

    def compose(self) -> ComposeResult:
        lang = self.app.tour.lang
        with VerticalScroll(id="help-box", classes="modal-box"):
            yield Static(Text(t("help_title", lang), style="bold underline"))
            yield Static(self._body(), id="help-body")

    def _body(self) -> Text:
        return help_text(t("help_body", self.app.tour.lang), code_width(self.app.size.width))

    def on_resize(self) -> None:
        self.query_one("#help-body", Static).update(self._body())

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss()
