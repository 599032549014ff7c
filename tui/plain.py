"""The plain printer: views as text tables for a terminal, a pipe or a screen reader, or as JSON.

Tables use ASCII rules only and measure CJK text by terminal cells (Rich does, via cell_len), so
columns line up in both languages. When stdout is not a terminal no escape codes are written.
"""

import json
import math

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from engine.views import Result, fmt_value

from .format import format_value, is_numeric

# A header rule of ASCII hyphens, no other lines: box-drawing characters are East Asian
# ambiguous width and can double in CJK terminals, which would break the rows.
PLAIN = box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)


def settings_line(params: dict) -> str:
    """The current settings as name=value, the form every screen shows."""
    return " ".join(f"{k}={fmt_value(v)}" for k, v in params.items())


def render_table(table, lang: str) -> Table:
    """One engine table as a Rich table."""
    out = Table(box=PLAIN, show_edge=False, pad_edge=False, padding=(0, 1), header_style="bold")
    for col in table.columns:
        out.add_column(col.label(lang), justify="right" if is_numeric(col.fmt) else "left")
    for row in table.rows:
        out.add_row(*(format_value(v, col.fmt, lang) for v, col in zip(row, table.columns)))
    if table.note is not None:
        out.caption, out.caption_justify = table.note(lang), "left"
    return out


def render_result(result: Result, title: str, lang: str) -> Group:
    """A whole view: its title, its settings, its tables and its facts."""
    parts = [Text(title, style="bold underline"), Text(settings_line(result.params), style="dim"), Text("")]
    for table in result.tables:
        parts += [Text(table.title(lang), style="bold"), render_table(table, lang), Text("")]
    for fact in result.facts:
        colon = "：" if lang == "zh" else ": "
        parts.append(Text(f"{fact.label(lang)}{colon}{format_value(fact.value, fact.fmt, lang)}"))
    return Group(*parts)


def console(file=None) -> Console:
    """A console that writes plain text when not on a terminal; 80 cells wide then."""
    return Console(file=file, highlight=False, emoji=False, soft_wrap=False)


def jsonable(value, lang: str):
    """A raw engine value in JSON: full-precision numbers, infinities as strings, texts in `lang`."""
    if hasattr(value, "zh") and hasattr(value, "en"):
        return value(lang)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "inf", "-inf", "nan": JSON has no literal for them
    if isinstance(value, dict):
        return {k: jsonable(v, lang) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, lang) for v in value]
    return value


def result_json(result: Result, title: str, lang: str) -> dict:
    """One view as a JSON-ready object."""
    return {
        "view": result.view,
        "title": title,
        "params": result.params,
        "tables": [{"key": t.key, "title": t.title(lang),
                    "columns": [{"key": c.key, "label": c.label(lang), "format": c.fmt} for c in t.columns],
                    "rows": jsonable(t.rows, lang)} for t in result.tables],
        "facts": {f.key: jsonable(f.value, lang) for f in result.facts},
    }


def dumps(obj) -> str:
    """JSON text, UTF-8 as is, refusing NaN literals."""
    return json.dumps(obj, ensure_ascii=False, indent=2, allow_nan=False)
