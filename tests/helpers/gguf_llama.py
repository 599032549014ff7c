"""Small Llama GGUF files written with llama.cpp's gguf package, and the Llama they hold written out loop by loop:
what tests/test_real_model.py and tests/test_real_rope.py check engine/real_llama.py against."""

import math

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q

L, D, F, H, K, HD, V = 2, 64, 96, 4, 2, 16, 40  # rows of 64 and 96: whole blocks of 32 for Q8_0 and Q4_1
BASE, EPS = 100000.0, 1e-5


def write_llama(path, *, arch="llama", tied=True, seed=0, kv=None, skip=(), extra=None):
    """A small Llama GGUF at `path`; returns its tensors as GGUF holds them ([out, in]), dequantized, float64.
    kv: more metadata (key -> value); skip: tensor names left out; extra: name -> float32 array added (F32)."""
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_block_count(L)
    writer.add_context_length(128)
    writer.add_embedding_length(D)
    writer.add_feed_forward_length(F)
    writer.add_head_count(H)
    writer.add_head_count_kv(K)
    writer.add_rope_freq_base(BASE)
    writer.add_layer_norm_rms_eps(EPS)
    writer.add_token_list([f"t{i}" for i in range(V)])
    writer.add_token_types([1] * V)
    for key, value in (kv or {}).items():
        writer.add_string(key, value) if isinstance(value, str) else writer.add_float32(key, value)

    def mat(n_out, n_in):
        return rng.standard_normal((n_out, n_in)) / math.sqrt(n_in)

    def norm():
        return 1 + 0.1 * rng.standard_normal(D)

    tensors = {"token_embd.weight": (rng.standard_normal((V, D)), Q.Q8_0), "output_norm.weight": (norm(), Q.F32)}
    if not tied:
        tensors["output.weight"] = (mat(V, D), Q.F16)
    for i in range(L):
        tensors.update({f"blk.{i}.attn_norm.weight": (norm(), Q.F32),
                        f"blk.{i}.attn_q.weight": (mat(H * HD, D), Q.Q4_1),
                        f"blk.{i}.attn_k.weight": (mat(K * HD, D), Q.Q4_1),
                        f"blk.{i}.attn_v.weight": (mat(K * HD, D), Q.Q4_1),
                        f"blk.{i}.attn_output.weight": (mat(D, H * HD), Q.Q4_1),
                        f"blk.{i}.ffn_norm.weight": (norm(), Q.F32), f"blk.{i}.ffn_gate.weight": (mat(F, D), Q.Q4_1),
                        f"blk.{i}.ffn_up.weight": (mat(F, D), Q.Q4_1), f"blk.{i}.ffn_down.weight": (mat(D, F), Q.Q4_1)})
    tensors.update({name: (a, Q.F32) for name, a in (extra or {}).items()})
    stored = {}
    for name, (a, qtype) in tensors.items():
        if name in skip:
            continue
        if qtype in (Q.F32, Q.F16):
            data = a.astype(np.float32 if qtype == Q.F32 else np.float16)
            writer.add_tensor(name, data)
            stored[name] = data.astype(np.float64)
        else:
            data = gguf.quants.quantize(a.astype(np.float32), qtype)
            writer.add_tensor(name, data, raw_dtype=qtype)
            stored[name] = gguf.quants.dequantize(data, qtype).astype(np.float64)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return stored


