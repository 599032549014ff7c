"""The real model in the app, as a classroom meets it: lesson 12 in tmux at 80x24, one tour and ten at once, with the
account's shared float32 weights (engine/weights_cache.py) and without them (XF_TOUR_WEIGHTS_CACHE=off: each tour
dequantizes its own copy, as before).

A state folder of its own, the account's: the model is put in models/ as `xf-tour model get` leaves it, and `model
get` is run once there (it finds the file, checks it, and writes the shared copy). Every tour is `xf-tour --lesson
real --learner NAME`, a new learner each time (a new progress folder, the account's models/), under bench/maxrss.py,
with XF_TOUR_QUESTIONS=off (the keys act without asking). It measures:
  first screen  from starting the session until the real model's count (134,515,008) is on screen: warm (the
                shared copy there, as after `model get`), cold (no copy yet: this tour writes it), and off
  new prompt    on the next-token step, key 1 (a new prompt: a forward pass of up to 15 tokens) until the new
                prompt's most likely token is on screen, for each of the three prompts after the first
  tokens/s      the figure the generate step measures and shows (16 tokens with the KV cache)
  peak RSS      of one tour's process tree, through every step above (bench/maxrss.py)
  10 tours      ten tours started at once, each on the next-token step: the sum of their PSS
                (/proc/PID/smaps_rollup, each tour's process tree: shared pages split among their users), and key 1
                pressed in each in turn (the others idle) and in all ten at once, until each shows its new prompt's
                top token; with the shared copy and with it off
Beside them, in the same run, the anchor: the bare Textual app of bench/bare_app.py, its first frame and key 1,
and ten of it at once, their PSS summed.

Run from the repo root:  .venv/bin/python bench/real_app.py [--runs 3] [--tours 10] [--json]
It takes about 3 minutes; every session it starts is killed at the end. Needs tmux.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for the bench package, run as a script

from bench.classroom_load import children  # noqa: E402  (after the path is set)
from bench.smollm import smollm_path  # noqa: E402
from bench.term import PY, new_session, screen, tmux  # noqa: E402

TOUR = str(ROOT / ".venv" / "bin" / "xf-tour")
COUNT = r"134,515,008"  # the real-params step's count: the model is loaded
PROMPTS = [r"leads at 0\.462", r"leads at 0\.246", r"leads at 0\.064"]  # key 1's prompts after the first: each top's p
FIRST = r"0\.773"  # " Paris" after "The capital of France is"
RATE = re.compile(r"ran\s+([\d,.]+),")  # the generate step: "it ran 28.1, 90% of that"
TIMEOUT_S = 180.0
TARGETS = {"first_screen_s": 2.5, "prompt_ms": 300.0, "tokens_per_s": 20.0, "peak_mib": 800.0}


def wait_for(name, rx, timeout=TIMEOUT_S):
    """Poll the pane until rx matches; the time it was first seen (perf_counter)."""
    rx, end = re.compile(rx, re.M), time.perf_counter() + timeout
    while time.perf_counter() < end:
        if rx.search(screen(name)):
            return time.perf_counter()
        time.sleep(0.005)
    raise RuntimeError(f"{rx.pattern!r} not seen in {name} within {timeout:.0f} s:\n{screen(name)}")


def press(name, key, rx) -> float:
    """Send a key; seconds until rx is on screen."""
    start = time.perf_counter()
    tmux("send-keys", "-t", name, key)
    return wait_for(name, rx) - start


def start(env, cmd, rss=None) -> tuple[str, float]:
    """A detached 80x24 session running cmd (under maxrss.py, writing to rss, if given); its name and start time."""
    name = "real-app-" + uuid.uuid4().hex[:8]
    wrapped = cmd if rss is None else [PY, str(ROOT / "bench" / "maxrss.py"), rss, *cmd]
    inner = "env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " " + shlex.join(wrapped)
    t0 = time.perf_counter()
    new_session(name, inner)
    return name, t0


def pss_mib(name) -> float:
    """The PSS of the session's process tree (its pane's shell, and all below it), MiB."""
    pane = int(tmux("display-message", "-p", "-t", name, "#{pane_pid}").stdout)
    total = 0
    for pid in [pane, *children(pane)]:
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        total += next(int(line.split()[1]) for line in text.splitlines() if line.startswith("Pss:"))
    return total / 1024


def stop(name, rss=None, timeout=20.0):
    """Quit with q, wait for the session to end; the peak RSS maxrss.py wrote, MiB (None without one)."""
    tmux("send-keys", "-t", name, "q")
    end = time.perf_counter() + timeout
    while tmux("has-session", "-t", name).returncode == 0 and time.perf_counter() < end:
        time.sleep(0.05)
    tmux("kill-session", "-t", name)
    if rss is None:
        return None
    try:
        for _ in range(100):  # maxrss.py writes as the tour exits
            if os.path.exists(rss) and os.path.getsize(rss):
                return float(Path(rss).read_text())
            time.sleep(0.05)
        return None
    finally:
        Path(rss).unlink(missing_ok=True)


def tour_cmd(n):
    return [TOUR, "--lesson", "real", "--learner", f"bench{n}"]


def one_tour(env, n, walk=True) -> dict:
    """One tour: first screen; then, with walk, the next-token step, three new prompts, the generate step's
    tokens/s, its PSS there; its peak RSS."""
    with tempfile.NamedTemporaryFile(prefix="real-app-", suffix=".rss", delete=False) as f:
        rss = f.name
    name, t0 = start(env, tour_cmd(n), rss)
    out = {}
    try:
        out["first_screen_s"] = wait_for(name, COUNT) - t0
        if walk:
            tmux("send-keys", "-t", name, "Right", "Right")
            wait_for(name, FIRST)
            out["prompt_ms"] = [1e3 * press(name, "1", rx) for rx in PROMPTS]
            tmux("send-keys", "-t", name, "Right", "Right", "Right", "Right", "Right")
            wait_for(name, RATE.pattern)
            out["tokens_per_s"] = float(RATE.search(screen(name)).group(1).replace(",", ""))
            out["pss_mib"] = pss_mib(name)
    finally:
        out["peak_mib"] = stop(name, rss)
    return out


def classroom(env, tours, first) -> dict:
    """`tours` tours started at once, each taken to the next-token step; their PSS summed; key 1 in each in turn,
    then in all at once."""
    names = [start(env, tour_cmd(100 + i))[0] for i in range(tours)]
    try:
        for name in names:
            wait_for(name, COUNT)
            tmux("send-keys", "-t", name, "Right", "Right")
        for name in names:
            wait_for(name, first)
        out = {"pss_mib": sum(pss_mib(name) for name in names)}
        out["key_ms"] = [1e3 * press(name, "1", PROMPTS[0]) for name in names]
        t0 = time.perf_counter()
        for name in names:
            tmux("send-keys", "-t", name, "1")
        out["all_at_once_ms"] = [1e3 * (wait_for(name, PROMPTS[1]) - t0) for name in names]
        return out
    finally:
        for name in names:
            stop(name)


def bare(env, tours) -> dict:
    """The anchor: bench/bare_app.py's first frame and key 1, and `tours` of it at once, their PSS summed."""
    cmd = [PY, str(ROOT / "bench" / "bare_app.py")]
    name, t0 = start(env, cmd)
    try:
        out = {"first_screen_s": wait_for(name, r"d7") - t0, "key_ms": 1e3 * press(name, "1", r"^\s*n\s+1\b")}
    finally:
        stop(name)
    names = [start(env, cmd)[0] for _ in range(tours)]
    try:
        for name in names:
            wait_for(name, r"d7")
        out["pss_mib"] = sum(pss_mib(name) for name in names)
    finally:
        for name in names:
            stop(name)
    return out


