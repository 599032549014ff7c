"""The workbench's footer: the keys that work now, and dimmed the ones that do nothing at the moment."""

from rich.text import Text
from textual.widgets import Static


class KeyBar(Static):
    """Key hints wrapped onto as many lines as the width needs, laid out as the lesson screen's footer."""

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
        from ..layout.screen import footer_lines
        from ..page import Key

        width = self.size.width if self.size.width else 80
        self.update(Text("\n").join(footer_lines([Key(k, label, live) for k, label, live in self._items], width)))
