"""Charts (tui/layout/charts.py): inside their width in both languages, in characters every terminal measures alike,
without colour under NO_COLOR, and drawn where the numbers say."""

import math
import unicodedata

import pytest
from rich.cells import cell_len
from rich.style import Style

from engine.views import VIEWS, Chart, Series, Tr
from tui import heat
from tui.layout import charts

BACKGROUND = {"textual-dark": "#121212", "textual-light": "#e0e0e0"}


def _view_charts():
    """Every chart of every view at its defaults, and at a setting that changes it (the real model's views have
    none: tests/test_real_views.py)."""
    out = []
    for view in (v for v in VIEWS.values() if not v.model):
        for chart in view.run({}).charts:
            out.append((view.id, chart))
    return out


CHARTS = _view_charts()


def test_the_views_give_the_charts_the_lessons_show():
    keys = {(v, c.key) for v, c in CHARTS}
    assert {("positional", "waves"), ("dsweep", "entropy"), ("dsweep", "maxweight"), ("params", "split"),
            ("compare", "split"), ("kvcache", "growth"), ("context", "share")} <= keys


def _allowed(ch: str) -> bool:
    """ASCII, CJK (wide, never ambiguous) and braille: never an ambiguous-width character."""
    return ch.isascii() or 0x2800 <= ord(ch) <= 0x28FF or unicodedata.east_asian_width(ch) in ("W", "F", "N", "Na")


@pytest.mark.parametrize("mode", heat.MODES)
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("width", [40, 60, 78, 120])
@pytest.mark.parametrize("view,chart", CHARTS, ids=[f"{v}-{c.key}" for v, c in CHARTS])
def test_every_chart_fits_its_width_in_safe_characters(view, chart, width, lang, mode):
    lines = charts.render_chart(chart, lang, width, mode)
    assert len(lines) >= 3
    for line in lines:
        assert cell_len(line.plain) <= width, (line.plain, width)
        bad = [ch for ch in line.plain if not _allowed(ch) or unicodedata.east_asian_width(ch) == "A"]
        assert not bad, (bad, line.plain)
        if mode == "mono":
            for span in line.spans:
                style = Style.parse(span.style) if isinstance(span.style, str) else span.style
                assert style.color is None and style.bgcolor is None, (span, line.plain)


def _chart(kind="line", **kw):
    base = dict(key="c", title=Tr("t", "t"), kind=kind, series=(), x=())
    base.update(kw)
    return Chart(**base)


def test_a_line_reaches_the_top_and_bottom_rows_at_its_extremes():
    """A rising line: its first point on the bottom row at the left, its last on the top row at the right, and
    the y ticks say 9 and 0, in every mode."""
    chart = _chart(series=(Series(Tr("up", "up"), tuple(float(v) for v in range(10))),), x=tuple(range(10)))
    rows = charts.HEIGHT["line"]
    for mode in heat.MODES:
        lines = charts.render_chart(chart, "en", 50, mode)
        ticks, plot = zip(*(line.plain.split("|", 1) for line in lines[1:1 + rows]))
        assert plot[-1][0] != " " and plot[0][:5].strip() == "", (mode, plot)
        assert plot[0].rstrip()[-1] != " " and len(plot[0].rstrip()) == len(plot[0]), (mode, plot)
        assert len(plot[-1].rstrip()) < len(plot[0]) / 2, (mode, plot)  # the bottom row ends before the middle
        assert ticks[0].strip() == "9" and ticks[-1].strip() == "0", ticks


def test_a_sine_in_a_strip_crosses_zero_where_it_should():
    """sin over 0..63 at theta 1: the braille dots sit in the upper row while sin > 0 and in the lower one
    while sin < 0 (at one column a cell, read at the cell's middle)."""
    xs = tuple(range(64))
    chart = _chart("strips", series=(Series(Tr("s", "s"), tuple(math.sin(p * 0.1) for p in xs)),), x=xs,
                   y_range=(-1.0, 1.0))
    lines = charts.render_chart(chart, "en", 66, "mono")
    top, bottom = (line.plain.split("|", 1)[1] for line in lines[1:3])
    cols = len(top)
    for c in range(cols):
        x = (c + 0.5) / 64 * 63
        v = math.sin(0.1 * x)
        if abs(v) > 0.1:
            assert (top[c] != " ") == (v > 0) and (bottom[c] != " ") == (v < 0), (c, v)