def reference_logits(t, ids, inv_freq=None):  # -> [T, V] float64
    """A Llama written out loop by loop from its formulas, on the GGUF tensors as stored ([out, in]): RMSNorm,
    RoPE turning the pairs (2i, 2i+1) by pos·base^(-2i/hd) (or pos·inv_freq[i], given them), query head h
    reading K/V head h // (H / K), SwiGLU, the head tied to the embedding. Nothing of engine/ is used."""
    def norm(x, g):
        return x / np.sqrt(np.mean(x * x) + EPS) * g

    def turn(u, pos):
        out = u.copy()
        for i in range(HD // 2):
            angle = pos * (BASE ** (-2 * i / HD) if inv_freq is None else inv_freq[i])
            c, s = math.cos(angle), math.sin(angle)
            out[2 * i], out[2 * i + 1] = u[2 * i] * c - u[2 * i + 1] * s, u[2 * i] * s + u[2 * i + 1] * c
        return out

    x = t["token_embd.weight"][ids]
    n = len(ids)
    for layer in range(L):
        p = f"blk.{layer}."
        h = np.array([norm(r, t[p + "attn_norm.weight"]) for r in x])
        q, k, v = (h @ t[p + name].T for name in ("attn_q.weight", "attn_k.weight", "attn_v.weight"))
        out = np.zeros((n, H * HD))
        for head in range(H):
            j = head // (H // K)
            hs, ks = slice(head * HD, (head + 1) * HD), slice(j * HD, (j + 1) * HD)
            for i in range(n):
                scores = np.array([turn(q[i, hs], i) @ turn(k[s, ks], s) / math.sqrt(HD) for s in range(i + 1)])
                weights = np.exp(scores - scores.max())
                weights /= weights.sum()
                out[i, hs] = weights @ v[: i + 1, ks]
        x = x + out @ t[p + "attn_output.weight"].T
        h = np.array([norm(r, t[p + "ffn_norm.weight"]) for r in x])
        gate, up = h @ t[p + "ffn_gate.weight"].T, h @ t[p + "ffn_up.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ t[p + "ffn_down.weight"].T
    x = np.array([norm(r, t["output_norm.weight"]) for r in x])
    return x @ t.get("output.weight", t["token_embd.weight"]).T


def write_llama_with_vocab(path, vocab_path, n_layer: int, *, d=128, n_head=16, n_kv_head=4, d_ff=128, seed=1):
    """A random Llama at `path` that tokenizes as a real one: every tokenizer.* key of `vocab_path` (one of
    llama.cpp's vocabulary-only files, tests/fixtures/llama_vocab) and random weights, F16 embedding, F32 else.
    What lesson 12 must stay true and fit on: another model's depth, heads, BOS, digits and vocabulary. Seed 1:
    random heads can tie at two decimals, which leaves lesson 12's last question no single answer (check-lessons
    says so, the app acts unasked); seed 1's do not, under both vocabularies."""
    from engine.gguf_file import GGUFFile

    with GGUFFile(vocab_path) as f:
        meta = dict(f.metadata)
    n_vocab, head_dim = len(meta["tokenizer.ggml.tokens"]), d // n_head
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(n_layer)
    writer.add_context_length(2048)
    writer.add_embedding_length(d)
    writer.add_feed_forward_length(d_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_kv_head)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    for key, value in meta.items():
        if not key.startswith("tokenizer."):
            continue
        if key == "tokenizer.ggml.tokens":
            writer.add_token_list(list(value))
        elif key == "tokenizer.ggml.merges":
            writer.add_token_merges(list(value))
        elif key == "tokenizer.ggml.token_type":
            writer.add_token_types([int(x) for x in value])
        elif key == "tokenizer.ggml.scores":
            writer.add_token_scores([float(x) for x in value])
        elif isinstance(value, bool):
            writer.add_bool(key, value)
        elif isinstance(value, str):
            writer.add_string(key, value)
        elif isinstance(value, int):
            writer.add_uint32(key, value)
    rng = np.random.default_rng(seed)

    def mat(n_out, n_in):
        return (rng.standard_normal((n_out, n_in)) / math.sqrt(n_in)).astype(np.float32)

    writer.add_tensor("token_embd.weight", rng.standard_normal((n_vocab, d)).astype(np.float16))
    writer.add_tensor("output_norm.weight", np.ones(d, np.float32))
    q, kv = n_head * head_dim, n_kv_head * head_dim
    for i in range(n_layer):
        p = f"blk.{i}."
        for name, shape in (("attn_q", (q, d)), ("attn_k", (kv, d)), ("attn_v", (kv, d)), ("attn_output", (d, q)),
                            ("ffn_gate", (d_ff, d)), ("ffn_up", (d_ff, d)), ("ffn_down", (d, d_ff))):
            writer.add_tensor(f"{p}{name}.weight", mat(*shape))
        writer.add_tensor(p + "attn_norm.weight", np.ones(d, np.float32))
        writer.add_tensor(p + "ffn_norm.weight", np.ones(d, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
