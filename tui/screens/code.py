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
from . import ClosesOnce


def functions(view_id: str) -> list:
    """The engine functions a view names; a lazy entry (the trained model's code) is looked up now."""
    return [f() if getattr(f, "lazy", False) else f for f in VIEWS[view_id].sources]


def sources(view_id: str) -> str:
    """The source text of every engine function a view names, one after another."""
    return "\n\n".join(inspect.getsource(f).rstrip() for f in functions(view_id))


def wrap_code(source: str, width: int) -> str:
    """Source lines longer than `width` broken at spaces, each continuation indented like its line: a
    narrow window reads like the file, not like a ragged paragraph. A comment that does not fit beside
    its code moves under it, still a comment, and a long comment goes on as a comment."""
    out = []
    for line in source.splitlines():
        body = line.lstrip(" ")
        indent = " " * (len(line) - len(body))
        code, sep, comment = line.partition("  # ")
        if sep and len(line) > width and not body.startswith("#"):
            out += _wrap_line(code.rstrip(), indent, indent + "    ", width)
            under = indent + ("    " if code.rstrip().endswith(":") else "")  # a def's comment sits in its body
            out += _wrap_line(under + "# " + comment, under, under + "# ", width)
        elif body.startswith("#"):
            out += _wrap_line(line, indent, indent + "# ", width)
        else:
            out += _wrap_line(line, indent, indent + "    ", width)
    return "\n".join(out)


def _wrap_line(line: str, indent: str, hanging: str, width: int) -> list[str]:
    """One line broken at spaces to `width`; every piece after the first starts with `hanging`."""
    out = []
    while len(line) > width and " " in line[len(indent) + 1:width]:
        cut = line.rindex(" ", len(indent) + 1, width)
        out.append(line[:cut].rstrip())
        line = hanging + line[cut:].strip()
    return out + [line]


class CodeScreen(ClosesOnce, ModalScreen):
    """A scrollable window of highlighted source; Esc, c or q closes it."""

    BINDINGS = [Binding("escape,c,q", "close", "close")]

    def compose(self) -> ComposeResult:
        tour = self.app.tour
        view = VIEWS[tour.step.view]
        names = ", ".join(f"{f.__module__}.{f.__name__}" for f in functions(view.id))
        with VerticalScroll(id="code-box", classes="modal-box"):
            yield Static(Text(t("code_title", tour.lang, names=names), style="bold"))
            width = min(self.app.size.width, 110) - 8  # the window's border and padding
            yield Static(Syntax(wrap_code(sources(view.id), width), "python", theme="ansi_dark", line_numbers=False))

    def on_mount(self) -> None:
        self.query_one("#code-box").focus()

    def action_close(self) -> None:
        """Close the code."""
        self.dismiss()
