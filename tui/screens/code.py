"""Code: the source of the engine functions behind the current table, highlighted, shapes and all."""

import ast
import inspect
import textwrap

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


def sources(view_id: str, folded: str | None = None) -> str:
    """The source text of every engine function a view names, one after another; given a note, with the
    argument checks of each folded into one comment line that says so (fold_checks)."""
    texts = (inspect.getsource(f).rstrip() for f in functions(view_id))
    return "\n\n".join(texts if folded is None else (fold_checks(text, folded) for text in texts))


def fold_checks(source: str, note: str) -> str:
    """A function's source with its plumbing left out: each statement that only checks its arguments (a
    check_bytes(...) call, or an `if ...: raise ...` with nothing else in it) gives way to one comment line,
    `# note`, at its indentation; checks that follow one another share that line."""
    lines = source.splitlines()
    folded = set()
    for node in ast.walk(ast.parse(textwrap.dedent(source))):
        if _is_check(node):
            folded.update(range(node.lineno - 1, node.end_lineno))
    out, last = [], None
    for i, line in enumerate(lines):
        if i not in folded:
            out.append(line)
        elif last != i - 1:
            out.append(line[:len(line) - len(line.lstrip())] + "# " + note)
        last = i if i in folded else last
    return "\n".join(out)


def _is_check(node) -> bool:
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        f = node.value.func
        return (f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)) == "check_bytes"
    return (isinstance(node, ast.If) and not node.orelse
            and all(isinstance(stmt, ast.Raise) for stmt in node.body))


MARK = " \\"  # ends a code line broken in two, as Python's own continuation: the next piece is the same line


def wrap_code(source: str, width: int) -> str:
    """Source lines longer than `width` broken at spaces, each continuation indented like its line: a
    narrow window reads like the file, not like a ragged paragraph. A broken code line ends with MARK; a
    comment that does not fit beside its code moves under it, still a comment, and a long comment goes on
    as a comment. No character is dropped: a piece with no space to break at is cut at the width."""
    out = []
    for line in source.splitlines():
        body = line.lstrip(" ")
        indent = " " * (len(line) - len(body))
        code, sep, comment = line.partition("  # ")
        if sep and len(line) > width and not body.startswith("#"):
            out += _wrap_line(code.rstrip(), indent, indent + "    ", width, MARK)
            under = indent + ("    " if code.rstrip().endswith(":") else "")  # a def's comment sits in its body
            out += _wrap_line(under + "# " + comment, under, under + "# ", width)
        elif body.startswith("#"):
            out += _wrap_line(line, indent, indent + "# ", width)
        else:
            out += _wrap_line(line, indent, indent + "    ", width, MARK)
    return "\n".join(out)


def _wrap_line(line: str, indent: str, hanging: str, width: int, mark: str = "") -> list[str]:
    """One line broken to `width`, at spaces where it can, with `mark` ending each piece but the last; every
    piece after the first starts with `hanging`."""
    out, room = [], max(width - len(mark), len(hanging) + 8)
    while len(line) > width:
        head = line[:room]
        cut = head.rfind(" ", len(indent) + 1)
        if cut <= len(hanging.rstrip()):  # no space to break at: cut the word at the width
            cut = room
        out.append(line[:cut].rstrip() + mark)
        line = hanging + line[cut:].strip()
    return out + [line]


def code_width(columns: int) -> int:
    """The cells a line of code has in the window at this terminal width: the box is 96% wide, at most
    MAX_BOX (app.tcss .modal-box), less its border and padding (4) and the scroll bar (2)."""
    return min(int(columns * 0.96), MAX_BOX) - 6


MAX_BOX = 110


class CodeScreen(ClosesOnce, ModalScreen):
    """A scrollable window of highlighted source; Esc, c or q closes it."""

    BINDINGS = [Binding("escape,c,q", "close", "close")]

    def compose(self) -> ComposeResult:
        tour = self.app.tour
        view = VIEWS[tour.step.view]
        names = ", ".join(f"{f.__module__}.{f.__name__}" for f in functions(view.id))
        with VerticalScroll(id="code-box", classes="modal-box"):
            yield Static(Text(t("code_title", tour.lang, names=names), style="bold"))
            yield Static(self._code(code_width(self.app.size.width)), id="code")

    def _code(self, width: int) -> Syntax:
        folded = t("code_folded", self.app.tour.lang)
        return Syntax(wrap_code(sources(self.app.tour.step.view, folded), width), "python", theme="ansi_dark",
                      line_numbers=False)

    def on_mount(self) -> None:
        self.query_one("#code-box").focus()

    def on_resize(self) -> None:
        """The code broken again for the width the window now has: a line one cell too long loses its end."""
        self.query_one("#code", Static).update(self._code(code_width(self.app.size.width)))

    def action_close(self) -> None:
        """Close the code."""
        self.dismiss()
