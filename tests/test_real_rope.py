"""Llama 3.1's RoPE scaling and the tensor types of other Llama files: engine/real_llama.py's rope_factors against
transformers' frequencies (tests/fixtures/make_llama3_rope_reference.py) and a Llama written out by hand, and
engine/gguf_file.py's reading of every type against llama.cpp's gguf package."""

import json
from pathlib import Path

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q
from helpers.gguf_llama import BASE, HD, V, reference_logits, write_llama
from numpy.testing import assert_allclose

from engine import gguf_file, llama, positions, real_llama
from engine.errors import FileError
from engine.gguf_file import GGUFFile

ROPE_REFERENCE = json.loads((Path(__file__).parent / "fixtures" / "llama3_rope.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ROPE_REFERENCE["models"])
def test_rope_freqs_divide_the_frequencies_into_hugging_faces_llama3_ones(name):
    """llama.cpp's converter writes Llama 3.1's scaling as divisors (rope_freqs); divided by them, the tour's
    frequencies are those transformers computes (tests/fixtures/make_llama3_rope_reference.py), and rope turns
    by them."""
    m = ROPE_REFERENCE["models"][name]
    hd, factors, inv_freq = m["head_dim"], np.array(m["rope_freqs"]), np.array(m["inv_freq"])
    assert_allclose(positions.frequencies(hd, m["rope_theta"]) / factors, inv_freq, rtol=2e-6)
    assert factors[0] == 1 and factors[-1] == m["factor"] and 1 < factors[hd // 2 * 3 // 4] <= m["factor"]
    pos = np.array([0, 1, 7, 300, 1000])
    x = np.random.default_rng(0).standard_normal((len(pos), hd))
    cos, sin = np.cos(pos[:, None] * inv_freq), np.sin(pos[:, None] * inv_freq)
    want = np.stack([x[:, 0::2] * cos - x[:, 1::2] * sin, x[:, 0::2] * sin + x[:, 1::2] * cos], -1).reshape(x.shape)
    got = np.concatenate([llama.rope(x[i:i + 1], m["rope_theta"], p, factors) for i, p in enumerate(pos)])
    assert_allclose(got, want, atol=3e-4)  # inv_freq is float32: at pos 1000 its rounding turns ~6e-5 radians


def test_a_llama_3_1_file_runs_with_its_rope_freqs(tmp_path):
    """rope_freqs.weight, as Llama 3.1 and 3.2 files carry it, divides each pair's frequency: the forward equals
    the hand-written Llama turning by base^(-2i/hd) / factor_i, and differs from one that ignores the factors."""
    path = tmp_path / "llama31.gguf"
    factors = np.geomspace(1, 32, HD // 2).astype(np.float32)
    stored = write_llama(path, seed=5, extra={"rope_freqs.weight": factors})
    model = real_llama.load(path)
    assert model.rope_factors == tuple(float(f) for f in factors)
    ids = np.random.default_rng(4).integers(0, V, 9)
    inv_freq = BASE ** (-np.arange(0, HD, 2) / HD) / factors.astype(np.float64)
    assert_allclose(model.forward(ids), reference_logits(stored, ids, inv_freq), rtol=1e-4, atol=1e-4)
    plain = real_llama.RealLlama(model.cfg, BASE, model.rms_eps, weights=model.weights)
    assert np.abs(plain.forward(ids) - model.forward(ids)).max() > 1e-3


def test_linear_rope_scaling_divides_every_frequency_and_yarn_is_refused(tmp_path):
    path = tmp_path / "linear.gguf"
    write_llama(path, kv={"llama.rope.scaling.type": "linear", "llama.rope.scaling.factor": 4.0})
    assert real_llama.load(path).rope_factors == (4.0,) * (HD // 2)
    write_llama(path, kv={"llama.rope.scaling.type": "none", "llama.rope.scaling.factor": 4.0})
    assert real_llama.load(path).rope_factors is None
    write_llama(path, kv={"llama.rope.scaling.type": "yarn", "llama.rope.scaling.factor": 4.0})
    with pytest.raises(FileError) as err:
        real_llama.load(path)
    assert "scales RoPE by yarn" in err.value.en and "yarn" in err.value.zh and "\n" not in err.value.en
    write_llama(path, extra={"rope_freqs.weight": np.ones(HD, np.float32)})
    with pytest.raises(FileError, match=r"rope_freqs\.weight is \[16\]; RoPE turns 8 pairs"):
        real_llama.load(path)


SCALES = {Q.Q2_K: (80, 82), Q.Q3_K: (108,), Q.Q4_K: (0, 2), Q.Q5_K: (0, 2), Q.Q6_K: (208,)}  # each float16 d, dmin


def test_every_type_a_llama_file_holds_reads_as_gguf_dequantizes_it(tmp_path):
    """F32, F16, BF16, the 32-blocks and the K-quants most files have (Q4_K_M mixes Q4_K and Q6_K): each tensor's
    bytes are where the reader says, and read as llama.cpp's gguf package dequantizes them. gguf cannot quantize to
    K-quants, so their blocks are random bytes with a small float16 scale where ggml's block keeps it."""
    rng, path = np.random.default_rng(7), tmp_path / "types.gguf"
    writer, written = gguf.GGUFWriter(str(path), "llama"), {}
    for kind in gguf_file.TYPES:
        q, shape = Q(kind), (3, 512)
        if q in SCALES:
            block, block_bytes = gguf.GGML_QUANT_SIZES[q]
            data = rng.integers(0, 256, (3, 512 // block, block_bytes), dtype=np.uint8)
            for at in SCALES[q]:
                data[..., at:at + 2] = np.frombuffer(np.float16(0.01).tobytes(), np.uint8)
            data = data.reshape(3, -1)
        elif q in (Q.F32, Q.F16):
            data = rng.standard_normal(shape).astype(np.float32 if q == Q.F32 else np.float16)
        else:
            data = gguf.quants.quantize(rng.standard_normal(shape).astype(np.float32), q)
        writer.add_tensor(q.name, data, raw_dtype=None if q in (Q.F32, Q.F16) else q)
        written[q.name] = (q, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with GGUFFile(path) as f:
        for name, (q, data) in written.items():
            t = f.tensors[name]
            assert (t.type_name, t.shape, t.n_bytes) == (name, (3, 512), data.nbytes)
            got = f.array(name)
            want = data.astype(np.float32) if q in (Q.F32, Q.F16) else gguf.quants.dequantize(data, q)
            assert got.dtype == np.float32 and np.isfinite(got).all() and np.array_equal(got, want), name
