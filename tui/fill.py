"""A lesson's text at a result: its conditions decided and its placeholders replaced by the engine's values,
as every screen and `print` show it."""

from engine.views import Result

from .format import format_value, space_cjk


def ref_label(result: Result, ref: str, lang: str) -> str:
    """How the message line names a placeholder: a fact's label, or a cell's row and column."""
    parts = ref.split(".")
    if len(parts) == 1:
        return next((f.label(lang) for f in result.facts if f.key == ref), ref)
    table = next(tb for tb in result.tables if tb.key == parts[0])
    col = next(c for c in table.columns if c.key == parts[2])
    row = table.rows[int(parts[1])]
    name = format_value(row[0], table.columns[0].fmt, lang)
    if name.replace(",", "").replace(".", "").isdigit():  # a bare number says more with its column: head 0
        name = f"{table.columns[0].label(lang)} {name}"
    return f"{name}, {col.label(lang)}"


def fill(text: str, result: Result, lang: str) -> str:
    """A lesson text at this result: conditions decided, placeholders replaced by the engine's values."""
    return fill_marked(text, result, lang)[0]


def fill_marked(text: str, result: Result, lang: str, marked=frozenset()) -> tuple[str, list[bool]]:
    """fill(), and for each character whether it belongs to a placeholder in `marked`."""
    from lessons.template import lookup, pieces

    out, marks = [], []
    for piece, is_ref in pieces(text, result):
        if is_ref:
            value, fmt = lookup(result, piece)
            piece_text = format_value(value, fmt, lang)
        else:
            piece_text = piece
        out.append(piece_text)
        marks += [is_ref and piece in marked] * len(piece_text)
    flat = "".join(out)
    return space_cjk(flat, marks) if lang == "zh" else (flat, marks)
