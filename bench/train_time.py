"""How long `xf-tour train --config main` takes and how much memory it peaks at, beside a numpy anchor.

The anchor is a fixed numpy loop run by the same python: 2,000 steps, each 8 float32 matmuls of a
[512, 32] batch by a [32, 32] weight with a tanh after each: small-array work of the tiny Llama's
shapes (d_model 32). Training is small-array numpy work, so its time follows the machine's numpy speed and
per-call overhead, not its start-up: a `python -c "import numpy"` anchor would be 1 % of the figure and
say nothing about a slower CPU. The anchor's peak memory is a process with numpy loaded and a few
small arrays, the floor any numpy trainer starts from.

It also runs two anchors at once and reports how many cores the machine gave them (2.0 when both cores
are free; training uses two processes, so its time follows this figure).

Run from the repo root:  .venv/bin/python bench/train_time.py [--runs 1] [--config main] [--json]
Targets for main (2,000 steps): <= 12 s and <= 150 MiB.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as an installed app runs
TARGETS = {"seconds": 12.0, "peak_mib": 150.0}
ANCHOR = """
import numpy as np
rng = np.random.default_rng(0)
x = rng.standard_normal((512, 32), dtype=np.float32)
w = rng.standard_normal((32, 32), dtype=np.float32) / np.float32(6)
for _ in range(2000):
    y = x
    for _ in range(8):
        y = np.tanh(y @ w)
"""


def timed(cmd, cwd) -> tuple[float, float, str]:
    """Wall seconds, peak resident MiB of the process tree (bench/maxrss.py), and stdout."""
    with tempfile.NamedTemporaryFile(suffix=".rss", delete=False) as f:
        rss = f.name
    start = time.perf_counter()
    out = subprocess.run([PY, str(ROOT / "bench" / "maxrss.py"), rss, *cmd], capture_output=True, text=True,
                         env=ENV, cwd=cwd)
    seconds = time.perf_counter() - start
    if out.returncode:
        raise RuntimeError(f"{cmd} exited {out.returncode}:\n{out.stderr[-2000:]}")
    peak = float(Path(rss).read_text())
    os.unlink(rss)
    return seconds, peak, out.stdout


def two_at_once(cwd) -> float:
    """How many cores the machine gives two busy processes now: 2 x (an anchor's time alone) / (the time of
    two run at once), each with one BLAS thread as the trainer's two processes have. Training runs in two
    processes (engine/helper_process.py), so on a 2-core machine whose host lends the second core only part of
    the time, its time follows this figure. (Two anchors with two BLAS threads each spin against each other:
    one run took 124 s against 3.6 s alone.)"""
    env = {**ENV, "OPENBLAS_NUM_THREADS": "1"}

    def run(n):
        start = time.perf_counter()
        procs = [subprocess.Popen([PY, "-c", ANCHOR], env=env, cwd=cwd) for _ in range(n)]
        if any(p.wait() for p in procs):
            raise RuntimeError("the anchor failed")
        return time.perf_counter() - start

    return 2 * run(1) / run(2)


def measure(runs: int = 1, config: str = "main") -> dict:
    """`runs` trainings beside as many anchors, interleaved; medians, peaks and the targets met."""
    work = tempfile.mkdtemp(prefix="train-bench-")
    train = [PY, "-m", "tui", "train", "--config", config, "--out", str(Path(work) / "bench.npz"), "--force",
             "--json"]
    anchor, done, cores, report = [], [], [], None
    for _ in range(runs):
        anchor.append(timed([PY, "-c", ANCHOR], work)[:2])
        cores.append(two_at_once(work))
        seconds, peak, stdout = timed(train, ROOT)
        done.append((seconds, peak))
        report = stdout
    result = {
        "config": config, "runs": runs,
        "train_s": statistics.median(s for s, _ in done), "train_peak_mib": max(p for _, p in done),
        "anchor_s": statistics.median(s for s, _ in anchor), "anchor_peak_mib": max(p for _, p in anchor),
        "train_runs_s": [round(s, 2) for s, _ in done], "cores": statistics.median(cores),
    }
    result["ratio"] = result["train_s"] / result["anchor_s"]
    try:  # the trainer's own summary, the last JSON object it printed
        result["trainer"] = json.loads(report[report.rindex("\n{") + 1:] if "\n{" in report else report)
    except ValueError:
        result["trainer"] = None
    if config == "main":
        result["targets_met"] = {"seconds": result["train_s"] <= TARGETS["seconds"],
                                 "peak_mib": result["train_peak_mib"] <= TARGETS["peak_mib"]}
    return result


def report(result) -> str:
    """The runs as a Markdown table."""
    main_config = result["config"] == "main"
    lines = [f"| measure | numpy anchor | xf-tour train --config {result['config']} | target |",
             "|---|---:|---:|---|",
             f"| wall time | {result['anchor_s']:.1f} s | {result['train_s']:.1f} s ({result['ratio']:.1f}x) | "
             f"{'<= 12 s' if main_config else ''} |",
             f"| peak memory | {result['anchor_peak_mib']:.0f} MiB | {result['train_peak_mib']:.0f} MiB | "
             f"{'<= 150 MiB' if main_config else ''} |",
             f"\nruns: {', '.join(f'{s} s' for s in result['train_runs_s'])}; cores given to two busy processes "
             f"(two anchors at once): {result['cores']:.2f}"]
    if "targets_met" in result:
        lines.append("\ntargets met: " + ", ".join(f"{k} {'yes' if v else 'NO'}"
                                                   for k, v in result["targets_met"].items()))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="runs of each, interleaved")
    parser.add_argument("--config", default="main", choices=("small", "main", "big"))
    parser.add_argument("--json", action="store_true")
    a = parser.parse_args()
    result = measure(a.runs, a.config)
    print(json.dumps(result, indent=2) if a.json else report(result))


if __name__ == "__main__":
    main()
