"""The real model's speed and memory: load and dequantize, prefill, decode with the KV cache, peak RSS.

Each measurement runs in a fresh process (`python bench/real_model.py --one`), so that the load is a cold start
of Python and numpy and the peak RSS is one model's. Beside them, the anchor: the same matrix products for one
token alone (every layer's seven matrices and the head), the floor a decode step cannot go under.

    .venv/bin/python bench/real_model.py [--model FILE.gguf] [--runs 3] [--threads 1]

--threads sets OPENBLAS_NUM_THREADS (the xf-tour command sets 1; numpy's default is one per core).
The model is found as the tour finds it (--model, XF_TOUR_MODEL, the state folder: `xf-tour model get`).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROMPTS = (8, 32)  # prefill lengths
DECODE = 32  # tokens decoded after an 8-token prompt


def one(path: str) -> dict:
    """Everything measured in this process: load, prefill at each length, decode, the anchor, peak RSS."""
    start = time.perf_counter()
    import resource

    import numpy as np

    from engine import real_llama
    model = real_llama.load(path)
    out = {"load_s": time.perf_counter() - start}
    rng = np.random.default_rng(0)
    for n in PROMPTS:
        times = []
        for _ in range(3):
            ids = rng.integers(0, model.cfg.n_vocab, n)
            t = time.perf_counter()
            model.forward(ids)
            times.append(time.perf_counter() - t)
        out[f"prefill_{n}_ms"] = 1e3 * min(times)
    cache = {}
    model.forward(rng.integers(0, model.cfg.n_vocab, 8), cache=cache)
    steps = []
    for _ in range(DECODE):
        t = time.perf_counter()
        model.forward(rng.integers(0, model.cfg.n_vocab, 1), cache=cache)
        steps.append(time.perf_counter() - t)
    out["decode_ms"] = 1e3 * statistics.median(steps)
    w, x = model.weights, rng.standard_normal((1, model.cfg.d_model)).astype(np.float32)
    mats = [a for name, a in w.items() if a.ndim == 2 and name != "embed"]
    anchor = []
    for _ in range(DECODE):
        t = time.perf_counter()
        for a in mats:  # each its own input of the right width: only the products' cost counts
            np.ones((1, a.shape[0]), np.float32) @ a if a.shape[0] != x.shape[1] else x @ a
        anchor.append(time.perf_counter() - t)
    out["anchor_ms"] = 1e3 * statistics.median(anchor)
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a GGUF file (default: as the tour finds it)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", default="1")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.model)))
        return
    sys.path.insert(0, str(ROOT))
    from tui.model_file import find_model
    path = str(find_model(args.model))
    env = {**os.environ, "OPENBLAS_NUM_THREADS": args.threads}
    runs = [json.loads(subprocess.run([sys.executable, __file__, "--one", "--model", path], env=env, cwd=ROOT,
                                      capture_output=True, text=True, check=True).stdout) for _ in range(args.runs)]
    print(f"{path}, OPENBLAS_NUM_THREADS={args.threads}, {args.runs} runs, load average {os.getloadavg()[0]:.2f}")
    for key in runs[0]:
        values = [r[key] for r in runs]
        print(f"  {key:<16} median {statistics.median(values):8.2f}   range {min(values):.2f}-{max(values):.2f}")


if __name__ == "__main__":
    main()
