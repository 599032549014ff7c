"""Every speed figure the README quotes, in one run, each beside its anchor measured in the same run.

One after the other, on an otherwise idle machine:
  - `xf-tour train --config main` beside a numpy loop (bench/train_time.py, --train-runs);
  - live training in the app beside `xf-tour train --config big`, and n/p keys meanwhile beside the same
    keys idle (bench/live_train.py, --live-runs);
  - `xf-tour print VIEW` for every view beside `python -c "import numpy, rich"` (bench/print_time.py,
    --print-runs);
  - the first frame, experiment keys, bytes per key and peak memory beside a bare Textual app, and the
    first frame with `--lessons DIR` beside without (bench/tui_bench.py, --runs);
  - the whole tour, every experiment key of every step, in English and Chinese, beside the bare app's
    key (bench/tour_walk.py).
It prints one table with a row per target, then each part's own report. About 15 minutes here.

Run from the repo root:  .venv/bin/python bench/all.py [--json FILE]
Needs tmux and script(1) (Debian: tmux, bsdutils).
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import live_train, print_time, tour_walk, train_time, tui_bench  # noqa: E402  (after the path is set)
from bench.term import TARGETS  # noqa: E402


def measure(a) -> dict:
    out, started = {}, time.perf_counter()
    parts = [("train", lambda: train_time.measure(a.train_runs, "main")),
             ("live", lambda: live_train.measure(a.live_runs, a.presses)),
             ("print", lambda: print_time.bench(a.print_runs)),
             ("tui", lambda: tui_bench.bench(a.runs)),
             ("walk", lambda: tour_walk.walk_all(["en", "zh"], a.lesson))]
    for name, run in parts:
        print(f"[{time.perf_counter() - started:5.0f} s] {name}...", file=sys.stderr, flush=True)
        out[name] = run()
    out["seconds"] = time.perf_counter() - started
    return out


def yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def table(r) -> str:
    """One row per target of the speed work: what, its anchor, the tour's figure, the target, met."""
    tr, lv, pr, tb, wk = r["train"], r["live"], r["print"], r["tui"], r["walk"]
    bare, tour = tb["bare"], tb["tour"]
    exp, anchor_key = wk["kinds"]["experiment"], wk["kinds"]["bare app, key 1"]
    worst_bytes = exp["bytes_worst"]
    pos = next(row for row in pr["rows"] if row["command"] == "xf-tour print positional")
    rows = [
        ("`xf-tour train --config main`, 2,000 steps", f"numpy loop {tr['anchor_s']:.1f} s",
         f"{tr['train_s']:.1f} s, {tr['train_peak_mib']:.0f} MiB",
         f"<= {train_time.TARGETS['seconds']:.0f} s, <= {train_time.TARGETS['peak_mib']:.0f} MiB",
         tr["targets_met"]["seconds"] and tr["targets_met"]["peak_mib"]),
        ("live training in the app (heads, key 4, `big`)", f"`xf-tour train --config big` {lv['cli_s']:.1f} s",
         f"{lv['live_s']:.1f} s ({lv['ratio']:.2f}x)", f"<= {live_train.TARGETS['ratio']}x",
         lv["targets_met"]["ratio"]),
        ("n/p keys while it trains, median (max)", f"idle {lv['idle_key_ms_median']:.0f} ms "
         f"({lv['idle_key_ms_max']:.0f})", f"{lv['busy_key_ms_median']:.0f} ms ({lv['busy_key_ms_max']:.0f})",
         f"<= {live_train.TARGETS['key_ms']:.0f} ms", lv["targets_met"]["key_ms"]),
        ("first frame, 80x24", f"bare app {bare['first_frame_ms']:.0f} ms",
         f"{tour['first_frame_ms']:.0f} ms ({tb['first_frame_ratio']:.2f}x)",
         f"<= {TARGETS['first_frame_ratio']:.2f}x", tb["targets_met"]["first_frame_ratio"]),
        ("experiment key, median (sessions)", f"bare app's key {bare['key_ms_median']:.0f} ms",
         f"{tour['key_ms_median']:.0f} ms ({tb['key_ratio']:.2f}x)", f"<= {TARGETS['key_ratio']:.2f}x",
         tb["targets_met"]["key_ratio"]),
        ("experiment key, median (whole-tour walk, en and zh)", f"bare app's key {anchor_key['ms_median']:.0f} ms",
         f"{exp['ms_median']:.0f} ms ({wk['experiment_ms_ratio']:.2f}x)", f"<= {TARGETS['key_ratio']:.2f}x",
         wk["experiment_ms_ratio"] <= TARGETS["key_ratio"]),
        ("bytes of one experiment key, worst of every step", f"bare app's key {bare['key_bytes_max']:,}",
         f"{worst_bytes['value']:,} ({worst_bytes['lang']}, {worst_bytes['lesson']}/{worst_bytes['step']}, "
         f"key {worst_bytes['key']})", f"<= {TARGETS['key_bytes']:,}", not wk["over_bytes_target"]),
        ("`xf-tour print positional`", f"anchor {pr['anchor_ms']:.0f} ms",
         f"{pos['median_ms']:.0f} ms ({pos['ratio']:.2f}x)", f"<= {pos['target']}x", pos["ratio"] <= pos["target"]),
        ("`xf-tour print VIEW`, the worst view", f"anchor {pr['anchor_ms']:.0f} ms",
         f"{pr['worst_view'].removeprefix('xf-tour print ')} {pr['worst_ratio']:.2f}x",
         f"<= {print_time.TARGETS['view']}x each", pr["targets_met"]),
    ]
    for kind, v in tb["lessons_dir"].items():
        rows.append((f"first frame with `--lessons DIR`, {kind} state folder", f"without {v['without_ms']:.0f} ms",
                     f"{v['with_ms']:.0f} ms ({v['ratio']:.2f}x)", f"<= {TARGETS['lessons_dir_ratio']:.1f}x",
                     v["ratio"] <= TARGETS["lessons_dir_ratio"]))
    rows.append(("peak memory, the tour", f"bare app {bare['peak_mib']:.0f} MiB", f"{tour['peak_mib']:.0f} MiB",
                 f"<= {TARGETS['peak_mib']:.0f} MiB", tb["targets_met"]["peak_mib"]))
    lines = ["| what | anchor, same run | xf-tour | target | met |", "|---|---|---|---|---|"]
    lines += [f"| {what} | {anchor} | {now} | {target} | {yes(ok)} |" for what, anchor, now, target, ok in rows]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-runs", type=int, default=3)
    parser.add_argument("--live-runs", type=int, default=2)
    parser.add_argument("--presses", type=int, default=10, help="n/p presses per live run, idle and training")
    parser.add_argument("--print-runs", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5, help="terminal sessions per app")
    parser.add_argument("--lesson", action="append", help="walk only this lesson (repeatable; a quick check "
                                                          "of the script, not the benchmark)")
    parser.add_argument("--json", metavar="FILE", help="also write every figure here")
    a = parser.parse_args()
    r = measure(a)
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=2, ensure_ascii=False))
    walked = "the whole tour" if not a.lesson else "the walk of " + ", ".join(a.lesson) + " only"
    print(f"every target, one run of {r['seconds'] / 60:.0f} min ({walked})\n")
    print(table(r))
    print("\n## train\n\n" + train_time.report(r["train"]))
    print("\n## live training\n\n" + live_train.report(r["live"]))
    print("\n## print\n\n" + print_time.report(r["print"]))
    print("\n## terminal sessions\n\n" + tui_bench.report(r["tui"]))
    print("\n## whole tour\n\n" + tour_walk.report(r["walk"]))


if __name__ == "__main__":
    main()
