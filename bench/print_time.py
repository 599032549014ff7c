"""How long `xf-tour print` takes for each view, beside `python -c "import numpy, rich"`.

Run from the repo root with the venv's python:  .venv/bin/python bench/print_time.py [--runs N]
Each command runs N times in a fresh process, after one warm-up run, with Python's bytecode cache on
as in an installed app; the table gives the median and the fastest run, in ms.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.views import VIEWS  # noqa: E402  (after the path is set)


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as an installed app runs


def wall_ms(cmd, runs):
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV, check=True)  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV, check=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    py = sys.executable
    rows = [("python -c \"import numpy, rich\"", [py, "-c", "import numpy, rich"]),
            ("xf-tour --help", [py, "-m", "tui", "--help"])]
    rows += [(f"xf-tour print {v}", [py, "-m", "tui", "print", v]) for v in VIEWS]
    rows += [("xf-tour print (all views)", [py, "-m", "tui", "print"]),
             ("xf-tour print --lesson attention", [py, "-m", "tui", "print", "--lesson", "attention"])]
    print(f"| command | median ms | fastest ms |  ({runs} runs each)")
    print("|---|---:|---:|")
    for name, cmd in rows:
        median, fastest = wall_ms(cmd, runs)
        print(f"| `{name}` | {median:.0f} | {fastest:.0f} |")


if __name__ == "__main__":
    main()
