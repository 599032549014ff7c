import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ["TEXTUAL_ANIMATIONS"] = "none"  # snapshots and pilots must not depend on timing
# The lessons' questions wait before a key acts; the tests of the keys and screens press keys as before, and
# tests/test_quiz_app.py (make_app(asks=True)) and tests/test_quiz_tmux.py ask them
os.environ["XF_TOUR_QUESTIONS"] = "off"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _seeded():
    """The engine draws from explicit seeds; the global generator is seeded too, so nothing drifts."""
    np.random.seed(0)


@pytest.fixture
def state(tmp_path):
    """A progress folder of the test's own, not yet made: the app creates it."""
    return tmp_path / "state"


def cli_environ(env=None, drop=()):
    """This environment with a neutral locale, no colour and 80 columns, then env added and drop removed."""
    environ = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES", "LANG", *drop)}
    environ.update({"LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1", "COLUMNS": "80"})
    environ.update(env or {})
    return environ


def run_cli(*args, env=None):
    """Run `python -m tui ARGS` in a fresh process, from the repo root, with cli_environ(env)."""
    environ = cli_environ(env)
    return subprocess.run([sys.executable, "-m", "tui", *args], capture_output=True, text=True, cwd=ROOT,
                          env=environ, timeout=120)
