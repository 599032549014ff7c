"""How long SmolLM2-135M-Instruct's tokenizer (engine/real_tokenizer.py) takes to build and to use.

Run from the repo root with the venv's python:  .venv/bin/python bench/real_tokenizer.py [--runs N] [--json]
It uses the file the slow tests fetch (bench/smollm.py: `xf-tour model get`, the first time). Each figure is the
median of N runs in this process, each on a new Tokenizer where its cache would flatter it:
  - reading the file's metadata (the tests' plain-Python reader: 49,152 tokens, 48,900 merges, their types);
  - building the tokenizer from it (the vocabulary and merge ranks as dicts, every merge checked);
  - encoding the 29-token chat prompt of tests/fixtures/smollm2_tokens.json on a new tokenizer (every chunk
    merged afresh), and again on a warm one (every chunk cached);
  - decoding those ids, and drawing all 49,152 pieces as the view will.
Targets: build <= 300 ms; a prompt of up to 32 tokens encoded in <= 50 ms.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.smollm import smollm_path  # noqa: E402
from engine.gguf_file import GGUFFile  # noqa: E402
from engine.real_tokenizer import Tokenizer  # noqa: E402  (after the path is set)

TARGETS_MS = {"build": 300, "encode_cold": 50}


def timed(fn, runs) -> tuple[float, object]:
    """The median wall time of fn() over runs, in ms, and its last result."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), out


def measure(runs: int) -> dict:
    path = smollm_path()
    prompt = json.loads((ROOT / "tests/fixtures/smollm2_tokens.json").read_text(encoding="utf-8"))["cases"]["long"]
    read_ms, meta = timed(lambda: GGUFFile(path).metadata, runs)
    build_ms, tok = timed(lambda: Tokenizer.from_metadata(meta), runs)
    cold = [timed(lambda: t.encode(prompt["text"], special=True), 1)[0]
            for t in [Tokenizer.from_metadata(meta) for _ in range(runs)]]
    warm_ms, ids = timed(lambda: tok.encode(prompt["text"], special=True), runs)
    decode_ms, _ = timed(lambda: tok.decode(ids), runs)
    pieces_ms, _ = timed(lambda: [tok.piece(i) for i in range(len(tok.tokens))], runs)
    out = {"runs": runs, "prompt_tokens": len(ids), "read_metadata_ms": read_ms, "build_ms": build_ms,
           "encode_cold_ms": statistics.median(cold), "encode_warm_ms": warm_ms, "decode_ms": decode_ms,
           "all_pieces_ms": pieces_ms}
    out["targets_met"] = {k: out[f"{k}_ms"] <= v for k, v in TARGETS_MS.items()}
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = parser.parse_args(argv)
    r = measure(a.runs)
    if a.json:
        print(json.dumps(r, indent=1))
        return
    print(f"median of {r['runs']} runs; prompt of {r['prompt_tokens']} tokens")
    for key in ("read_metadata", "build", "encode_cold", "encode_warm", "decode", "all_pieces"):
        target = f"  (target <= {TARGETS_MS[key]} ms: {'met' if r['targets_met'][key] else 'NOT met'})" \
            if key in TARGETS_MS else ""
        print(f"{key:14} {r[key + '_ms']:8.2f} ms{target}")


if __name__ == "__main__":
    main()