def measure(runs, tours) -> dict:
    state = Path(tempfile.mkdtemp(prefix="real-app-state-"))
    try:
        (state / "models").mkdir()
        model = state / "models" / smollm_path().name
        shutil.copyfile(smollm_path(), model)  # as `model get` leaves it
        env = {"XF_TOUR_STATE_DIR": str(state), "XF_TOUR_QUESTIONS": "off", "PATH": os.environ["PATH"]}
        t = time.perf_counter()
        subprocess.run([TOUR, "model", "get"], env=env, check=True, capture_output=True)
        result = {"model_get_s": time.perf_counter() - t, "anchor": bare(env, tours)}
        cache = model.with_name(model.name + ".f32")
        one_tour(env, 0, walk=False)  # warm-up: the .pyc files, the lessons parsed
        result["warm"] = [one_tour(env, 1 + i) for i in range(runs)]
        cold = []
        for i in range(runs):
            cache.unlink()
            cold.append(one_tour(env, 10 + i, walk=False))
        result["cold"] = cold
        result["off"] = [one_tour({**env, "XF_TOUR_WEIGHTS_CACHE": "off"}, 20 + i) for i in range(runs)]
        result["tours"], result["cache_mib"] = tours, cache.stat().st_size / 2**20
        result["shared"] = classroom(env, tours, FIRST)
        result["private"] = classroom({**env, "XF_TOUR_WEIGHTS_CACHE": "off"}, tours, FIRST)
        return result
    finally:
        shutil.rmtree(state, ignore_errors=True)


