"""Prose wrapped to a width in terminal cells, in either language: CJK lines break between characters, never
before a closing mark or after an opening one; Latin lines between words."""

from rich.cells import cell_len

from lessons.template import printable

MARK = "underline"  # what the last experiment changed: an attribute, so it reads in 16 colours and NO_COLOR

# Punctuation that must not start a line, and openers that must not end one (Chinese line breaking).
NO_LINE_START = set("，。、；：？！）」』》〉％")
NO_LINE_END = set("（「『《〈")
QUOTE_CELLS = 40  # a 「quoted phrase」 up to this wide is never split across lines


def _is_wide(ch: str) -> bool:
    return cell_len(ch) == 2


def _atoms(text: str) -> list[tuple[int, int]]:
    """Break points as (start, end) offsets: a run of Latin letters and digits is one atom, each wide
    character is its own, and a short 「quoted phrase」 is one."""
    atoms, start, i = [], None, 0
    while i < len(text):
        ch = text[i]
        if ch == "「":
            close = text.find("」", i)
            if close != -1 and cell_len(text[i:close + 1]) <= QUOTE_CELLS:
                if start is not None:
                    atoms.append((start, i))
                    start = None
                atoms.append((i, close + 1))
                i = close + 1
                continue
        if ch == " " or _is_wide(ch):  # ASCII punctuation stays with its word: 6.7e-16 is one atom
            if start is not None:
                atoms.append((start, i))
                start = None
            atoms.append((i, i + 1))
        elif start is None:
            start = i
        i += 1
    if start is not None:
        atoms.append((start, len(text)))
    return atoms


def wrap_spans(text: str, width: int) -> list[tuple[int, int]]:
    """Wrap one paragraph to `width` terminal cells, as (start, end) offsets of each line: between words,
    or between any two CJK characters, never putting a closing mark at the start of a line or an
    opening one at its end. Spaces at a line's ends are left out."""
    lines, line = [], []  # line: atoms (start, end)

    def close(parts):
        while parts and text[parts[-1][0]:parts[-1][1]] == " ":
            parts = parts[:-1]
        if parts:
            lines.append((parts[0][0], parts[-1][1]))

    for atom in _atoms(text):
        word = text[atom[0]:atom[1]]
        if word == " " and not line:
            continue
        if not line or cell_len(text[line[0][0]:atom[1]]) <= width:
            line.append(atom)
            continue
        carry = []
        if word in NO_LINE_START:  # take the previous character down with the mark
            while line and (not carry or text[carry[0][0]:carry[0][1]] in NO_LINE_START) and len(line) > 1:
                carry.insert(0, line.pop())
                if text[carry[0][0]:carry[0][1]] not in NO_LINE_START:
                    break
        while line and text[line[-1][0]:line[-1][1]] in NO_LINE_END and len(line) > 1:
            carry.insert(0, line.pop())
        close(line)
        line = carry + [atom]
        while line and text[line[0][0]:line[0][1]] == " ":
            line.pop(0)
    close(line)
    return lines


def wrap_cells(text: str, width: int) -> list[str]:
    """Wrap one paragraph to `width` terminal cells (see wrap_spans)."""
    return [text[a:b] for a, b in wrap_spans(text, width)]


def wrap_text(text: str, width: int, style: str = ""):
    """A rich Text of `text` wrapped with wrap_cells: CJK lines break between characters, not at spaces."""
    from rich.text import Text

    return Text("\n".join(wrap_cells(text, max(10, width))), style=style)


def wrap_lines(text: str, width: int, style: str = "") -> list:
    """A lesson text (pitfalls, hints and notices quote one) wrapped to `width`: Rich Texts, one a line."""
    from rich.text import Text

    text = printable(text)
    return [Text(text[a:b], style=style) for a, b in wrap_spans(text, width)] or [Text("")]


def shorten(text: str, cells: int) -> str:
    """text cut to at most `cells` cells, ending in "..." (ASCII: the ellipsis character is ambiguous width)."""
    if cell_len(text) <= cells:
        return text
    if cells < 8:
        return ""
    out = ""
    for ch in text:
        if cell_len(out + ch) > cells - 3:
            break
        out += ch
    return out.rstrip() + "..."


def _join(lines: list[str], marks: list[list[bool]]) -> tuple[str, list[bool]]:
    """Lines joined into one, and their marks with them: a space between Latin words, nothing between CJK
    characters."""
    out, out_marks = "", []
    for k, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        lead = len(raw) - len(raw.lstrip())
        if out and not (cell_len(out[-1]) == 2 or cell_len(line[0]) == 2):
            out += " "
            out_marks.append(False)
        out += line
        out_marks += marks[k][lead:lead + len(line)]
    return out, out_marks


def prose(text: str, width: int, indent: int = 0, style: str = "", gap: bool = True, marks=None) -> list:
    """Paragraphs (split on blank lines) wrapped to width cells, CJK-aware; a blank line after each when gap.
    `marks`, one per character of text, underlines the characters that are True. Rich Texts, one a line."""
    from rich.text import Text

    out = []
    for runs in prose_runs(text, width, indent, style, gap, marks):
        line = Text(" " * indent if runs else "", style=style if runs else "")
        for piece, piece_style in runs[1:]:
            line.append(piece, style=piece_style)
        out.append(line)
    return out


def prose_runs(text: str, width: int, indent: int = 0, style: str = "", gap: bool = True,
               marks=None) -> list[list[tuple[str, str]]]:
    """prose() as data: each line a list of (text, style) runs, its indent first; [] for a blank line."""
    text = printable(text)  # lesson text, which the loader has checked; one character for one, so marks still fit
    marks = marks if marks is not None else [False] * len(text)
    out, pos = [], 0
    for para in text.split("\n\n"):
        start, pos = pos, pos + len(para) + 2
        if not para.strip():
            continue
        lines, line_marks, at = [], [], start
        for line in para.split("\n"):
            lines.append(line)
            line_marks.append(marks[at:at + len(line)])
            at += len(line) + 1
        flat, flat_marks = _join(lines, line_marks)
        for a, b in wrap_spans(flat, width - indent):
            line = [(" " * indent, style)]
            k = a
            while k < b:  # runs of marked and unmarked characters
                e = k
                while e < b and flat_marks[e] == flat_marks[k]:
                    e += 1
                line.append((flat[k:e], f"{style} {MARK}".strip() if flat_marks[k] else style))
                k = e
            out.append(line)
        if gap:
            out.append([])
    return out
