"""The plain printer: views as text tables for a terminal, a pipe or a screen reader, or as JSON.

Tables use ASCII rules only and measure CJK text by terminal cells (Rich does, via cell_len), so
columns line up in both languages. When stdout is not a terminal no escape codes are written.
"""

import json
import math

from rich import box
from rich.cells import cell_len
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from engine.views import Result, fmt_value

from .format import format_value, is_numeric, wrap_cells

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
        out.add_column(col.label(lang), justify="right" if is_numeric(col.fmt) else "left", overflow="fold")
    for row in table.rows:
        cells = [format_value(v, col.fmt, lang) for v, col in zip(row, table.columns)]
        if table.heat:
            cells = [cells[0]] + [Text(c, style=heat_style(v)) for c, v in zip(cells[1:], row[1:])]
        out.add_row(*cells)
    return out


def heat_style(weight) -> str:
    """How an attention weight is marked. The number is always printed, so the mark is only extra, and
    it uses no colour: reverse, bold and dim read the same in 16 colours, 256, and with NO_COLOR."""
    if not isinstance(weight, float):
        return ""
    if weight >= 0.75:
        return "bold reverse"
    if weight >= 0.4:
        return "bold"
    return "dim" if weight < 0.05 else ""


def render_result(result: Result, title: str, lang: str, width: int = 80) -> Group:
    """A whole view: its title, its settings, its tables and its facts."""
    parts = [Text(title, style="bold underline"), *prose(settings_line(result.params), width, style="dim")]
    return Group(*parts, *render_tables(result, (), lang, width))


def table_width(table, lang: str) -> int:
    """Cells the rendered table needs: widest cell per column, one space of padding between columns."""
    widths = [cell_len(col.label(lang)) for col in table.columns]
    for row in table.rows:
        for i, (value, col) in enumerate(zip(row, table.columns)):
            widths[i] = max(widths[i], cell_len(format_value(value, col.fmt, lang)))
    return sum(widths) + 2 * (len(widths) - 1)


def write(make) -> None:
    """Render make(console) and write it to stdout in one piece: plain text when stdout is not a
    terminal, and a reader that leaves early (`| head`) surfaces as BrokenPipeError, not as exit 1."""
    import sys

    out = console()
    with out.capture() as captured:
        out.print(make(out))
    sys.stdout.write(captured.get())
    sys.stdout.flush()


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


def fill(text: str, result: Result, lang: str) -> str:
    """Replace {table.row.column}, {fact} and {setting} placeholders with the engine's values, formatted."""
    from lessons.loader import PLACEHOLDER, lookup

    def one(m):
        value, fmt = lookup(result, m.group(1))
        return format_value(value, fmt, lang)
    return PLACEHOLDER.sub(one, text)


def render_lesson(lesson, lang: str, width: int = 80) -> Group:
    """A lesson as a person reads it: each step's prose and tables, then the experiments and pitfalls."""
    from engine.views import VIEWS

    t = (lambda en, zh: zh if lang == "zh" else en)
    parts = [Text(f"{lesson.order}. {lesson.title(lang)}", style="bold underline"), Text("")]
    for i, step in enumerate(lesson.steps, 1):
        view = VIEWS[step.view]
        result = view.run(step.params)
        parts += [Text(t(f"Step {i}/{len(lesson.steps)}: ", f"第 {i}/{len(lesson.steps)} 步：") + step.title(lang),
                       style="bold"),
                  *prose(settings_line(result.params), width, style="dim")]
        parts += prose(fill(step.text(lang), result, lang), width)
        parts += render_tables(result, step.tables, lang, width)
        if step.compare is not None:
            other = view.run({**step.params, **step.compare})
            parts += [Text(t("Beside it: ", "对照：") + settings_line(other.params), style="bold")]
            parts += render_tables(other, step.tables, lang, width)
    if lesson.experiments:
        parts += [Text(t("Experiments", "实验"), style="bold underline")]
        for x in lesson.experiments:
            values = " -> ".join(fmt_value(v) for v in x.values)
            colon = "：" if lang == "zh" else ": "
            what = f"{x.param} = {values}" if x.action is None else t("(in the app)", "（在交互界面里）")
            parts += prose(f"[{x.key}] {x.title(lang)}{colon}{what}", width, style="bold", gap=False)
            parts += prose(x.text(lang), width, indent=4, gap=False)
        parts.append(Text(""))
    if lesson.pitfalls:
        parts += [Text(t("Pitfalls", "常见误区"), style="bold underline")]
        for p in lesson.pitfalls:
            lines = prose(p(lang), width, indent=2, gap=False)
            lines[0] = Text("-" + lines[0].plain[1:])
            parts += lines
    return Group(*parts)


def _block(table, lang, width=80):
    parts = [Text(table.title(lang), style="bold"), render_table(table, lang)]
    if table.note is not None:
        parts += prose(table.note(lang), width, style="dim", gap=False)
    return Group(*parts)


def render_tables(result, keys, lang, width=80):
    """The tables (those in keys, or all), with runs of weight maps set side by side where they fit."""
    parts, run = [], []

    def flush():
        while run:  # as many weight maps on a line as the width allows
            line, used = [run.pop(0)], 0
            used = max(table_width(line[0], lang), cell_len(line[0].title(lang)))
            while run and used + 3 + max(table_width(run[0], lang), cell_len(run[0].title(lang))) <= width:
                line.append(run.pop(0))
                used += 3 + max(table_width(line[-1], lang), cell_len(line[-1].title(lang)))
            if len(line) == 1:
                parts.extend([_block(line[0], lang, width), Text("")])
                continue
            grid = Table.grid(padding=(0, 3))
            for _ in line:
                grid.add_column()
            grid.add_row(*(_block(t, lang, max(table_width(t, lang), 20)) for t in line))
            parts.extend([grid, Text("")])

    for table in result.tables:
        if keys and table.key not in keys:
            continue
        if table.heat:
            run.append(table)
            continue
        flush()
        parts.extend([_block(table, lang, width), Text("")])
    flush()
    if not keys:
        colon = "：" if lang == "zh" else ": "
        parts += [Text(f"{f.label(lang)}{colon}{format_value(f.value, f.fmt, lang)}") for f in result.facts]
        if result.facts:
            parts.append(Text(""))
    return parts


def join_lines(lines) -> str:
    """Join lines into one: with a space between Latin words, with nothing between CJK characters."""
    from rich.cells import cell_len

    out = ""
    for line in (ln.strip() for ln in lines):
        if not line:
            continue
        if out and not (cell_len(out[-1]) == 2 or cell_len(line[0]) == 2):
            out += " "
        out += line
    return out


def prose(text: str, width: int, indent: int = 0, style: str = "", gap: bool = True) -> list[Text]:
    """Paragraphs (split on blank lines) wrapped to width cells, CJK-aware; a blank line after each when gap."""
    out = []
    for para in text.strip().split("\n\n"):
        flat = join_lines(para.splitlines())
        out += [Text(" " * indent + line, style=style) for line in wrap_cells(flat, width - indent)]
        if gap:
            out.append(Text(""))
    return out
