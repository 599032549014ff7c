"""How a raw engine value is written on screen, in either language."""

import math

from rich.cells import cell_len

UNITS = (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def human_bytes(n) -> str:
    """512 KiB, 12.55 GiB: binary units, whole numbers without decimals."""
    for unit, size in UNITS:
        if n >= size:
            v = n / size
            return f"{int(v):,} {unit}" if float(v).is_integer() else f"{v:,.2f} {unit}"
    return f"{n:g} B"


def short_count(n, lang) -> str:
    """A count in 亿 (10^8) for zh, and in M or B for en."""
    if lang == "zh":
        return f"{n / 1e8:,.2f} 亿" if n >= 1e6 else f"{n:,}"
    if n >= 1e12:
        return f"{n / 1e12:,.2f} T"
    if n >= 1e9:
        return f"{n / 1e9:,.2f} B"
    return f"{n / 1e6:,.2f} M" if n >= 1e6 else f"{n:,}"


def format_value(value, fmt: str, lang: str) -> str:
    """One cell or fact as text. `fmt` is a format spec or one of: text, short, sig3, pct, bytes, mask."""
    if hasattr(value, "zh") and hasattr(value, "en"):  # an engine Tr
        return value(lang)
    if isinstance(value, bool):
        return {("zh", True): "是", ("zh", False): "否"}.get((lang, value), "yes" if value else "no")
    if fmt == "text" or isinstance(value, str) or value is None:
        return "" if value is None else str(value)
    if fmt == "short":
        return short_count(value, lang)
    if fmt == "sig3":  # three significant digits, but never an exponent
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    if fmt == "pct":
        if 0 < value < 0.0005:  # one significant digit, never an exponent: 0.004 %, 0.00006 %
            return f"{value * 100:.{-math.floor(math.log10(value * 100))}f} %"
        return f"{value * 100:.1f} %"
    if fmt == "bytes":
        return human_bytes(value)
    if fmt == "mask":
        return "0" if value == 0 else ("-inf" if value < 0 else "+inf")
    text = format(value, fmt)
    if text[:1] == "-" and float(text.replace(",", "")) == 0:  # -0.000 reads as a sign error
        text = ("+" if "+" in fmt else "") + text[1:]
    return text


def is_numeric(fmt: str) -> bool:
    """Numbers are right-aligned; text is not."""
    return fmt != "text"


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

    def cells(parts):
        return cell_len(text[parts[0][0]:parts[-1][1]]) if parts else 0

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


def _cjk(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf"


def space_cjk(text: str, marks: list | None = None) -> tuple[str, list]:
    """Chinese spacing: a space between a Chinese character and a Latin letter or digit, either way round
    (「是 2 层」, not 「是2 层」), and none between two Chinese characters (「给了词 1」, not 「给了 词 1」, which a
    placeholder that filled in Chinese leaves). `marks` (one per character) follows the characters."""
    marks = list(marks) if marks is not None else [False] * len(text)
    out, out_marks = [], []
    for i, ch in enumerate(text):
        if ch == " " and out and _cjk(out[-1]) and i + 1 < len(text) and _cjk(text[i + 1]):
            continue
        if out and ((_cjk(out[-1]) and ch.isascii() and ch.isalnum()) or
                    (_cjk(ch) and out[-1].isascii() and out[-1].isalnum())):
            out.append(" ")
            out_marks.append(False)
        out.append(ch)
        out_marks.append(marks[i])
    return "".join(out), out_marks
