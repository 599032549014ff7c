"""The plain printer: views as text tables for a terminal, a pipe or a screen reader, or as JSON.

Tables use ASCII rules only and measure CJK text by terminal cells (Rich does, via cell_len), so
columns line up in both languages. When stdout is not a terminal no escape codes are written.

Rich's console, tables and texts are imported where they are used: `xf-tour print VIEW` writes the
same characters through tui/textout.py without them, which saves most of its start-up.
"""

import math

from rich import box
from rich.cells import cell_len

from engine.views import Result, fmt_value
from lessons.template import printable

from .format import format_value, is_numeric, space_cjk, wrap_spans

MARK = "underline"  # what the last experiment changed: an attribute, so it reads in 16 colours and NO_COLOR

# A header rule of ASCII hyphens, no other lines: box-drawing characters are East Asian
# ambiguous width and can double in CJK terminals, which would break the rows.
PLAIN = box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)


def settings_line(params: dict) -> str:
    """The current settings as name=value, the form every screen shows."""
    return " ".join(f"{k}={fmt_value(v)}" for k, v in params.items())


def render_table(table, lang: str, rule: bool = True, rows=None, marked=frozenset(), added=frozenset(),
                 colors: str = "mono"):
    """One engine table as a Rich table. `rows`: the row indices to show, a "..." row standing for each
    run left out; `marked`: (row, column) cells to underline; `added`: rows to underline whole. Without
    `rule` the header is underlined instead of ruled, which saves a line on a small screen. `colors`: how
    a heatmap is shaded (tui/heat.py: "color", "ansi" or "mono")."""
    from rich.table import Table
    from rich.text import Text

    from .heat import table_styles

    out = Table(box=PLAIN if rule else None, show_edge=False, pad_edge=False, padding=(0, 1),
                header_style="bold" if rule else "bold underline")
    for col in table.columns:
        out.add_column(Text(col.label(lang)), justify="right" if is_numeric(col.fmt) else "left", overflow="fold")
    shown = range(len(table.rows)) if rows is None else rows
    styles = table_styles(table, colors)
    last = -1
    for i in shown:
        if i > last + 1:
            out.add_row("...", *[""] * (len(table.columns) - 1), style="dim")
        last = i
        row = table.rows[i]
        cells = []
        for j, (value, col) in enumerate(zip(row, table.columns)):
            cell = Text(format_value(value, col.fmt, lang), style=styles[i][j])
            if i in added or (i, j) in marked:
                cell.stylize(MARK)  # the text only: a number's padding is not part of what changed
            cells.append(cell)
        out.add_row(*cells)
    if rows is not None and last < len(table.rows) - 1:
        out.add_row("...", *[""] * (len(table.columns) - 1), style="dim")
    return out


def shown_rows(table, picks) -> list[int] | None:
    """The row indices a step's `rows` entry picks, in order, each once; None for every row."""
    if picks is None:
        return None
    n = len(table.rows)
    return sorted({i % n for i in picks if -n <= i < n})


def render_result(result: Result, title: str, lang: str, width: int = 80, plot: bool = False):
    """A whole view: its title, its settings, its charts when `plot` (without colour), its tables and its
    facts, as a Rich Group."""
    from rich.console import Group
    from rich.text import Text

    parts = [Text(title, style="bold underline"), *prose(settings_line(result.params), width, style="dim")]
    if plot:
        from .charts import render_chart
        for chart in result.charts:
            parts += [*render_chart(chart, lang, width, "mono"), Text("")]
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


def console(file=None):
    """A console that writes plain text when not on a terminal; 80 cells wide then."""
    from rich.console import Console

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
        "charts": [{"key": c.key, "title": c.title(lang), "kind": c.kind, "x": list(c.x),
                    "parts": [p(lang) for p in c.parts],
                    "series": [{"label": s.label(lang), "values": list(s.values)} for s in c.series]}
                   for c in result.charts],
    }


def dumps(obj) -> str:
    """JSON text, UTF-8 as is but for what a terminal would obey (escaped: lessons.safe.json_text), refusing NaN
    literals."""
    from lessons.safe import json_text

    return json_text(obj, indent=2, allow_nan=False)


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