def med(runs, key):
    values = [v for r in runs for v in (r[key] if isinstance(r[key], list) else [r[key]]) if v is not None]
    return statistics.median(values), min(values), max(values)


def report(r) -> str:
    def fig(runs, key, unit, scale=1.0, fmt=".2f"):
        m, lo, hi = med(runs, key)
        return f"{m * scale:{fmt}} {unit} ({lo * scale:{fmt}}-{hi * scale:{fmt}})"

    a, s, p, n = r["anchor"], r["shared"], r["private"], r["tours"]
    lines = [
        "| what (median, range) | anchor: bare Textual app | xf-tour, shared copy | xf-tour, off | target |",
        "|---|---:|---:|---:|---|",
        f"| first real screen, warm (after `model get`) | {a['first_screen_s']:.2f} s | "
        f"{fig(r['warm'], 'first_screen_s', 's')} | {fig(r['off'], 'first_screen_s', 's')} | ≤ 2.5 s |",
        f"| first real screen, cold (no copy yet: written now) | | {fig(r['cold'], 'first_screen_s', 's')} | | |",
        f"| new prompt redrawn (key 1) | {a['key_ms']:.0f} ms | {fig(r['warm'], 'prompt_ms', 'ms', fmt='.0f')} | "
        f"{fig(r['off'], 'prompt_ms', 'ms', fmt='.0f')} | ≤ 300 ms |",
        f"| tokens per second (generate step) | | {fig(r['warm'], 'tokens_per_s', '', fmt='.1f')} | "
        f"{fig(r['off'], 'tokens_per_s', '', fmt='.1f')} | ≥ 20 |",
        f"| one tour: peak RSS, whole walk | | {fig(r['warm'], 'peak_mib', 'MiB', fmt='.0f')} | "
        f"{fig(r['off'], 'peak_mib', 'MiB', fmt='.0f')} | ≤ 800 MiB |",
        f"| one tour: peak RSS, cold (writing the copy) | | {fig(r['cold'], 'peak_mib', 'MiB', fmt='.0f')} | | |",
        f"| one tour: PSS on the generate step | | {fig(r['warm'], 'pss_mib', 'MiB', fmt='.0f')} | "
        f"{fig(r['off'], 'pss_mib', 'MiB', fmt='.0f')} | |",
        f"| {n} tours on the next-token step: PSS summed | {a['pss_mib']:.0f} MiB | {s['pss_mib']:,.0f} MiB | "
        f"{p['pss_mib']:,.0f} MiB | shared |",
        f"| {n} tours: key 1 in each in turn | | {fig([s], 'key_ms', 'ms', fmt='.0f')} | "
        f"{fig([p], 'key_ms', 'ms', fmt='.0f')} | |",
        f"| {n} tours: key 1 in all at once, until each redraws | | {fig([s], 'all_at_once_ms', 'ms', fmt='.0f')} | "
        f"{fig([p], 'all_at_once_ms', 'ms', fmt='.0f')} | |",
        "",
        f"`model get` with the model in place (check it, write the shared copy): {r['model_get_s']:.1f} s; the copy: "
        f"{r['cache_mib']:.0f} MiB.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tours", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.runs, args.tours)
    print(json.dumps(result, indent=1) if args.json else report(result))


if __name__ == "__main__":
    main()
