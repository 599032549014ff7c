"""Live training in the app, beside `xf-tour train` of the same config, and the keys meanwhile.

In a tmux session at 80x24, under script(1), which logs every byte the tour writes, it opens the heads
lesson on its training step and presses n and p there `--presses` times while idle: the keys' anchor. It
then presses 4 (train `big` live) and, while the run goes on, the same n and p presses. A press is timed
from the key until the tour's write that puts the step counter it brings on screen: the log is watched
for growth, and the screen read once each time it grows. (Polling the screen itself, a `tmux
capture-pane` process every few milliseconds, took enough of the two cores to slow the training by a
third and add 15 ms to every key.) Back on the training step it waits for the panel's "Finished in",
reading the screen every 50 ms: the live time runs from pressing 4 until that line is on screen. Then,
in the same run, `xf-tour train --config big` on the command line, timed with bench/train_time.py's
`timed` (wall time and peak memory).

Targets: the live run within 1.2x the command line's time; keys meanwhile at most 50 ms (the median; the
worst is reported beside the idle worst).

Run from the repo root:  .venv/bin/python bench/live_train.py [--runs 1] [--presses 10] [--json]
Needs tmux and script(1) (Debian: tmux, bsdutils).
"""

import argparse
import json
import os
import re
import shlex
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.term import PY, new_session, screen, tmux, wait_for  # noqa: E402  (after the path is set)
from bench.train_time import timed  # noqa: E402

TARGETS = {"ratio": 1.2, "key_ms": 50.0}
STEP = 7                     # the heads lesson's training step (lessons/04-heads.toml, "training")
COUNTER = r"^ 4\. .* {n}/8 "  # the title line: lesson number, title, step counter


def written(name, log, rx, timeout=10.0):
    """When the write that puts rx on screen reached the log: the log's size is watched (a stat, no
    process), and the screen read once each time it grows. None if not seen in time."""
    end, size = time.perf_counter() + timeout, os.path.getsize(log)
    while time.perf_counter() < end:
        now = os.path.getsize(log)
        if now != size:
            grew, size = time.perf_counter(), now
            time.sleep(0.001)  # tmux reads the write after script(1) logs it
            if rx.search(screen(name)):
                return grew
        time.sleep(0.0005)
    return None


def keys(name, log, presses):
    """n and p in turn, `presses` of them, each timed until the write that shows its step counter (ms)."""
    out = []
    for i in range(presses):
        key, step = ("n", STEP + 1) if i % 2 == 0 else ("p", STEP)
        sent = time.perf_counter()
        tmux("send-keys", "-t", name, key)
        seen = written(name, log, re.compile(COUNTER.format(n=step), re.M))
        if seen is None:
            raise RuntimeError(f"after {key!r}, step {step} not seen:\n{screen(name)}")
        out.append((seen - sent) * 1000)
        time.sleep(0.4)  # a learner's pace, and time for the press's last writes
    if presses % 2:  # back on the training step
        tmux("send-keys", "-t", name, "p")
        wait_for(name, re.compile(COUNTER.format(n=STEP), re.M))
    return out


