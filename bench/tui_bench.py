"""Benchmark the tour in a real terminal, beside a bare Textual app, in the same run.

For each app it starts a tmux session at 80x24 running the app under script(1), which logs every
byte the app writes, and measures:
  - first frame: from starting the session until the first full screen is seen;
  - key latency: from sending an experiment key until its result is seen on screen;
  - bytes per key: what the app wrote for that key (what an SSH link must carry);
  - peak memory: the largest resident set of the app and any process it starts (bench/maxrss.py).
The bare app is a Textual app with one DataTable and numpy imported (bench/bare_app.py).

The tour's first frame counts only once the step's table is on screen. Both apps run as an installed
app does, with Python's bytecode cache on (PYTHONDONTWRITEBYTECODE is removed), after one warm-up run. The
tour's state folder is shared by its runs, as a learner's is: a start finds the lessons parsed, and the
results of the step it opens on if a start before opened or quit there (lessons.cache.Results).

Run from the repo root:  .venv/bin/python bench/tui_bench.py [--runs 5] [--presses 12] [--walk] [--startup] [--json]
--walk adds the whole tour: every step of every lesson, every experiment key (bench/tour_walk.py);
--startup adds what start-up imports and what mounts before the first frame (bench/startup.py).
Every run also starts the tour with `--lessons DIR`, a copy of the shipped lessons, beside the same start
without it: once with the state folder the other runs share, and once with a new, empty one each (nothing
parsed or checked yet: a learner's first start with their own folder).
Needs tmux and script(1) (Debian: tmux, bsdutils).
"""

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for the bench package, run as a script

from bench.term import PY, TARGETS, new_session, screen, tmux, wait_for, wait_idle  # noqa: E402  (after the path is set)


def run_once(cmd, ready, keys, env):
    """One session: first frame, then each (key, expected regex); then quit and read peak memory."""
    name = "bench-" + uuid.uuid4().hex[:8]
    log = tempfile.NamedTemporaryFile(prefix="bench-", suffix=".log", delete=False).name
    rss = log + ".rss"
    wrapped = [PY, str(ROOT / "bench" / "maxrss.py"), rss, *cmd]
    # As an installed app runs: bytecode caching on, whatever the calling shell says.
    inner = "env -u PYTHONDONTWRITEBYTECODE " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + \
        " script -qfc " + shlex.quote(shlex.join(wrapped)) + " " + shlex.quote(log)
    out = {"keys": []}
    t0 = time.perf_counter()
    new_session(name, inner)
    try:
        seen = wait_for(name, re.compile(ready, re.M))
        if seen is None:
            raise RuntimeError(f"first frame of {cmd} not seen:\n{screen(name)}")
        out["first_frame_s"] = seen - t0
        before = wait_idle(log)
        for key, expect in keys:
            k0 = time.perf_counter()
            tmux("send-keys", "-t", name, key)
            seen = wait_for(name, re.compile(expect, re.M))
            if seen is None:
                raise RuntimeError(f"after {key!r}, /{expect}/ not seen:\n{screen(name)}")
            after = wait_idle(log)
            out["keys"].append({"key": key, "latency_s": seen - k0, "bytes": after - before})
            before = after
        tmux("send-keys", "-t", name, "q")
        end = time.perf_counter() + 10
        while time.perf_counter() < end and not (os.path.exists(rss) and os.path.getsize(rss)):
            time.sleep(0.05)
        out["peak_mib"] = float(open(rss).read()) if os.path.exists(rss) else float("nan")
    finally:
        tmux("kill-session", "-t", name)
        for path in (log, rss):
            if os.path.exists(path):
                os.unlink(path)
    return out


def tour_keys(presses):
    """Experiment key 1 in three lessons, each press checked on screen by its new setting in the footer."""
    cycles = {
        "positional": ["base=500000", "base=100", "base=10000"],
        "attention": ["d=64", "d=512", "d=4096", "d=8"],
        "heads": ["heads=8", "heads=4"],
    }
    plans = {}
    for lesson, cycle in cycles.items():
        plans[lesson] = [("1", rf"^ 1 {cycle[i % len(cycle)]}\s") for i in range(presses)]
    return plans


