"""The footer: the keys that work now, and dimmed the ones that do nothing at the moment."""

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static


class KeyBar(Static):
    """Key hints wrapped onto as many lines as the width needs (two at 80 columns)."""

    DEFAULT_CSS = """
    KeyBar { height: auto; max-height: 3; background: $panel; color: $text; padding: 0 1; }
    """

    def __init__(self, **kwargs):
        super().__init__("", **kwargs)
        self._items: list[tuple[str, str, bool]] = []

    def show(self, items: list[tuple[str, str, bool]]) -> None:
        """items: (key, what it does, works now)."""
        if items != self._items:
            self._items = items
            self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        width = max(20, self.size.width - 2 if self.size.width else 78)
        text, used = Text(), 0
        for key, label, enabled in self._items:
            piece = cell_len(key) + 1 + cell_len(label)
            if used and used + 2 + piece > width:
                text.append("\n")
                used = 0
            elif used:
                text.append("  ")
                used += 2
            text.append(key, style="bold reverse" if enabled else "dim")
            text.append(" " + label, style="" if enabled else "dim")
            used += piece
        self.update(text)
