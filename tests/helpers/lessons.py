"""Lessons as tests read them: the folders of broken lessons the loader must refuse, and a lesson's plain reading."""

import io

from rich.console import Console

from tui.printer import render_lesson

from .cli import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "bad_lessons"


def plain(lesson, lang):
    """The plain reading of a lesson (`xf-tour print --lesson`), 80 columns, without colour."""
    buf = io.StringIO()
    Console(file=buf, width=80, color_system=None, highlight=False).print(render_lesson(lesson, lang))
    return buf.getvalue()
