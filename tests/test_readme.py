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
    assert "'.[test]'" in test and "pytest" in test


def test_ci_runs_exactly_the_readme_test_command():
    _, test = quick_start_commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test in ci
