"""How a raw engine value is written on screen, in either language."""

import math

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


def settings_line(params: dict) -> str:
    """The current settings as name=value, the form every screen shows."""
    from engine.views import fmt_value

    return " ".join(f"{k}={fmt_value(v)}" for k, v in params.items())


def is_numeric(fmt: str) -> bool:
    """Numbers are right-aligned; text is not."""
    return fmt != "text"


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