def render_lesson(lesson, lang: str, width: int = 80, plot: bool = False, asks=None):
    """A lesson as a person reads it: each step's prose and tables, then what each of its keys does, as the
    app says it after one press, then the questions it asks; then the experiments and the pitfalls. `asks`: step
    id -> its questions' lines, each (indent, text), as tui/cli/quiz.py lesson_asks words them: they are posed
    by tui/quiz.py, which uses this module, so they come in ready."""
    from rich.console import Group
    from rich.text import Text

    from engine.views import VIEWS
    from lessons.loader import applies

    from .i18n import t as text_of

    def t(en, zh):
        return zh if lang == "zh" else en

    colon = "：" if lang == "zh" else ": "
    parts = [Text(f"{lesson.order}. {printable(lesson.title(lang))}", style="bold underline"), Text("")]
    pages = len(lesson.steps) + 1  # the recap is the last step, as the app's title line counts it
    for i, step in enumerate(lesson.steps, 1):
        view = VIEWS[step.view]
        result = view.run(step.params)
        head = t(f"Step {i}/{pages}: ", f"第 {i}/{pages} 步：")
        parts += [Text(head + printable(step.title(lang)), style="bold"),
                  *prose(settings_line(result.params), width, style="dim")]
        parts += prose(fill(step.text(lang), result, lang), width)
        parts += render_tables(result, step.tables, lang, width, charts=plot)
        if step.compare is not None:
            other = view.run({**step.params, **step.compare})
            parts += [Text(text_of("below", lang, settings=settings_line(other.params)), style="bold")]
            parts += render_tables(other, step.tables, lang, width, charts=plot)
        for x in lesson.experiments:
            if x.action is None and applies(x, step):  # the hint as the app gives it after one press
                now = result.params.get(x.param)
                value = x.values[(x.values.index(now) + 1) % len(x.values) if now in x.values else 0]
                pressed = view.run({**step.params, x.param: value})
                line = f"[{x.key}] {x.param} {fmt_value(now)} -> {fmt_value(value)}{colon}"
                parts += prose(line + fill(step.hint(x, lang), pressed, lang), width, indent=2, gap=False)
        for indent, line in (asks or {}).get(step.id, []):
            parts += prose(line, width, indent=indent, gap=False)
        parts.append(Text(""))
    parts += [Text(t(f"Step {pages}/{pages}: Recap", f"第 {pages}/{pages} 步：小结"), style="bold"), Text("")]
    if lesson.experiments:
        parts += [Text(t("Experiments", "实验"), style="bold underline")]
        for x in lesson.experiments:
            values = " -> ".join(fmt_value(v) for v in x.values)
            what = f"{x.param} = {values}" if x.action is None else t("(in the app)", "（在交互界面里）")
            parts += prose(f"[{x.key}] {x.title(lang)}{colon}{what}", width, style="bold", gap=False)
        parts.append(Text(""))
    if lesson.pitfalls:
        parts += [Text(t("Pitfalls", "常见误区"), style="bold underline")]
        for p in lesson.pitfalls:
            lines = prose(p(lang), width, indent=2, gap=False)
            lines[0] = Text("-" + lines[0].plain[1:])
            parts += lines
    return Group(*parts)


def _block(table, lang, width=80, rule=True, rows=None, marked=frozenset(), added=frozenset(), colors="mono"):
    from rich.console import Group
    from rich.text import Text

    parts = [Text(table.title(lang), style="bold"), render_table(table, lang, rule, rows, marked, added, colors)]
    if table.note is not None:
        parts += prose(table.note(lang), width, style="dim", gap=False)
    return Group(*parts)


def arrange(result, keys, lang, width=80) -> list[list]:
    """The tables to show (those in keys, or all), in order, as lines of the page: a line is one table, or a
    run of weight maps set side by side, as many as the width allows."""
    lines, run = [], []

    def flush():
        while run:
            line = [run.pop(0)]
            used = max(table_width(line[0], lang), cell_len(line[0].title(lang)))
            while run and used + 3 + max(table_width(run[0], lang), cell_len(run[0].title(lang))) <= width:
                line.append(run.pop(0))
                used += 3 + max(table_width(line[-1], lang), cell_len(line[-1].title(lang)))
            lines.append(line)

    for table in result.tables:
        if keys and table.key not in keys:
            continue
        if table.heat == "weights" and not table.heat_cols:  # an attention map
            run.append(table)
            continue
        flush()
        lines.append([table])
    flush()
    return lines


def facts_lines(result, lang) -> list[str]:
    """Each fact as "label: value"."""
    colon = "：" if lang == "zh" else ": "
    return [f"{f.label(lang)}{colon}{format_value(f.value, f.fmt, lang)}" for f in result.facts]


def render_tables(result, keys, lang, width=80, rule=True, rows=None, marks=None, colors="mono", charts=True):
    """The charts keys names (when `charts`), then the tables (those in keys, or all), with runs of weight maps
    set side by side where they fit. `rows` maps a table key to the row indices to show; `marks`, when given,
    underlines what changed; `colors` shades the heatmaps and colours the charts (tui/heat.py)."""
    from rich.table import Table
    from rich.text import Text

    from .charts import render_chart

    parts = []
    rows = rows or {}

    def block(table, w):
        picked = shown_rows(table, rows.get(table.key))
        marked = marks.cells_of(table.key) if marks is not None else frozenset()
        added = marks.rows_of(table.key) if marks is not None else frozenset()
        return _block(table, lang, w, rule, picked, marked, added, colors)

    named = [c for c in result.charts if keys and c.key in keys]  # its numbers: key t
    for chart in named:  # one under the other, each title bold; a blank line after the last
        if charts:
            parts.extend(render_chart(chart, lang, width, colors))
        else:  # plain text for a pipe or a screen reader: say what the picture is, and how to get it
            from .i18n import t
            parts.extend(prose(t("chart_omitted", lang, title=chart.title(lang)), width, style="dim", gap=False))
    if named:
        parts.append(Text(""))
    for line in arrange(result, keys, lang, width):
        if len(line) == 1:
            parts.extend([block(line[0], width), Text("")])
            continue
        grid = Table.grid(padding=(0, 3))
        for _ in line:
            grid.add_column()
        grid.add_row(*(block(t, max(table_width(t, lang), 20)) for t in line))
        parts.extend([grid, Text("")])
    if not keys:
        parts += [Text(fact) for fact in facts_lines(result, lang)]
        if result.facts:
            parts.append(Text(""))
    return parts


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