def lessons_dir(runs, env):
    """First frame with `--lessons DIR` (a copy of the shipped lessons) beside the same start without it,
    interleaved, `runs` of each: with the shared state folder ("shared"), and with a new, empty one for
    every start ("new")."""
    copy = Path(tempfile.mkdtemp(prefix="bench-lessons-")) / "lessons"
    shutil.copytree(ROOT / "lessons", copy, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    base = [PY, "-m", "tui", "--lang", "en", "--lesson", "positional"]
    out = {}
    for kind in ("shared", "new"):
        with_, without = [], []
        for _ in range(runs):
            for cmd, into in ((base, without), (base + ["--lessons", str(copy)], with_)):
                run_env = (env if kind == "shared"
                           else {**env, "XF_TOUR_STATE_DIR": tempfile.mkdtemp(prefix="bench-state-")})
                into.append(run_once(cmd, r"0\.841", [], run_env)["first_frame_s"] * 1000)
        out[kind] = {"without_ms": statistics.median(without), "with_ms": statistics.median(with_)}
        out[kind]["ratio"] = out[kind]["with_ms"] / out[kind]["without_ms"]
    return out


def summarise(runs):
    keys = [k for r in runs for k in r["keys"]]
    return {
        "first_frame_ms": 1000 * statistics.median(r["first_frame_s"] for r in runs),
        "key_ms_median": 1000 * statistics.median(k["latency_s"] for k in keys) if keys else None,
        "key_ms_max": 1000 * max(k["latency_s"] for k in keys) if keys else None,
        "key_bytes_median": statistics.median(k["bytes"] for k in keys) if keys else None,
        "key_bytes_max": max(k["bytes"] for k in keys) if keys else None,
        "peak_mib": max(r["peak_mib"] for r in runs),
        "runs": len(runs),
        "keys": len(keys),
    }


def bench(runs: int = 5, presses: int = 12) -> dict:
    """Both apps, `runs` sessions each, interleaved; then the --lessons DIR starts; the targets met."""
    state = tempfile.mkdtemp(prefix="bench-state-")
    # the keys act at once: a lesson's question before a key (tui/quiz.py) would wait for its answer
    env = {"XF_TOUR_STATE_DIR": state, "LANG": "C.UTF-8", "XF_TOUR_QUESTIONS": "off"}
    bare_keys = [("1", rf"^\s*n\s+{i + 1}\b") for i in range(presses)]
    bare, tour = [], []
    plans = tour_keys(presses)
    run_once([PY, str(ROOT / "bench" / "bare_app.py")], r"d7", [], env)  # warm-up: writes the .pyc files
    run_once([PY, "-m", "tui", "--lang", "en", "--lesson", "positional"], r"0\.841", [], env)
    for i in range(runs):  # interleaved, so both see the same machine load
        bare.append(run_once([PY, str(ROOT / "bench" / "bare_app.py")], r"d7", bare_keys, env))
        lesson = list(plans)[i % len(plans)]
        ready = {"positional": r"\+0\.841", "attention": r"\+2\.73", "heads": r"0\.911"}[lesson]
        tour.append(run_once([PY, "-m", "tui", "--lang", "en", "--lesson", lesson], ready, plans[lesson], env))
    result = {"runs": runs, "presses": presses, "bare": summarise(bare), "tour": summarise(tour),
              "lessons_dir": lessons_dir(runs, env)}
    result["first_frame_ratio"] = result["tour"]["first_frame_ms"] / result["bare"]["first_frame_ms"]
    t = result["tour"]
    result["key_ratio"] = t["key_ms_median"] / result["bare"]["key_ms_median"]
    result["targets_met"] = {
        "first_frame_ratio": result["first_frame_ratio"] <= TARGETS["first_frame_ratio"],
        "key_ratio": result["key_ratio"] <= TARGETS["key_ratio"],
        "key_bytes": t["key_bytes_max"] <= TARGETS["key_bytes"],  # every key, not the typical one
        "peak_mib": t["peak_mib"] <= TARGETS["peak_mib"],
        "lessons_dir": all(v["ratio"] <= TARGETS["lessons_dir_ratio"] for v in result["lessons_dir"].values()),
    }
    return result


def report(result) -> str:
    """The sessions as a Markdown table."""
    b, t = result["bare"], result["tour"]
    lines = [f"80x24, {result['runs']} sessions per app, {result['presses']} experiment keys per session\n",
             "| measure | bare Textual app | xf-tour | target |",
             "|---|---:|---:|---|",
             f"| first frame | {b['first_frame_ms']:.0f} ms | {t['first_frame_ms']:.0f} ms "
             f"({result['first_frame_ratio']:.2f}x) | <= {TARGETS['first_frame_ratio']:.2f}x the bare app |",
             f"| key latency, median (max) | {b['key_ms_median']:.0f} ms ({b['key_ms_max']:.0f}) | "
             f"{t['key_ms_median']:.0f} ms ({t['key_ms_max']:.0f}); {result['key_ratio']:.2f}x | "
             f"median <= {TARGETS['key_ratio']:.2f}x the bare app's |",
             f"| bytes per key, median (max) | {b['key_bytes_median']:,.0f} ({b['key_bytes_max']:,}) | "
             f"{t['key_bytes_median']:,.0f} ({t['key_bytes_max']:,}) | every key <= 6,144 |",
             f"| peak memory | {b['peak_mib']:.1f} MiB | {t['peak_mib']:.1f} MiB | <= 90 MiB |"]
    for kind, v in result["lessons_dir"].items():
        lines.append(f"| first frame with --lessons DIR, {kind} state | {v['without_ms']:.0f} ms without | "
                     f"{v['with_ms']:.0f} ms ({v['ratio']:.2f}x) | <= {TARGETS['lessons_dir_ratio']:.1f}x without |")
    lines.append("\ntargets met: " + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in result["targets_met"].items()))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="sessions per app")
    parser.add_argument("--presses", type=int, default=12, help="experiment keys per session")
    parser.add_argument("--walk", action="store_true", help="also walk the whole tour (bench/tour_walk.py)")
    parser.add_argument("--startup", action="store_true", help="also say what start-up imports and mounts "
                                                               "(bench/startup.py)")
    parser.add_argument("--json", action="store_true")
    a = parser.parse_args()
    extra = {}
    if a.startup:
        from bench.startup import startup
        extra["startup"] = startup()
    if a.walk:
        from bench.tour_walk import walk_all
        extra["walk"] = walk_all(["en"])
    result = bench(a.runs, a.presses)
    if a.json:
        print(json.dumps(result | extra, indent=2, ensure_ascii=False))
        return
    print(report(result))
    if "walk" in extra:
        from bench.tour_walk import report as walk_report
        print("\n" + walk_report(extra["walk"]))
    if "startup" in extra:
        from bench.startup import report as startup_report
        print("\n" + startup_report(extra["startup"]))


if __name__ == "__main__":
    main()
