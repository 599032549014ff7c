"""The README's two commands are the ones that CI and a new user run."""

import re

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
    assert {"data/*.npz", "data/*.json"} <= set(data["engine"]) and "*.toml" in data["lessons"] and "*.tcss" in data["tui"]
