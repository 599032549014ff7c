"""The printer's own renderer writes what Rich writes, and `print VIEW` loads only what that view needs."""

import functools
import io
import subprocess
import sys

import pytest
from helpers.cli import ROOT
from helpers.marks import with_real_marks
from rich.console import Console, Group
from rich.text import Text

from engine.views import VIEWS
from engine.views.core import HOMES
from tui.layout.blocks import render_result
from tui.layout.terminal import render_views, screen

from test_views import VARIANTS, real


@functools.cache
def computed(i):
    view_id, settings = VARIANTS[i]
    return VIEWS[view_id], VIEWS[view_id].run(settings)


def by_rich(pairs, lang, width, styled) -> str:
    """What tui.cli.print_cmd writes through Rich, for a console of this width, on a terminal or not."""
    out = Console(file=io.StringIO(), width=width, force_terminal=styled, color_system="standard" if styled else None,
                  highlight=False, emoji=False, soft_wrap=False)
    with out.capture() as captured:
        out.print(Group(*[part for i, (v, r) in enumerate(pairs)
                          for part in ([Text("")] if i else []) + [render_result(r, v.title(lang), lang, out.width)]]))
    return captured.get()


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("i", with_real_marks(range(len(VARIANTS)), lambda i: real(VARIANTS[i])),
                         ids=[f"{v}-{'-'.join(s.values())}" for v, s in VARIANTS])
def test_every_view_prints_as_rich_prints_it(i, lang):
    """Character for character, escape codes included; where the renderer steps aside, Rich prints."""
    pair = computed(i)
    for width in (80, 120, 60, 40):
        for styled in (False, True):
            mine = render_views([pair], lang, width, styled)
            if mine is not None:
                assert mine == by_rich([pair], lang, width, styled), (width, styled)
    assert render_views([pair], lang, 80, False) is not None  # at the default width every view is drawn here


def test_views_one_under_another_as_rich_prints_them():
    pairs = [computed(i) for i in range(4)]
    for styled in (False, True):
        assert render_views(pairs, "zh", 80, styled) == by_rich(pairs, "zh", 80, styled)


def test_styles_are_written_only_on_a_terminal():
    pair = computed(0)
    assert "\x1b[" in render_views([pair], "en", 80, True)
    assert "\x1b[" not in render_views([pair], "en", 80, False)


class FakeOut(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


@pytest.mark.parametrize("environ, tty, expected", [
    ({"COLUMNS": "100", "LINES": "30"}, False, (100, False)),
    ({"COLUMNS": "100", "LINES": "30"}, True, (100, True)),
    ({"COLUMNS": "100", "LINES": "30", "FORCE_COLOR": "1"}, False, (100, True)),
    ({"COLUMNS": "100", "LINES": "30", "TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"}, True, (100, False)),
    ({"COLUMNS": "100", "LINES": "30", "TERM": "dumb"}, True, None),  # Rich's own rules for a dumb terminal
    ({"COLUMNS": "100", "LINES": "30", "TERM": "dumb"}, False, (100, False)),
])
def test_screen_decides_as_rich_does(environ, tty, expected):
    assert screen(environ, FakeOut(tty)) == expected
    if expected is not None:
        rich = Console(file=FakeOut(tty), _environ=environ)
        assert (rich.width, rich.is_terminal and rich.color_system is not None) == expected


def test_the_table_of_homes_is_where_each_view_is_registered():
    """core.HOMES names, in the lessons' order, the module that defines and registers each view."""
    assert list(VIEWS) == list(HOMES)
    for view_id, view in VIEWS.items():
        assert view.compute.__module__ == f"engine.views.{HOMES[view_id]}", view_id


def test_printing_one_view_loads_only_its_topic_and_no_rich_console():
    """Nor argparse (tui.cli.parser.print_args reads the command), nor dataclasses (the views' types are records)."""
    code = ("import sys; from tui.cli import main; main(['print', 'positional']); "
            "print(sorted(m for m in sys.modules if m.startswith(('engine.views.', 'rich.console', 'rich.table')) "
            "or m in ('argparse', 'dataclasses')), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip() == "['engine.views.core', 'engine.views.positions']"
    assert "Sinusoidal positions" in out.stdout
