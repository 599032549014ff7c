"""The real model's float32 weights, dequantized once per account and shared: the first tour (or `xf-tour model get`)
writes them, already in llama.forward's names and layout, to one file in the state folder's models/ folder, and
every tour after maps that file read-only, so the page cache holds one copy for a whole classroom instead of one
copy per learner. A speed and memory trick only: real_llama.weights is the readable path, and
tests/test_weights_cache.py holds the two equal bit for bit.

The file, NAME.f32 for a GGUF file NAME, every number little-endian:
    "XFTOUR32", the JSON header's length n (uint64), n bytes of JSON:
        {"format": 1, "gguf": {"bytes": SIZE, "sha256": HEX}, "tensors": [[name, [shape...], offset], ...]}
    zeros up to the next multiple of 64: the data's start; then each array's float32 numbers, C order, at the data's
    start plus its offset (a multiple of 64), in real_llama.tensors' order; the file ends with the last array.
The names are llama.forward's, a layer's matrices already [in, out]; the head is not stored (real_llama.with_head).

The key is the GGUF file's size and the sha256 of all its bytes, hashed from the map the tensors are read from:
what the copy was made from, whatever happened to the file since (copied with its times, restored, rewritten in
place, fetched again as a new inode). It costs one pass over the file (98 MB: about 0.06 s, bench/real_app.py).

Nothing in a cache file is trusted, and nothing in it is parsed: the reader writes the header the GGUF file's own
sizes and key give, and maps the file only if it begins with exactly those bytes and is exactly as long as they
say; only then are its numbers read, as read-only arrays. It is opened without following a link (a FIFO does not
block), and only a regular file of this account's that no one else may write is read. Anything else is ignored and
written anew, through engine/files.write_atomic (a new file, renamed over the name: a tour that has the old one
mapped keeps it; two tours writing at once each rename a whole file). Where it cannot be written (a read-only
folder, a full disk, less than SPARE left beside it), the tour dequantizes its own copy, as without the cache.
"""

import contextlib
import json
import math
import mmap
import os
import stat
import struct
import time
from pathlib import Path

import numpy as np

from . import real_llama
from .files import FOLDER, NOFOLLOW, write_atomic

ENV = "XF_TOUR_WEIGHTS_CACHE"  # "off": each tour dequantizes its own copy, and nothing is written
MAGIC = b"XFTOUR32"
FORMAT = 1  # the header's "format": a change to the layout, or to what real_llama.tensors gives, is a new one
ALIGN = 64  # bytes: each array starts on a cache line
SUFFIX = ".f32"
MODE = 0o644  # as `model get` leaves the GGUF file: the account's tours read it; only the account writes it
SPARE = 256 * 2**20  # bytes the disk keeps free beside a new cache, or none is written
STALE_S = 600  # a temporary file left this long by a tour that died writing is removed by the next writer
READ = os.O_RDONLY | NOFOLLOW | getattr(os, "O_NONBLOCK", 0)  # a FIFO planted at the name must not block the open


def enabled(environ=os.environ) -> bool:
    """Whether tours share the cache: unless XF_TOUR_WEIGHTS_CACHE=off."""
    return environ.get(ENV, "on").lower() != "off"


def cache_path(gguf_path, root: Path | None = None) -> Path:
    """Where the float32 copy of a GGUF file goes: models/NAME.f32 in the state folder (or in `root`), the folder
    `model get` fetches into, the account's own (--learner keeps only progress apart)."""
    return real_llama.default_path(root).parent / (Path(gguf_path).name + SUFFIX)


def key(f) -> dict:
    """What a copy is keyed to: the GGUF file's size and the sha256 of its bytes."""
    return {"bytes": f.n_bytes, "sha256": f.sha256()}


