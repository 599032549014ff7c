"""The tour's command line, run as a learner runs it: `python -m tui ARGS` in a fresh process."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent  # the repository


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
