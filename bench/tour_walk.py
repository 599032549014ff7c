"""The whole tour in a real terminal at 80x24: every step of every lesson, every experiment key through
all its values; the latency and the bytes of each press.

For each lesson it starts a tmux session running the tour under script(1), which logs every byte the
tour writes. On each step it presses every experiment key that works there through all its values,
then 0 (back to the step's settings) and n (the next step), as a learner walking the tour would. A
press's latency runs from sending the key until the tour's last write for it (the log then stays
quiet for `quiet` seconds); its bytes are what the log grew by: what an SSH link carries. The anchor
is key 1 of the bare Textual app (bench/bare_app.py), pressed and timed the same way.

Run from the repo root:  .venv/bin/python bench/tour_walk.py [--lang en] [--lesson ID] [--json]
(bench/tui_bench.py --walk runs it too). Needs tmux and script(1) (Debian: tmux, bsdutils).
"""

import argparse
import json
import shlex
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.term import PY, TARGETS, new_session, screen, tmux, wait_quiet  # noqa: E402  (after the path is set)
from lessons.loader import applies, load_lessons  # noqa: E402
from tui.tour_state import SLOW_VIEWS  # noqa: E402  (computed in a worker: the walk waits longer for the result)


def bare(presses: int = 20, quiet: float = 0.3) -> list[dict]:
    """The anchor, measured the same way: key 1 of the bare Textual app (bench/bare_app.py), which
    rewrites every cell of its table."""
    lesson = SimpleNamespace(id="bare", steps=[SimpleNamespace(id="table", view="bare")],  # one step, key 1
                             experiments=[SimpleNamespace(action=None, key="1", values=range(presses))])
    return walk(lesson, "en", tempfile.mkdtemp(prefix="walk-state-"), quiet,
                cmd=[PY, str(ROOT / "bench" / "bare_app.py")], applies=lambda x, step: True, tail=())


def walk(lesson, lang: str, state: str, quiet: float = 0.3, cmd=None, applies=applies,
         tail=("0", "n")) -> list[dict]:
    """Every press of one lesson's walk: {lesson, step, key, press, kind, ms, bytes}."""
    name = "walk-" + uuid.uuid4().hex[:8]
    log = tempfile.NamedTemporaryFile(prefix="walk-", suffix=".log", delete=False).name
    cmd = cmd or [PY, "-m", "tui", "--lang", lang, "--lesson", lesson.id]
    # Textual draws on stderr, which is the terminal here: it is not redirected, or script(1) would miss it
    inner = (f"env -u PYTHONDONTWRITEBYTECODE XF_TOUR_STATE_DIR={shlex.quote(state)} TEXTUAL_ANIMATIONS=none "
             f"LANG=C.UTF-8 script -qfc {shlex.quote(shlex.join(cmd))} {shlex.quote(log)}")
    new_session(name, inner)
    out = []

    def press(key, step, kind, n=1, wait=quiet):
        nonlocal before
        sent = time.perf_counter()
        tmux("send-keys", "-t", name, key)
        size, last = wait_quiet(log, quiet=wait)
        out.append({"lesson": lesson.id, "step": step.id, "key": key, "press": n, "kind": kind,
                    "ms": max(0.0, last - sent) * 1000, "bytes": size - before})
        before = size

    try:
        time.sleep(1.0)
        before, _ = wait_quiet(log, quiet=0.5)
        for step in lesson.steps:
            for x in lesson.experiments:
                if x.action is None and applies(x, step):
                    for n in range(len(x.values)):
                        press(x.key, step, "experiment", n + 1, quiet if step.view not in SLOW_VIEWS else 1.5)
            for key in tail:
                press(key, step, "reset" if key == "0" else "next step")
        if "Traceback" in screen(name):
            raise RuntimeError(screen(name))
    finally:
        tmux("send-keys", "-t", name, "q")
        time.sleep(0.3)
        tmux("kill-session", "-t", name)
        Path(log).unlink(missing_ok=True)
    return out


def summary(presses: list[dict]) -> dict:
    """Median and worst latency and bytes, the worst named by lesson, step and key."""
    def worst(field):
        p = max(presses, key=lambda p: p[field])
        return {"value": p[field], "lesson": p["lesson"], "step": p["step"], "key": p["key"], "lang": p.get("lang")}

    return {"presses": len(presses),
            "ms_median": statistics.median(p["ms"] for p in presses), "ms_worst": worst("ms"),
            "bytes_median": statistics.median(p["bytes"] for p in presses), "bytes_worst": worst("bytes")}


def walk_all(langs, lesson_ids=None) -> dict:
    """The walk of every lesson (or those named), in each language; summaries by kind of press."""
    lessons, _ = load_lessons()
    state = tempfile.mkdtemp(prefix="walk-state-")
    presses = [p | {"lang": lang} for lang in langs for lesson in lessons
               if lesson_ids is None or lesson.id in lesson_ids for p in walk(lesson, lang, state)]
    steps = {(p["lang"], p["lesson"], p["step"]) for p in presses}
    kinds = {kind: summary([p for p in presses if p["kind"] == kind]) for kind in ("experiment", "next step")}
    kinds["bare app, key 1"] = summary(bare())
    over = [p for p in presses if p["kind"] == "experiment" and p["bytes"] > TARGETS["key_bytes"]]
    return {"steps": len(steps), "langs": list(langs), "kinds": kinds, "bytes_target": TARGETS["key_bytes"],
            "over_bytes_target": over, "presses": presses,
            "experiment_ms_ratio": kinds["experiment"]["ms_median"] / kinds["bare app, key 1"]["ms_median"]}


def report(result) -> str:
    """The walk as a Markdown table."""
    lines = [f"whole tour at 80x24 ({', '.join(result['langs'])}): {result['steps']} steps\n",
             "| presses | n | latency median | latency worst (where) | bytes median | bytes worst (where) |",
             "|---|---:|---:|---|---:|---|"]
    for kind, s in result["kinds"].items():
        mw, bw = s["ms_worst"], s["bytes_worst"]
        lines.append(f"| {kind} | {s['presses']} | {s['ms_median']:.0f} ms | {mw['value']:.0f} ms "
                     f"({mw['lesson']}/{mw['step']}, key {mw['key']}) | {s['bytes_median']:,.0f} | "
                     f"{bw['value']:,} ({bw['lesson']}/{bw['step']}, key {bw['key']}) |")
    lines.append(f"\nexperiment key median {result['experiment_ms_ratio']:.2f}x the bare app's key 1 "
                 f"(target <= 1.25x); experiment presses over {result['bytes_target']:,} bytes: "
                 f"{len(result['over_bytes_target'])}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", action="append", help="zh or en (default: en)")
    parser.add_argument("--lesson", action="append", help="walk only this lesson (repeatable)")
    parser.add_argument("--json", action="store_true")
    a = parser.parse_args()
    result = walk_all(a.lang or ["en"], a.lesson)
    print(json.dumps(result, indent=2, ensure_ascii=False) if a.json else report(result))


if __name__ == "__main__":
    main()
