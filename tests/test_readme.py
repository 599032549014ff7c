"""The README's two commands are the ones that CI and a new user run."""

import re
from pathlib import Path

from conftest import ROOT


def quick_start_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_quick_start_has_two_commands():
    install, test = quick_start_commands()
    assert install.endswith("xf-tour") and "pip install -e ." in install
    assert "'.[test,serve]'" in test and "pytest" in test


def test_ci_runs_exactly_the_readme_test_command():
    _, test = quick_start_commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test in ci


def test_a_plain_install_packages_every_module():
    """pip install . (not -e) must carry every package and data file the app loads."""
    import fnmatch
    import tomllib
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    include = config["packages"]["find"]["include"]
    packages = {".".join(p.parent.relative_to(ROOT).parts) for p in ROOT.glob("*/**/__init__.py")
                if p.parent.relative_to(ROOT).parts[0] in ("engine", "lessons", "tui")}
    assert {"tui.screens", "tui.widgets"} <= packages
    assert all(any(fnmatch.fnmatch(pkg, pattern) for pattern in include) for pkg in packages)
    data = config["package-data"]
    assert {"data/*.npz", "data/*.json"} <= set(data["engine"])
    assert "*.toml" in data["lessons"] and "*.tcss" in data["tui"]


# --- the README is a user's page; the rest is in docs/ -------------------------------------------------------

README_MAX_LINES = 200
LAYOUT = ROOT / "docs" / "layout.md"
PACKAGES = ("engine", "lessons", "tui", "bench")  # every Python module under these is named in the Layout
DOCS = ("README.md", "docs/*.md", "bench/README.md")  # the pages whose links and paths must lead somewhere


def test_readme_is_a_short_page():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < README_MAX_LINES, f"README.md has {len(lines)} lines; move detail to docs/"


def modules_on_disk(root=ROOT) -> set[str]:
    """Every Python module of the packages and every page of docs/, as repo paths, found at test time."""
    found = {p for package in PACKAGES for p in (root / package).rglob("*.py") if "__pycache__" not in p.parts}
    found |= set((root / "docs").glob("*.md"))
    return {p.relative_to(root).as_posix() for p in found}


def layout_entries(text: str) -> list[str]:
    """The paths the Layout names, each as the head of a list item: "- `engine/ops.py`: ..."."""
    return re.findall(r"^\s*- `([^`]+)`", text, flags=re.MULTILINE)


def layout_problems(text: str, root=ROOT) -> tuple[list[str], list[str]]:
    """(modules the Layout does not name, entries of the Layout that name nothing on disk)."""
    entries = layout_entries(text)
    unnamed = sorted(modules_on_disk(root) - set(entries))
    ghosts = sorted(e for e in entries if not (root / e).exists())
    return unnamed, ghosts


def test_the_layout_names_every_module_and_only_modules_that_exist():
    unnamed, ghosts = layout_problems(LAYOUT.read_text(encoding="utf-8"))
    assert not unnamed, f"docs/layout.md does not name: {', '.join(unnamed)} (add one line each)"
    assert not ghosts, f"docs/layout.md names what does not exist: {', '.join(ghosts)}"


def test_the_layout_check_catches_a_missing_and_a_ghost_module():
    text = LAYOUT.read_text(encoding="utf-8")
    assert "- `engine/views/core.py`:" in text
    unnamed, ghosts = layout_problems(text)
    cut = text.replace("- `engine/views/core.py`:", "- engine/views/core.py:") + "\n- `engine/gone.py`: nothing\n"
    assert layout_problems(cut) == (sorted([*unnamed, "engine/views/core.py"]), sorted([*ghosts, "engine/gone.py"]))


def test_the_readme_links_to_the_layout_and_every_page_of_docs():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    pages = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))
    assert "docs/layout.md" in pages
    assert [p for p in pages if f"]({p})" not in text] == []


PLACEHOLDERS = {"NN", "ID", "NAME", "MODULE", "CONFIG", "FILE", "DIR"}


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def broken_references(page: Path) -> list[str]:
    """Links to a file or heading that is not there, and repo paths in backticks that name nothing."""
    text, broken = page.read_text(encoding="utf-8"), []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", file.read_text(encoding="utf-8"), flags=re.MULTILINE)
            if anchor not in {slug(h) for h in headings}:
                broken.append(target)
    for path in re.findall(r"`((?:engine|lessons|tui|bench|docs|tests|\.ci)/[^`\s]*)`", text):
        if "*" in path or PLACEHOLDERS & set(re.findall(r"[A-Z]+", path)):
            continue  # a pattern such as lessons/NN-ID.toml, not a file
        if not (ROOT / path).exists():
            broken.append(path)
    return broken


def test_every_link_and_path_of_the_docs_leads_somewhere():
    pages = sorted({p for pattern in DOCS for p in ROOT.glob(pattern)})
    assert ROOT / "README.md" in pages and ROOT / "bench" / "README.md" in pages
    broken = {p.relative_to(ROOT).as_posix(): b for p in pages if (b := broken_references(p))}
    assert not broken, f"links or paths that lead nowhere: {broken}"
