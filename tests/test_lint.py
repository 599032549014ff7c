"""The linter: `ruff check .` finds nothing, with the rules pyproject.toml's [tool.ruff] sets, so that the
README's test command and CI run it too."""

import subprocess
import sys

from conftest import ROOT


def test_ruff_finds_nothing():
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, f"ruff check . found problems:\n{out.stdout}{out.stderr}"
