"""What imports what: the engine stays free of UI libraries, the command line parses before numpy."""

import subprocess
import sys

from conftest import ROOT


def loaded_after(statement):
    code = f"import sys; {statement}; print(' '.join(sorted(m.split('.')[0] for m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


def test_engine_imports_neither_textual_nor_rich():
    modules = loaded_after("import engine; engine.run_view('params')")
    assert "numpy" in modules
    assert not {"textual", "rich"} & modules


def test_command_line_parses_before_numpy_rich_or_textual():
    modules = loaded_after("import tui.cli; tui.cli.build_parser('en').parse_args(['print', 'cat'])")
    assert not {"numpy", "rich", "textual", "engine"} & modules


def test_lessons_do_not_reach_up_into_the_app():
    """engine -> lessons -> tui, one direction: loading and checking lessons needs no UI module."""
    modules = loaded_after("from lessons.loader import load_lessons, check_deep; "
                           "[check_deep(x) for x in load_lessons()[0]]")
    assert not {"tui", "textual", "rich"} & modules
