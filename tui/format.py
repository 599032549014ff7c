"""How a raw engine value is written on screen, in either language."""

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
