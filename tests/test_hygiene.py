"""What imports what: the engine stays free of UI libraries, the command line parses before numpy."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cli import ROOT


def loaded_after(statement):
    code = f"import sys; {statement}; print(' '.join(sorted(m.split('.')[0] for m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


def test_engine_imports_neither_textual_nor_rich():
    modules = loaded_after("import engine; engine.run_view('params'); engine.run_view('residual')")  # numpy's views too
    assert "numpy" in modules
    assert not {"textual", "rich"} & modules


def test_command_line_parses_before_numpy_rich_or_textual():
    modules = loaded_after("import tui.cli; tui.cli.build_parser('en').parse_args(['print', 'cat'])")
    assert not {"numpy", "rich", "textual", "engine"} & modules


@pytest.mark.slow
def test_lessons_do_not_reach_up_into_the_app():
    """engine -> lessons -> tui, one direction: loading and checking lessons needs no UI module."""
    modules = loaded_after("from lessons.loader import load_lessons; from lessons.check import check_deep; "
                           "[check_deep(x) for x in load_lessons()[0]]")
    assert not {"tui", "textual", "rich"} & modules


# --- the layout: one direction of imports, no cycles, no module too long to read ---------------

PACKAGES = ("engine", "lessons", "tui")
MAX_LINES = 500
DATA_MODULES = frozenset()  # modules that are data, not code, may run longer; none today


def project_modules() -> dict[str, Path]:
    """Every Python module of the project by dotted name: the three packages, bench/ and tests/."""
    found = {}
    for top in (*PACKAGES, "bench", "tests"):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports_of(name: str, path: Path, modules) -> set[str]:
    """The project modules that `name` imports anywhere in its file, at the top or inside a function."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        out |= {t for t in targets if t in modules and t != name}
    return out


def import_graph():
    modules = project_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def test_no_import_cycle_among_the_projects_modules():
    graph = import_graph()
    state, cycles = {}, []

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(trail[trail.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, cycles


def test_the_graph_sees_the_imports_it_must_see():
    """The cycle test reads imports inside functions and relative ones, or it would pass on anything."""
    graph = import_graph()
    assert "tui.app" in graph["tui.cli.tour"]          # `from ..app import make_app` inside a function
    assert "engine.ops" in graph["engine.views.tiny"]  # `from .. import ops`
    assert "engine.llama" in graph["engine.random_llama"]


def test_engine_lessons_tui_import_in_one_direction():
    """engine -> lessons -> tui: the engine knows neither lessons nor the app, and lessons do not know the app."""
    wrong = [(a, b) for a, targets in import_graph().items() for b in targets
             if (a.startswith("engine") and b.split(".")[0] in ("lessons", "tui"))
             or (a.startswith("lessons") and b.split(".")[0] == "tui")]
    assert not wrong


def test_no_module_is_over_500_lines():
    long = {name: n for name, path in project_modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES and name not in DATA_MODULES}
    assert not long


ISSUE_NUMBER = re.compile(r"\bissues? \(?\d+", re.IGNORECASE)  # the word and a number; an upstream "#6605" is fine


def test_the_projects_own_text_names_no_issue_number():
    """Code, lessons and docs say what a thing is and why, not which ticket brought it."""
    tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=ROOT, check=True).stdout.split()
    files = [ROOT / f for f in tracked if f.endswith((".py", ".toml", ".md", ".tcss")) and "__snapshots__" not in f]
    assert len(files) > 50
    hits = [f"{path.relative_to(ROOT)}:{i}: {line.strip()}" for path in files if path.exists()
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if ISSUE_NUMBER.search(line)]
    assert not hits