def live_once(presses) -> dict:
    name = "live-" + uuid.uuid4().hex[:8]
    state = tempfile.mkdtemp(prefix="live-state-")
    log = os.path.join(state, "screen.log")
    cmd = [PY, "-m", "tui", "--lang", "en", "--lesson", "heads"]
    inner = (f"env -u PYTHONDONTWRITEBYTECODE XF_TOUR_STATE_DIR={shlex.quote(state)} TEXTUAL_ANIMATIONS=none "
             f"LANG=C.UTF-8 script -qfc {shlex.quote(shlex.join(cmd))} {shlex.quote(log)}")
    new_session(name, inner)
    try:
        if wait_for(name, re.compile(COUNTER.format(n=1), re.M)) is None:
            raise RuntimeError(f"the tour did not open:\n{screen(name)}")
        for n in range(2, STEP + 1):
            tmux("send-keys", "-t", name, "n")
            if wait_for(name, re.compile(COUNTER.format(n=n), re.M)) is None:
                raise RuntimeError(f"step {n} not seen:\n{screen(name)}")
        time.sleep(1.0)  # the step's figures settle
        idle = keys(name, log, presses)
        started = time.perf_counter()
        tmux("send-keys", "-t", name, "4")
        if wait_for(name, re.compile(r"Training big"), timeout=10) is None:
            raise RuntimeError(f"live training did not start:\n{screen(name)}")
        busy = keys(name, log, presses)
        done, end = None, time.perf_counter() + 300
        while done is None and time.perf_counter() < end:
            time.sleep(0.05)
            done = time.perf_counter() if "Finished in" in screen(name) else None
        if done is None:
            raise RuntimeError(f"live training did not finish:\n{screen(name)}")
        return {"live_s": done - started, "idle_ms": idle, "busy_ms": busy}
    finally:
        tmux("send-keys", "-t", name, "q")
        time.sleep(0.3)
        tmux("kill-session", "-t", name)


def measure(runs: int = 1, presses: int = 10) -> dict:
    """`runs` live runs, each followed by a command-line run; medians, worsts and the targets met."""
    work = tempfile.mkdtemp(prefix="live-bench-")
    train = [PY, "-m", "tui", "train", "--config", "big", "--out", str(Path(work) / "big.npz"), "--force", "--json"]
    live, cli = [], []
    for _ in range(runs):  # interleaved, so both see the same machine load
        live.append(live_once(presses))
        cli.append(timed(train, ROOT)[:2])
    idle = [ms for r in live for ms in r["idle_ms"]]
    busy = [ms for r in live for ms in r["busy_ms"]]
    result = {
        "runs": runs,
        "live_s": statistics.median(r["live_s"] for r in live), "live_runs_s": [round(r["live_s"], 2) for r in live],
        "cli_s": statistics.median(s for s, _ in cli), "cli_runs_s": [round(s, 2) for s, _ in cli],
        "cli_peak_mib": max(p for _, p in cli),
        "idle_key_ms_median": statistics.median(idle), "idle_key_ms_max": max(idle),
        "busy_key_ms_median": statistics.median(busy), "busy_key_ms_max": max(busy),
        "busy_over_50": sum(ms > TARGETS["key_ms"] for ms in busy), "presses": len(busy),
    }
    result["ratio"] = result["live_s"] / result["cli_s"]
    result["targets_met"] = {"ratio": result["ratio"] <= TARGETS["ratio"],
                             "key_ms": result["busy_key_ms_median"] <= TARGETS["key_ms"]}
    return result


def report(r) -> str:
    """The runs as a Markdown table."""
    return "\n".join([
        "| measure | anchor | live training in the app | target |",
        "|---|---:|---:|---|",
        f"| `big`, 750 steps | {r['cli_s']:.1f} s (`xf-tour train --config big`) | {r['live_s']:.1f} s "
        f"({r['ratio']:.2f}x) | <= 1.2x the command line |",
        f"| n/p keys, median (max) | {r['idle_key_ms_median']:.0f} ms ({r['idle_key_ms_max']:.0f}), idle | "
        f"{r['busy_key_ms_median']:.0f} ms ({r['busy_key_ms_max']:.0f}) | <= 50 ms |",
        f"\nlive runs: {', '.join(f'{s} s' for s in r['live_runs_s'])}; command-line runs: "
        f"{', '.join(f'{s} s' for s in r['cli_runs_s'])}, peak {r['cli_peak_mib']:.0f} MiB; "
        f"{r['busy_over_50']} of {r['presses']} keys over 50 ms while training",
        "\ntargets met: " + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in r["targets_met"].items())])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="live runs, each followed by a command-line run")
    parser.add_argument("--presses", type=int, default=10, help="n/p presses idle, and again while it trains")
    parser.add_argument("--json", action="store_true")
    a = parser.parse_args()
    result = measure(a.runs, a.presses)
    print(json.dumps(result, indent=2) if a.json else report(result))


if __name__ == "__main__":
    main()
