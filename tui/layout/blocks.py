"""A view's charts, tables and facts as Rich renderables, placed: what the page shows of a step
(tui/page.py), the `t` key's screen, and what `print` writes where Rich writes it.

A table is its title, its cells as tui/layout/tables.py lays them out (a Grid: the app's and print's
emitters draw it from its cells, Rich as a Table), and its note; weight maps sit side by side as the
width allows; a chart a step names comes above the tables.
"""

from ..format import settings_line
from .tables import arrange, facts_lines, lay_out, shown_rows, table_width
from .wrap import prose


def render_result(result, title: str, lang: str, width: int = 80, plot: bool = False):
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


def block(table, lang, width=80, rule=True, rows=None, marked=frozenset(), added=frozenset(), colors="mono"):
    """A table under its title, its note below it."""
    from rich.console import Group
    from rich.text import Text

    parts = [Text(table.title(lang), style="bold"), lay_out(table, lang, rule, rows, marked, added, colors)]
    if table.note is not None:
        parts += prose(table.note(lang), width, style="dim", gap=False)
    return Group(*parts)


def render_tables(result, keys, lang, width=80, rule=True, rows=None, marks=None, colors="mono", charts=True):
    """The charts keys names (when `charts`), then the tables (those in keys, or all), with runs of weight maps
    set side by side where they fit. `rows` maps a table key to the row indices to show; `marks`, when given,
    underlines what changed; `colors` shades the heatmaps and colours the charts (tui/heat.py)."""
    from rich.table import Table
    from rich.text import Text

    from .charts import render_chart

    parts = []
    rows = rows or {}

    def one(table, w):
        picked = shown_rows(table, rows.get(table.key))
        marked = marks.cells_of(table.key) if marks is not None else frozenset()
        added = marks.rows_of(table.key) if marks is not None else frozenset()
        return block(table, lang, w, rule, picked, marked, added, colors)

    named = [c for c in result.charts if keys and c.key in keys]  # its numbers: key t
    for chart in named:  # one under the other, each title bold; a blank line after the last
        if charts:
            parts.extend(render_chart(chart, lang, width, colors))
        else:  # plain text for a pipe or a screen reader: say what the picture is, and how to get it
            from ..i18n import t
            parts.extend(prose(t("chart_omitted", lang, title=chart.title(lang)), width, style="dim", gap=False))
    if named:
        parts.append(Text(""))
    for line in arrange(result, keys, lang, width):
        if len(line) == 1:
            parts.extend([one(line[0], width), Text("")])
            continue
        grid = Table.grid(padding=(0, 3))
        for _ in line:
            grid.add_column()
        grid.add_row(*(one(t, max(table_width(t, lang), 20)) for t in line))
        parts.extend([grid, Text("")])
    if not keys:
        parts += [Text(fact) for fact in facts_lines(result, lang)]
        if result.facts:
            parts.append(Text(""))
    return parts
