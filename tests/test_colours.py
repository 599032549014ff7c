"""Colours on one screen: every part of the stacked bar shows, in its own colour, in 16 and 256
colours and truecolor as NO_COLOR shows it with its own fill; and no 16-colour shade of a heatmap means two things."""


import pytest
from rich.color import Color, ColorSystem
from rich.console import Group
from rich.style import Style
from textual._ansi_theme import MONOKAI

from engine import sizing
from engine.views import Tr
from engine.views.sizing import split_chart
from tui import heat
from tui.layout.charts import FILLS, render_chart, split
from tui.layout.flatten import flatten

WIDTH = 78
SYSTEMS = {"truecolor": ColorSystem.TRUECOLOR, "256": ColorSystem.EIGHT_BIT, "standard": ColorSystem.STANDARD}


def chart():
    """The params lesson's bar: Llama 3 8B over Llama 2 7B, whose embedding and output head take a cell each."""
    return split_chart([(Tr("Llama 3 8B", "Llama 3 8B"), sizing.preset("llama3-8b")),
                        (Tr("Llama 2 7B", "Llama 2 7B"), sizing.preset("llama2-7b"))])


def shown(colour: Color, system: ColorSystem) -> tuple:
    """What a terminal of this colour system shows for a colour: as Textual writes it, a named ANSI colour
    read through its dark theme (Monokai), then rounded to what the terminal has."""
    if colour.number is not None and colour.number < 16:
        colour = Color.from_rgb(*MONOKAI.ansi_colors[colour.number])
    return colour.downgrade(system).triplet or colour.downgrade(system).number


@pytest.mark.parametrize("system", list(SYSTEMS))
def test_every_part_of_the_bar_shows_in_a_colour_of_its_own(system):
    """Each bar is its parts in order, as many cells as split() gives each, each part's background one no other
    part has, as the terminal shows it. Before: the output head (the bar's last run, all spaces) was cut
    as trailing blanks, Llama 2 7B's one-cell embedding with it, and in 16 colours FFN and output head were
    both magenta."""
    mode = heat.mode_for(False, system)
    c = chart()
    lines = flatten(Group(*render_chart(c, "en", WIDTH, mode)), WIDTH).split("\n")
    colours = {}
    for series, line in zip(c.series, lines[1:]):
        label_w = len(line.plain) - sum(s.end - s.start for s in line.spans if Style.parse(str(s.style)).bgcolor)
        cells = split(series.values, WIDTH - label_w)
        runs = [(s.end - s.start, Style.parse(str(s.style)).bgcolor) for s in line.spans]
        runs = [(n, bg) for n, bg in runs if bg is not None]
        assert [n for n, _ in runs] == [n for n in cells if n], (series.label.en, runs, cells)
        for part, (n, bg) in zip([i for i, n in enumerate(cells) if n], runs):
            assert colours.setdefault(part, shown(bg, SYSTEMS[system])) == shown(bg, SYSTEMS[system])
    assert len(set(colours.values())) == len(colours) >= 4  # embedding, attention, FFN, output head


def test_without_colour_every_part_has_its_fill():
    c = chart()
    lines = flatten(Group(*render_chart(c, "en", WIDTH, "mono")), WIDTH).plain.split("\n")
    for series, line in zip(c.series, lines[1:3]):
        cells = split(series.values, WIDTH - (len(series.label.en) + 1))
        for i, n in enumerate(cells):
            assert (FILLS[i] in line) == bool(n), (line, i, n)


def _backgrounds(kind: str) -> set:
    values = [i / 100 for i in range(-100, 101)]
    return {Style.parse(st).bgcolor.name for v in values for peak in (False, True)
            if (st := heat.style(kind, float(v), "ansi", 1.0, peak)) and Style.parse(st).bgcolor}


def test_no_16_colour_shade_means_two_things():
    """Scores (signed) sit above their attention weights on one screen: a shade is one or the other."""
    weights, signed = _backgrounds(heat.WEIGHTS), _backgrounds(heat.SIGNED)
    assert len(weights) == 3 and len(signed) == 2 and not weights & signed, (weights, signed)
    monokai = {name: shown(Color.parse(name), ColorSystem.STANDARD) for name in weights | signed}
    assert len(set(monokai.values())) == 5  # and still five as Textual shows them in 16 colours
