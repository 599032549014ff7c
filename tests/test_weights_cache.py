"""The float32 copy of a real model's weights that an account's tours share (engine/weights_cache.py): equal bit for
bit to the readable path (real_llama.weights), mapped read-only without dequantizing once it is there, and, on a
classroom host's hostile ground, never trusted: a damaged, truncated or foreign copy is written anew, a link at its
name is never followed, a FIFO never blocks, two tours writing at once both end right, and a folder that cannot take
it leaves each tour its own copy, as before.

The fast tests use small GGUFs of their own (tests/test_real_model.py's write_llama); the slow ones SmolLM2-135M."""

import errno
import json
import os
import stat
import threading

import numpy as np
import pytest
from helpers.cli import run_cli

import engine
from bench.smollm import smollm_path
from engine import real_llama, weights_cache
from engine.files import FOLDER
from engine.gguf_file import GGUFFile

from test_real_model import write_llama


@pytest.fixture(autouse=True)
def _shared(monkeypatch, tmp_path):
    """The cache on (tests/conftest.py turns it off for every other test), in a state folder of the test's own."""
    monkeypatch.delenv(weights_cache.ENV)
    monkeypatch.setenv("XF_TOUR_STATE_DIR", str(tmp_path / "state"))


@pytest.fixture(params=[True, False], ids=["tied", "untied"])
def small(request, tmp_path):
    """A small Llama GGUF, its head tied to the embedding or its own (F16): its path."""
    path = tmp_path / "small.gguf"
    write_llama(path, tied=request.param)
    return path


def readable(path) -> dict:
    """real_llama.weights: what the copy must equal."""
    with GGUFFile(path) as f:
        return real_llama.weights(f, real_llama.read_config(f).cfg)


def cache_of(path):
    return weights_cache.cache_path(path)


def assert_same(w, ref, mapped=True):
    """Every array the same bytes, shape, dtype and strides as the readable path's; read-only where mapped, the
    head a view of the embedding where they are tied."""
    assert list(w) == list(ref)
    for name, a in ref.items():
        b = w[name]
        assert (b.shape, b.dtype, b.strides) == (a.shape, a.dtype, a.strides), name
        assert b.tobytes() == a.tobytes(), name
        assert b.flags.writeable is not mapped, name
    assert np.shares_memory(w["head"], w["embed"]) == np.shares_memory(ref["head"], ref["embed"])


def no_dequantizing(monkeypatch):
    def refuse(self, name):
        raise AssertionError(f"dequantized {name}")
    monkeypatch.setattr(GGUFFile, "array", refuse)


# --- the copy -----------------------------------------------------------------------------------------------------

def test_the_copy_is_the_readable_weights_bit_for_bit_and_the_second_load_only_maps(small, monkeypatch):
    ref = readable(small)
    first = weights_cache.load(small)
    assert_same(first.weights, ref)
    assert stat.S_IMODE(cache_of(small).stat().st_mode) == weights_cache.MODE == 0o644  # the account's tours read it
    no_dequantizing(monkeypatch)
    second = weights_cache.load(small)
    assert_same(second.weights, ref)
    x = np.array([1, 5, 2, 7])
    np.testing.assert_array_equal(second.forward(x), real_llama.load(small, read=lambda f, cfg: ref).forward(x))


