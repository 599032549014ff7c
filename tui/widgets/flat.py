"""Flatten a Rich renderable into one Text with as few style runs as possible.

Textual writes every style run of a changed line with its own escape codes. A Rich table splits
each row into many runs (cell, padding, separator) that mostly share one style, so a redrawn table
cost several times its visible text. Merging the runs keeps a key press under the byte budget that
an SSH link should carry.
"""

import io

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

_INVISIBLE_ON_SPACE = Style(bold=False, dim=False, italic=False)  # attributes a blank cell cannot show


def _blank_equivalent(a: Style | None, b: Style | None) -> bool:
    """Whether a run of spaces looks the same in style a as in style b."""
    a, b = a or Style(), b or Style()
    return (a + _INVISIBLE_ON_SPACE) == (b + _INVISIBLE_ON_SPACE)


_console: Console | None = None


def flatten(renderable, width: int) -> Text:
    """Render at `width` cells and rebuild as a Text whose adjacent runs never share a style."""
    global _console
    if _console is None:  # one console for every call: making one costs more than a small table
        _console = Console(width=width, force_terminal=True, color_system="truecolor", legacy_windows=False,
                           highlight=False, emoji=False, file=io.StringIO())
    lines = _console.render_lines(renderable, _console.options.update_width(width), pad=False)
    out = Text(no_wrap=True, overflow="ignore", end="")
    for i, line in enumerate(lines):
        if i:
            out.append("\n")
        runs: list[list] = []
        for seg in Segment.simplify(line):
            if seg.control:
                continue
            style = seg.style
            if runs and (style == runs[-1][1] or (not seg.text.strip() and _blank_equivalent(style, runs[-1][1]))):
                runs[-1][0] += seg.text
            elif runs and not runs[-1][0].strip() and _blank_equivalent(style, runs[-1][1]):
                runs[-1] = [runs[-1][0] + seg.text, style]  # leading blanks take the style of what follows
            else:
                runs.append([seg.text, style])
        for text, style in runs:
            out.append(text.rstrip() if text is runs[-1][0] else text, style)
    return out
