"""How long `xf-tour print` takes for each view, beside `python -c "import numpy, rich"`, as a ratio.

Run from the repo root with the venv's python:  .venv/bin/python bench/print_time.py [--runs N] [--json]
Each command runs N times in a fresh process, after one warm-up run, with Python's bytecode cache on
as in an installed app, stdout to /dev/null. The anchor runs before every command, round by round, so
both see the same machine load; a ratio is the command's median over the anchor's median.
Targets: `print positional` <= 1.3x the anchor, every single view <= 1.5x.

`xf-tour print` asks numpy's OpenBLAS for one thread (tui/cli/print_cmd.py); the anchor, run as a user
runs it, starts a second one with numpy, which spins and on a busy machine takes the main thread's CPU.
A row runs the anchor with OPENBLAS_NUM_THREADS=1 too, so that what is left of the print commands' own
cost can be read beside it.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.views import VIEWS  # noqa: E402  (after the path is set; the view ids, without computing any)

# every view but the real model's, which need its file and have their own figures (bench/real_model.py)
PRINTED = [view.id for view in VIEWS.values() if not view.model]

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as an installed app runs
ONE_THREAD = {**ENV, "OPENBLAS_NUM_THREADS": "1"}
TARGETS = {"positional": 1.3, "view": 1.5}


def once(cmd, env=ENV) -> float:
    """Wall time of one run, in ms."""
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
    return (time.perf_counter() - start) * 1000


def measure(rows, anchor, runs) -> dict:
    """name -> list of ms, the anchor's under its own name; runs interleaved round by round. A row is
    (name, command) or (name, command, environment)."""
    for _, cmd, *env in [("anchor", anchor), *rows]:  # warm-up: writes the .pyc files
        once(cmd, *env)
    times = {"anchor": [], **{row[0]: [] for row in rows}}
    for _ in range(runs):
        for name, cmd, *env in rows:
            times["anchor"].append(once(anchor))
            times[name].append(once(cmd, *env))
    return times


def bench(runs: int = 10) -> dict:
    """Every command `runs` times beside the anchor; medians, ratios and the targets met."""
    py = sys.executable
    anchor = [py, "-c", "import numpy, rich"]
    rows = [("anchor, OPENBLAS_NUM_THREADS=1", anchor, ONE_THREAD), ("xf-tour --help", [py, "-m", "tui", "--help"])]
    rows += [(f"xf-tour print {v}", [py, "-m", "tui", "print", v]) for v in PRINTED]
    rows += [("xf-tour print (all views)", [py, "-m", "tui", "print"]),
             ("xf-tour print --lesson attention", [py, "-m", "tui", "print", "--lesson", "attention"])]
    times = measure(rows, anchor, runs)
    base = statistics.median(times["anchor"])
    result = {"runs": runs, "anchor_ms": base, "rows": []}
    for name, *_ in rows:
        median = statistics.median(times[name])
        view = name.removeprefix("xf-tour print ") if name.removeprefix("xf-tour print ") in PRINTED else None
        target = None if view is None else TARGETS["positional" if view == "positional" else "view"]
        result["rows"].append({"command": name, "median_ms": median, "fastest_ms": min(times[name]),
                               "ratio": median / base, "target": target})
    views = [r for r in result["rows"] if r["target"] is not None]
    worst = max(views, key=lambda r: r["ratio"])
    result["worst_view"] = worst["command"]
    result["worst_ratio"] = worst["ratio"]
    result["positional_ratio"] = next(r["ratio"] for r in views if r["command"] == "xf-tour print positional")
    result["targets_met"] = all(r["ratio"] <= r["target"] for r in views)
    return result


def report(result) -> str:
    """Every command as a Markdown table."""
    lines = [f"anchor `python -c \"import numpy, rich\"`: median {result['anchor_ms']:.0f} ms "
             f"({result['runs']} runs, interleaved)\n",
             "| command | median ms | fastest ms | x anchor | target |",
             "|---|---:|---:|---:|---|"]
    for r in result["rows"]:
        target = f"<= {r['target']}x" if r["target"] else ""
        lines.append(f"| `{r['command']}` | {r['median_ms']:.0f} | {r['fastest_ms']:.0f} | {r['ratio']:.2f} | "
                     f"{target} |")
    lines.append(f"\nworst single view: `{result['worst_view']}` {result['worst_ratio']:.2f}x; "
                 f"targets met: {'yes' if result['targets_met'] else 'NO'}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    a = parser.parse_args()
    result = bench(a.runs)
    print(json.dumps(result, indent=2) if a.json else report(result))


if __name__ == "__main__":
    main()
