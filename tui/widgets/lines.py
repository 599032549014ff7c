"""Lines of text, laid out beforehand, that repaint only the lines that changed.

Textual repaints the whole of a widget whose content is updated, so a key press that changes one
number in a 12-line table used to send all 12 lines. A Lines widget compares each new line with the
one on screen and refreshes just the lines that differ: what an SSH link carries for a key press is
what the press changed, plus the lines that moved. Within a changed line only the cells from the first
difference to the last are repainted: a heatmap row where one number changed sends that number, not the
row.
"""

from rich.cells import cell_len
from rich.segment import Segment
from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget


def _cells(line: Text) -> list:
    """A line cell by cell: (character, the styles over it); a wide character fills two cells, its second
    (None, ...)."""
    covering = [[line.style] for _ in line.plain]
    for span in line.spans:
        for i in range(max(0, span.start), min(span.end, len(covering))):
            covering[i].append(span.style)
    out = []
    for ch, styles in zip(line.plain, covering):
        out.append((ch, styles))
        if cell_len(ch) == 2:
            out.append((None, styles))
    return out


def _changed(a: Text, b: Text) -> tuple[int, int]:
    """The cells [start, end) where line b differs from line a: the only part of the line a repaint needs."""
    ca, cb = _cells(a), _cells(b)
    n = max(len(ca), len(cb))
    blank = (" ", [a.style])
    ca += [blank] * (n - len(ca))
    cb += [(" ", [b.style])] * (n - len(cb))
    start = next((i for i in range(n) if ca[i] != cb[i]), n)
    if start == n:
        return 0, 0
    end = next(i for i in range(n, start, -1) if ca[i - 1] != cb[i - 1])
    if start and (ca[start][0] is None or cb[start][0] is None):  # the right half of a wide character: from its left
        start -= 1
    if end < n and (ca[end][0] is None or cb[end][0] is None):  # a wide character's left half: take its right too
        end += 1
    return start, end


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
                start, end = _changed(a, b)
                if start < end:
                    self.refresh(Region(start, y, min(end, width) - start, 1))

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