def test_log_y_makes_a_constant_ratio_a_constant_gap():
    """Two lines a factor of 16 apart on log axes: parallel, the same number of rows apart everywhere."""
    xs = tuple(2 ** k for k in range(10, 18))
    chart = _chart(series=(Series(Tr("a", "a"), tuple(16.0 * x for x in xs)),
                           Series(Tr("b", "b"), tuple(float(x) for x in xs))),
                   x=xs, log_x=True, log_y=True)
    rows = charts.render_chart(chart, "en", 60, "mono")[1:1 + charts.HEIGHT["line"]]
    plot = [row.plain.split("|", 1)[1] for row in rows]
    gaps = set()
    for c in range(len(plot[0])):
        a = [r for r, line in enumerate(plot) if c < len(line) and line[c] == "*"]
        b = [r for r, line in enumerate(plot) if c < len(line) and line[c] == "o"]
        if a and b:
            gaps.add(b[0] - a[0])
    assert len(gaps) <= 2 and min(gaps) >= 1, gaps  # parallel, up to the rounding of one row


@pytest.mark.parametrize("values,cells", [((1, 1, 1), 10), ((131, 2147, 4329, 0.27, 131), 53), ((5, 0, 5), 7),
                                           ((1, 2, 3, 4), 100)])
def test_a_bar_splits_its_cells_in_proportion(values, cells):
    parts = charts.split(values, cells)
    assert sum(parts) == cells
    total = sum(values)
    for v, n in zip(values, parts):
        assert abs(n - v / total * cells) < 1, (values, parts)


def test_a_stacked_bar_is_as_wide_as_the_width_and_prints_its_big_shares():
    chart = _chart("stack", series=(Series(Tr("model", "模型"), (10.0, 60.0, 30.0)),),
                   parts=(Tr("a", "甲"), Tr("b", "乙"), Tr("c", "丙")))
    for lang in ("en", "zh"):
        for mode in heat.MODES:
            bar = charts.render_chart(chart, lang, 60, mode)[1]
            assert cell_len(bar.plain) == 60, (lang, mode, bar.plain)
            assert "60%" in bar.plain and "30%" in bar.plain, bar.plain


def test_series_colours_stand_out_from_the_background():
    """WCAG's 3:1 for graphics against Textual's dark background, for every colour a line or a bar can take."""
    for colour in charts.OKABE_ITO:
        assert heat.contrast(colour, BACKGROUND["textual-dark"]) >= 3.0, colour


def test_the_mono_legend_names_each_series_by_its_marker():
    chart = _chart(series=(Series(Tr("first", "第一"), (0.0, 1.0)), Series(Tr("second", "第二"), (1.0, 0.0))), x=(0, 1))
    legend = charts.render_chart(chart, "zh", 60, "mono")[-1].plain
    assert "** 第一" in legend and "oo 第二" in legend


def test_a_setting_changes_the_picture():
    """The base experiment stretches the waves; kv_heads moves the middle line of the cache chart."""
    def drawn(view, settings, key):
        chart = next(c for c in VIEWS[view].run(settings).charts if c.key == key)
        return [line.plain for line in charts.render_chart(chart, "en", 78, "color")]

    assert drawn("positional", {"base": 10000.0}, "waves") != drawn("positional", {"base": 500000.0}, "waves")
    assert drawn("kvcache", {"kv_heads": 32}, "growth") != drawn("kvcache", {"kv_heads": 8}, "growth")


def test_print_plot_draws_the_charts_in_plain_characters_and_json_carries_their_data():
    """`print VIEW --plot` adds the charts, without colour or escapes in a pipe; without --plot the output is
    the tables alone; --json holds each chart's series."""
    import json

    from conftest import run_cli

    plain = run_cli("print", "kvcache")
    plotted = run_cli("print", "kvcache", "--plot")
    assert plain.returncode == plotted.returncode == 0
    assert "y: GiB" not in plain.stdout and "y: GiB" in plotted.stdout
    assert "\x1b" not in plotted.stdout and "MQA kv=1" in plotted.stdout
    assert plotted.stdout.endswith(plain.stdout.split("\n", 2)[2])  # the same tables after the chart
    data = json.loads(run_cli("print", "dsweep", "--json").stdout)["views"][0]
    entropy = next(c for c in data["charts"] if c["key"] == "entropy")
    table = next(t for t in data["tables"] if t["key"] == "sweep")
    column = [c["key"] for c in table["columns"]].index("raw_entropy")
    assert entropy["series"][0]["values"] == [row[column] for row in table["rows"]]
    lesson = run_cli("print", "--lesson", "positional", "--plot")
    assert lesson.returncode == 0 and "d0 |" in lesson.stdout
    unplotted = run_cli("print", "--lesson", "positional").stdout
    assert "d0 |" not in unplotted and "[chart: sin(pos * theta_i)" in unplotted  # said, not drawn