def _up(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def layout(cfg, gguf_key: dict) -> tuple[bytes, dict, int]:  # -> header, {name: (shape, start)}, the file's length
    """The cache file of a model of these sizes, made from the file `gguf_key` names: its header, up to the data's
    start, each array's shape and start in the file, and the file's length."""
    tensors, at = [], 0
    for name, shape in real_llama.float32_shapes(cfg).items():
        tensors.append([name, list(shape), at])
        end, at = at + 4 * math.prod(shape), _up(at + 4 * math.prod(shape))
    text = json.dumps({"format": FORMAT, "gguf": gguf_key, "tensors": tensors}, separators=(",", ":")).encode()
    head = MAGIC + struct.pack("<Q", len(text)) + text
    start = _up(len(head))
    return head + bytes(start - len(head)), {n: (tuple(s), start + o) for n, s, o in tensors}, start + end


def read(folder_fd: int, name: str, cfg, gguf_key: dict) -> dict[str, np.ndarray] | None:
    """The weights mapped from the cache file `name` in the folder, read-only, head included; None unless the file
    is a regular file of this account's, writable by no one else, that is exactly what layout() says it must be."""
    head, arrays, length = layout(cfg, gguf_key)
    try:
        fd = os.open(name, READ, dir_fd=folder_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022
                or st.st_size != length or os.pread(fd, len(head), 0) != head):
            return None
        buf = mmap.mmap(fd, length, access=mmap.ACCESS_READ)  # the arrays keep it open
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    return real_llama.with_head({n: np.frombuffer(buf, "<f4", math.prod(shape), start).reshape(shape)
                                 for n, (shape, start) in arrays.items()})


def write(folder_fd: int, name: str, f, cfg, gguf_key: dict) -> None:
    """Dequantize the GGUF file's tensors one at a time into a new cache file `name` in the folder, renamed into
    place whole (engine/files.write_atomic). OSError when it cannot: the name is then as it was."""
    head, arrays, length = layout(cfg, gguf_key)
    disk = os.fstatvfs(folder_fd)
    if disk.f_bavail * disk.f_frsize < length + SPARE:
        raise OSError(f"{length + SPARE:,} bytes needed, {disk.f_bavail * disk.f_frsize:,} free")
    _sweep(folder_fd, name)

    def chunks():  # the header, then each array and the zeros up to the next one's start
        at = len(head)
        yield head
        for n, a in real_llama.tensors(f, cfg):  # check_tensors has held each to the shape layout() gives it
            start = arrays[n][1]
            yield bytes(start - at)
            yield np.ascontiguousarray(a, "<f4")
            at = start + a.nbytes

    write_atomic(name, chunks(), MODE, dir_fd=folder_fd)


def _sweep(folder_fd: int, name: str) -> None:
    """Remove what tours that died writing `name` left: its temporary files (write_atomic's ".NAME-*.tmp")
    untouched for STALE_S. A tour writing now touches its own every moment; a link is removed, never followed."""
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(folder_fd) as entries:
        for entry in entries:
            if entry.name.startswith(f".{name}-") and entry.name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    if now - entry.stat(follow_symlinks=False).st_mtime > STALE_S:
                        os.unlink(entry.name, dir_fd=folder_fd)


def weights(f, cfg, root: Path | None = None) -> dict[str, np.ndarray]:
    """real_llama.weights, mapped from the account's cache (written first if it is missing or not this file's);
    the tour's own copy, as real_llama.weights gives it, where the cache is off or cannot be written."""
    if not enabled():
        return real_llama.weights(f, cfg)
    path = cache_path(f.path, root)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        folder_fd = os.open(path.parent, FOLDER)
    except OSError:
        return real_llama.weights(f, cfg)
    try:
        gguf_key = key(f)
        w = read(folder_fd, path.name, cfg, gguf_key)
        if w is None:
            with contextlib.suppress(OSError):
                write(folder_fd, path.name, f, cfg, gguf_key)
                w = read(folder_fd, path.name, cfg, gguf_key)
    finally:
        os.close(folder_fd)
    return real_llama.weights(f, cfg) if w is None else w


def load(path, available: int | None = None, root: Path | None = None) -> "real_llama.RealLlama":
    """real_llama.load, its weights mapped from the account's float32 cache (weights())."""
    return real_llama.load(path, available, read=lambda f, cfg: weights(f, cfg, root))


def cached(f, cfg, root: Path | None = None) -> tuple[Path, bool]:
    """Where the GGUF file's float32 copy goes, and whether a copy of this very file is there, ready to map (what
    `model info` says)."""
    path = cache_path(f.path, root)
    try:
        folder_fd = os.open(path.parent, FOLDER)
    except OSError:
        return path, False
    try:
        return path, read(folder_fd, path.name, cfg, key(f)) is not None
    finally:
        os.close(folder_fd)
