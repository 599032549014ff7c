"""Lines of text, laid out beforehand, that repaint only the lines that changed.

Textual repaints the whole of a widget whose content is updated, so a key press that changes one
number in a 12-line table used to send all 12 lines. A Lines widget compares each new line with the
one on screen and refreshes just the lines that differ: what an SSH link carries for a key press is
what the press changed, plus the lines that moved.
"""

from rich.cells import cell_len
from rich.segment import Segment
from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget


class Lines(Widget):
    """Shows a rich Text line by line, exactly as given: no wrapping, no markup."""

    DEFAULT_CSS = "Lines { height: auto; }"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.content = Text()
        self._lines: list[Text] = []
        self._strips: dict[int, Strip] = {}

    def show(self, text: Text) -> None:
        """Show `text`; repaint only the lines that differ from what is shown."""
        lines = text.split("\n", allow_blank=True) if text.plain else []
        old, self._lines, self.content = self._lines, lines, text
        if len(lines) != len(old):  # a new height: a new layout. Not a new width: each line is as wide as the
            self._strips.clear()    # widget, whatever its text (render_line pads it), so a longer line is one line
            self.refresh(layout=True)
            return
        width = self.size.width
        for y, (a, b) in enumerate(zip(old, lines)):
            if a.plain != b.plain or a.spans != b.spans or a.style != b.style:
                self._strips.pop(y, None)
                self.refresh(Region(0, y, width, 1))

    @staticmethod
    def _width_of(lines: list[Text]) -> int:
        return max((cell_len(line.plain) for line in lines), default=0)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lines)

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return self._width_of(self._lines)

    def render_line(self, y: int) -> Strip:
        width, style = self.size.width, self.rich_style
        if y >= len(self._lines):
            return Strip.blank(width, style)
        strip = self._strips.get(y)
        if strip is None:
            segments = [Segment(s.text, style + s.style if s.style else style, s.control)
                        for s in self._lines[y].render(self.app.console) if s.text != "\n"]
            strip = self._strips[y] = Strip(segments)
        return strip.crop_extend(0, width, style)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()  # the base style may have changed: colours come from the stylesheet

    def on_resize(self) -> None:
        self._strips.clear()
