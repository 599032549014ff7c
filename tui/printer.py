"""What `print` writes through Rich's console: a whole lesson as a person reads it, and a view where
tui/layout/terminal.py steps aside; and views, lessons and questions as JSON.

When stdout is not a terminal no escape codes are written. Rich's console, tables and texts are imported
where they are used: `xf-tour print VIEW` writes the same characters through tui/layout/terminal.py
without them, which saves most of its start-up.
"""

import math

from engine.views import Result, fmt_value
from lessons.template import printable

from .fill import fill
from .format import settings_line
from .layout.blocks import render_tables
from .layout.wrap import prose


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