def test_its_layout_is_the_documented_one(small):
    weights_cache.load(small)
    data = cache_of(small).read_bytes()
    n = int.from_bytes(data[8:16], "little")
    header = json.loads(data[16:16 + n])
    start = -(-(16 + n) // 64) * 64
    assert data[:8] == b"XFTOUR32" and header["format"] == 1 and set(header["gguf"]) == {"bytes", "sha256"}
    ref = readable(small)
    for name, shape, offset in header["tensors"]:
        a = ref[name] if name != "output" else ref["head"].T
        assert tuple(shape) == a.shape and offset % 64 == 0
        assert data[start + offset:start + offset + a.nbytes] == np.ascontiguousarray(a).tobytes()
    assert len(data) == start + offset + a.nbytes and "head" not in {t[0] for t in header["tensors"]}


def test_a_forward_and_every_view_of_the_model_run_on_read_only_weights(small):
    model = weights_cache.load(small)
    assert not any(a.flags.writeable for a in model.weights.values())
    cache = {}
    model.forward(np.array([1, 2, 3]), cache=cache, keep={})
    model.forward(np.array([4]), cache=cache)  # numpy refuses any write into a read-only array: none is made


@pytest.mark.parametrize("damage", ["magic", "key", "offset", "truncated", "longer", "empty", "mode", "folder"])
def test_a_damaged_or_foreign_copy_is_written_anew(small, tmp_path, monkeypatch, damage):
    ref = readable(small)
    weights_cache.load(small)
    path = cache_of(small)
    good = path.read_bytes()
    data = bytearray(good)
    if damage == "magic":
        data[0] ^= 1
    elif damage == "key":  # a copy of another file that has this one's name: another model, or this one changed
        other = tmp_path / "other" / small.name
        other.parent.mkdir()
        write_llama(other, tied="output.weight" not in GGUFFile(small).tensors, seed=1)
        monkeypatch.setenv("XF_TOUR_STATE_DIR", str(tmp_path / "other-state"))
        weights_cache.load(other)
        data = bytearray(cache_of(other).read_bytes())
        monkeypatch.setenv("XF_TOUR_STATE_DIR", str(tmp_path / "state"))
    elif damage == "offset":  # a header that puts the first array elsewhere, its length unchanged
        i = data.index(b'"embed"')
        data[i:i + 40] = data[i:i + 40].replace(b",0]", b",9]", 1)
    elif damage == "truncated":
        data = data[:-100]
    elif damage == "longer":
        data += bytes(64)
    elif damage == "empty":
        data = bytearray()
    assert bytes(data) != good or damage in ("mode", "folder")
    path.unlink()
    if damage == "folder":
        path.mkdir()
    else:
        path.write_bytes(bytes(data))
        path.chmod(0o666 if damage == "mode" else 0o644)  # one others may write into is not read
    w = weights_cache.load(small).weights
    if damage == "folder":  # a folder at the name cannot be replaced by a file: the tour's own copy, as before
        assert_same(w, ref, mapped=False)
        return
    assert_same(w, ref)
    assert path.read_bytes() == good and stat.S_IMODE(path.stat().st_mode) == 0o644
    assert os.listdir(path.parent) == [path.name]  # no temporary file left


def test_a_link_at_the_copys_name_is_never_followed(small, tmp_path):
    """Not even to a good copy: a link the account could plant points anywhere, at a file that may change."""
    weights_cache.load(small)
    path, victim = cache_of(small), tmp_path / "victim"
    good = path.read_bytes()
    path.rename(victim)
    path.symlink_to(victim)
    assert_same(weights_cache.load(small).weights, readable(small))
    assert not path.is_symlink() and path.read_bytes() == good  # the link replaced, by rename, with a copy
    assert victim.read_bytes() == good  # and what it pointed to untouched
    path.unlink()
    victim.write_bytes(b"not yours")
    path.symlink_to(victim)
    assert_same(weights_cache.load(small).weights, readable(small))
    assert victim.read_bytes() == b"not yours" and not path.is_symlink()


def test_a_fifo_at_the_copys_name_does_not_block(small):
    path = cache_of(small)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    done = []
    loading = threading.Thread(target=lambda: done.append(weights_cache.load(small)), daemon=True)
    loading.start()
    loading.join(10)  # the small model loads in well under a second
    blocked = loading.is_alive()
    if blocked:  # opening the FIFO, waiting for a writer: be one, so that the thread ends
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        loading.join()
    assert not blocked and done and not path.is_fifo() and stat.S_ISREG(path.stat().st_mode)
    assert_same(done[0].weights, readable(small))


def test_two_tours_writing_at_once_both_end_right(small, monkeypatch):
    """Tour A writes its copy; halfway through, tour B writes and renames its own whole; then A renames over it.
    Each maps a whole copy (B keeps the one it mapped), and one whole file is left, no temporary one."""
    ref, tensors, others = readable(small), real_llama.tensors, []

    def a_then_b(f, cfg):
        for i, item in enumerate(tensors(f, cfg)):
            if i == 3:
                monkeypatch.setattr(real_llama, "tensors", tensors)
                others.append(weights_cache.load(small).weights)
            yield item

    monkeypatch.setattr(real_llama, "tensors", a_then_b)
    assert_same(weights_cache.load(small).weights, ref)
    assert len(others) == 1
    assert_same(others[0], ref)
    assert os.listdir(cache_of(small).parent) == [small.name + ".f32"]


def test_a_temporary_file_left_by_a_tour_that_died_writing_is_swept_once_stale(small):
    folder = cache_of(small).parent
    folder.mkdir(parents=True)
    old, fresh = (folder / f".{small.name}.f32-{x}.tmp" for x in ("0000dead", "0000beef"))
    old.write_bytes(b"half")
    fresh.write_bytes(b"being written")
    os.utime(old, (0, 0))
    weights_cache.load(small)
    assert sorted(os.listdir(folder)) == sorted([fresh.name, small.name + ".f32"])


def denied(*args, **kwargs):
    raise PermissionError(errno.EACCES, "read-only")


def test_a_folder_that_cannot_take_the_copy_leaves_each_tour_its_own(small, monkeypatch):
    folder = cache_of(small).parent
    folder.mkdir(parents=True)
    folder.chmod(0o555)
    if os.geteuid() == 0:  # root writes through a read-only mode: make creating a file fail instead
        real_open = os.open
        monkeypatch.setattr(os, "open", lambda p, flags, *a, **k: denied() if flags & os.O_CREAT
                            else real_open(p, flags, *a, **k))
    try:
        w = weights_cache.load(small).weights
    finally:
        folder.chmod(0o755)
    assert_same(w, readable(small), mapped=False)
    assert os.listdir(folder) == []


def test_a_full_disk_or_a_missing_state_folder_leaves_each_tour_its_own(small, monkeypatch, tmp_path):
    monkeypatch.setattr(os, "fstatvfs", lambda fd: os.statvfs_result((4096,) * 2 + (0,) * 8))
    assert_same(weights_cache.load(small).weights, readable(small), mapped=False)
    assert os.listdir(cache_of(small).parent) == []
    (tmp_path / "file").write_bytes(b"")
    monkeypatch.setenv("XF_TOUR_STATE_DIR", str(tmp_path / "file"))  # no folder can be made under a file
    assert_same(weights_cache.load(small).weights, readable(small), mapped=False)


def test_off_writes_nothing(small, monkeypatch):
    monkeypatch.setenv(weights_cache.ENV, "off")
    assert_same(weights_cache.load(small).weights, readable(small), mapped=False)
    assert not cache_of(small).parent.exists()


def test_the_copy_goes_in_the_accounts_models_folder_whatever_the_learner(small, tmp_path):
    from tui.cli.tour import learner_folder
    assert cache_of(small) == tmp_path / "state" / "models" / (small.name + ".f32")
    assert cache_of(small).parent == real_llama.default_path().parent
    assert learner_folder("ann").parent.parent == tmp_path / "state"  # --learner keeps progress apart, not models


def test_model_info_says_whether_the_copy_is_ready(small):
    out = run_cli("model", "info", "--json", "--model", str(small))
    info = json.loads(out.stdout)
    assert info["float32_cache"] == str(cache_of(small)) and not info["float32_cache_ready"]
    weights_cache.load(small)
    info = json.loads(run_cli("model", "info", "--json", "--model", str(small)).stdout)
    assert info["float32_cache_ready"]
    with GGUFFile(small) as f:
        fd = os.open(cache_of(small).parent, FOLDER)
        try:
            assert weights_cache.read(fd, cache_of(small).name, real_llama.read_config(f).cfg,
                                      {"bytes": f.n_bytes, "sha256": "0" * 64}) is None
        finally:
            os.close(fd)


# --- SmolLM2-135M ------------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.real_model
def test_smollm2s_copy_is_its_readable_weights_and_every_view_runs_on_it(monkeypatch):
    from engine.views import real
    path = smollm_path()
    ref = readable(path)
    assert_same(weights_cache.load(path).weights, ref)
    no_dequantizing(monkeypatch)
    monkeypatch.setattr(real, "_STATE", {**real._STATE, "path": None})
    model, _ = real.model_and_tokenizer()
    assert_same(model.weights, ref)
    for view in ("real-params", "real-tokens", "real-next", "real-attention", "real-stream", "real-lens",
                 "real-generate"):
        engine.run_view(view, {})
    assert not any(a.flags.writeable for a in model.weights.values())
