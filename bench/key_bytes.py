"""Bytes per key for every experiment key of every step, in a real terminal: what an SSH link carries.

For each lesson it starts a tmux session at 80x24 running the tour under script(1), which logs every
byte the tour writes. On each step it presses every experiment key that works there through all its
values, then 0 and n, as a learner walking the tour would; after each key it waits until the tour
has stopped writing and counts the bytes. It prints the largest count, and where it was.

Run from the repo root:  .venv/bin/python bench/key_bytes.py [--lang en] [--json]
Needs tmux and script(1) (Debian: tmux, bsdutils).
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.tui_bench import PY, TARGETS, screen, tmux, wait_idle  # noqa: E402  (after the path is set)
from lessons.loader import load_lessons  # noqa: E402
from lessons.loader import applies  # noqa: E402


def walk(lesson, lang: str, state: str) -> list[dict]:
    """Every experiment press on every step of one lesson: its bytes."""
    name = "keys-" + uuid.uuid4().hex[:8]
    log = tempfile.NamedTemporaryFile(prefix="keys-", suffix=".log", delete=False).name
    cmd = [PY, "-m", "tui", "--lang", lang, "--lesson", lesson.id]
    inner = (f"env -u PYTHONDONTWRITEBYTECODE XF_TOUR_STATE_DIR={shlex.quote(state)} TEXTUAL_ANIMATIONS=none "
             f"LANG=C.UTF-8 script -qfc {shlex.quote(shlex.join(cmd))} {shlex.quote(log)}")
    tmux("new-session", "-d", "-s", name, "-x", "80", "-y", "24", inner)
    out = []
    try:
        time.sleep(1.0)
        before = wait_idle(log, quiet=0.4)
        for i, step in enumerate(lesson.steps):
            for x in lesson.experiments:
                if x.action is None and applies(x, step):
                    for n in range(len(x.values)):
                        tmux("send-keys", "-t", name, x.key)
                        after = wait_idle(log, quiet=0.3 if step.view != "dsweep" else 1.5)
                        out.append({"lesson": lesson.id, "step": step.id, "key": x.key, "press": n + 1,
                                    "bytes": after - before})
                        before = after
            for key in ("0", "n"):
                tmux("send-keys", "-t", name, key)
                before = wait_idle(log, quiet=0.4)
        if "Traceback" in screen(name):
            raise RuntimeError(screen(name))
    finally:
        tmux("send-keys", "-t", name, "q")
        time.sleep(0.3)
        tmux("kill-session", "-t", name)
        Path(log).unlink(missing_ok=True)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", action="append", help="zh or en (default: both)")
    parser.add_argument("--json", action="store_true")
    a = parser.parse_args()
    lessons, _ = load_lessons()
    state = tempfile.mkdtemp(prefix="keys-state-")
    presses = [p | {"lang": lang} for lang in a.lang or ["en", "zh"] for lesson in lessons
               for p in walk(lesson, lang, state)]
    worst = max(presses, key=lambda p: p["bytes"])
    result = {"presses": len(presses), "median": statistics.median(p["bytes"] for p in presses),
              "max": worst["bytes"], "worst": worst, "target": TARGETS["key_bytes"],
              "over": [p for p in presses if p["bytes"] > TARGETS["key_bytes"]]}
    if a.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return
    print(f"{result['presses']} experiment presses at 80x24: median {result['median']:,.0f} bytes, "
          f"max {worst['bytes']:,} ({worst['lang']} {worst['lesson']}/{worst['step']}, key {worst['key']}); "
          f"target <= {TARGETS['key_bytes']:,}; over it: {len(result['over'])}")


if __name__ == "__main__":
    main()
