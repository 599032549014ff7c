"""How training's two parts balance: tiny.train with helper_process's cut chosen by training_pass.work's counts
(now), and by the microsecond costs a least-squares fit on one machine gave before 2026-12-07 (7.6 per row, 1.6
per position, 0.16 per score, 250 for the handoff), in alternating runs of one process.

Run from the repo root:  OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/balance_parts.py [MAIN_RUNS] [BIG_RUNS]
(one BLAS thread, as the command line trains)."""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import helper_process, tiny  # noqa: E402  (after the path is set)

COUNTED = tiny.part_work
FITTED = lambda cfg: helper_process.Work(7.6, 1.6, 0.16, 250.0)  # noqa: E731  (the constants before)


def main():
    runs = {"main": int(sys.argv[1]) if len(sys.argv) > 1 else 5, "big": int(sys.argv[2]) if len(sys.argv) > 2 else 4}
    for name, n in runs.items():
        cfg = tiny.CONFIGS[name]
        times = {"fitted": [], "counted": []}
        tiny.train(cfg, 0, n_eval=200, probe=False)  # warm-up
        for _ in range(n):
            for label, work in (("fitted", FITTED), ("counted", COUNTED)):
                tiny.part_work = work
                start = time.perf_counter()
                tiny.train(cfg, 0, n_eval=200, probe=False)
                times[label].append(time.perf_counter() - start)
        tiny.part_work = COUNTED
        for label, ts in times.items():
            print(f"{name:5s} {label:8s} median {statistics.median(ts):.2f} s, fastest {min(ts):.2f} s "
                  f"({', '.join(f'{t:.2f}' for t in ts)})", flush=True)


if __name__ == "__main__":
    main()
