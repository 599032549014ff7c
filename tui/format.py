"""How a raw engine value is written on screen, in either language."""

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
        return "<0.1 %" if 0 < value < 0.0005 else f"{value * 100:.1f} %"
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


def _is_wide(ch: str) -> bool:
    return cell_len(ch) == 2


def _atoms(text: str) -> list[str]:
    """Break points: a run of Latin letters and digits is one atom, each wide character is its own."""
    atoms, word = [], ""
    for ch in text:
        if ch == " " or _is_wide(ch):  # ASCII punctuation stays with its word: 6.7e-16 is one atom
            if word:
                atoms.append(word)
                word = ""
            atoms.append(ch)
        else:
            word += ch
    if word:
        atoms.append(word)
    return atoms


def wrap_cells(text: str, width: int) -> list[str]:
    """Wrap one paragraph to `width` terminal cells: between words, or between any two CJK characters,
    never putting a closing mark at the start of a line or an opening one at its end."""
    lines, line = [], []

    def used(parts):
        return cell_len("".join(parts))

    for atom in _atoms(text):
        if atom == " " and not line:
            continue
        if used(line) + cell_len(atom) <= width or not line:
            line.append(atom)
            continue
        carry = []
        if atom in NO_LINE_START:  # take the previous character down with the mark
            while line and (line[-1] in NO_LINE_START or not carry) and len(line) > 1:
                carry.insert(0, line.pop())
                if carry[0] not in NO_LINE_START:
                    break
        while line and line[-1] in NO_LINE_END and len(line) > 1:
            carry.insert(0, line.pop())
        lines.append("".join(line).rstrip())
        line = [a for a in carry + [atom] if a != " " or carry]
        if line and line[0] == " ":
            line.pop(0)
    if line:
        lines.append("".join(line).rstrip())
    return lines


def wrap_text(text: str, width: int, style: str = ""):
    """A rich Text of `text` wrapped with wrap_cells: CJK lines break between characters, not at spaces."""
    from rich.text import Text

    return Text("\n".join(wrap_cells(text, max(10, width))), style=style)
