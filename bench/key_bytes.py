"""Bytes per key for every experiment key of every step, in a real terminal: what an SSH link carries.

For each lesson it starts a tmux session at 80x24 running the tour under script(1), which logs every
byte the tour writes. On each step it presses every experiment key that works there through all its
values, then 0 and n, as a learner walking the tour would (the walk is bench/tour_walk.py); after each
key it waits until the tour has stopped writing and counts the bytes. It prints the largest count, and
where it was.

Run from the repo root:  .venv/bin/python bench/key_bytes.py [--lang en] [--json]
Needs tmux and script(1) (Debian: tmux, bsdutils).
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.term import TARGETS  # noqa: E402  (after the path is set)
from bench.tour_walk import walk_all  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", action="append", help="zh or en (default: both)")
    parser.add_argument("--json", action="store_true")
    a = parser.parse_args()
    presses = [p for p in walk_all(a.lang or ["en", "zh"])["presses"] if p["kind"] == "experiment"]
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
