"""The reference forward (engine/llama.py, what the code key shows) and training's fast pass
(engine/training_pass.py) compute the same numbers: logits, attention and gradients, on random weights,
on both shipped runs and on grouped-query configs."""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

import engine
from engine import corpus, llama, ops, tiny, training_pass

PAD = corpus.INDEX[corpus.PAD]


def random_weights(d=8, n_layer=2, n_head=4, n_kv_head=4, d_ff=12, seed=0, dtype=np.float64):
    """Random Llama weights with n_kv_head K/V heads, norms drawn away from 1 so that they count."""
    rng = np.random.default_rng(seed)
    hd, v = d // n_head, len(corpus.VOCAB)

    def mat(n_in, n_out):
        return rng.standard_normal((n_in, n_out)) / math.sqrt(n_in)

    w = {"embed": rng.standard_normal((v, d)), "norm_f": 1 + 0.1 * rng.standard_normal(d), "head": mat(d, v)}
    for i in range(n_layer):
        w.update({f"{i}.norm1": 1 + 0.1 * rng.standard_normal(d), f"{i}.wq": mat(d, n_head * hd),
                  f"{i}.wk": mat(d, n_kv_head * hd), f"{i}.wv": mat(d, n_kv_head * hd), f"{i}.wo": mat(n_head * hd, d),
                  f"{i}.norm2": 1 + 0.1 * rng.standard_normal(d), f"{i}.wg": mat(d, d_ff), f"{i}.wu": mat(d, d_ff),
                  f"{i}.wd": mat(d_ff, d)})
    return {k: a.astype(dtype) for k, a in w.items()}


def sentences(n=12, seed=0):
    """n drawn sentences, padded; several share their first tokens, as a training batch's do."""
    return corpus.encode(corpus.draw(n, seed, "train"))


def reference_loss(w, n_head, n_kv_head, ids):
    """Mean cross-entropy of each real next token, from llama.forward."""
    logp = ops.log_softmax(llama.forward(w, ids[:, :-1], n_head, n_kv_head))  # [B, T, V]
    targets = ids[:, 1:]
    b, t = np.nonzero(targets != PAD)
    return -logp[b, t, targets[b, t]].mean()


CONFIGS = {"multi-head": dict(n_head=4, n_kv_head=4), "two K/V heads": dict(n_head=4, n_kv_head=2),
           "one K/V head": dict(n_head=4, n_kv_head=1)}


# --- the reference forward ---------------------------------------------------------------------------------------

def test_rope_turns_the_pairs_as_the_positional_lesson_does():
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 8))  # [B, H, T, head_dim]
    assert_allclose(llama.rope(x), engine.apply_rope(x, np.arange(6)), rtol=1e-14, atol=1e-15)
    assert llama.rope(x.astype(np.float32)).dtype == np.float32


def test_grouped_query_attention_is_multi_head_attention_with_each_kv_head_copied():
    """A K/V head shared by a group of query heads is the same as every query head having its own copy."""
    n_head, n_kv_head, hd = 4, 2, 2
    w = random_weights(n_head=n_head, n_kv_head=n_kv_head)
    copied = dict(w)
    for i in range(2):
        for name in ("wk", "wv"):
            heads = w[f"{i}.{name}"].reshape(8, n_kv_head, hd)
            copied[f"{i}.{name}"] = np.repeat(heads, n_head // n_kv_head, axis=1).reshape(8, n_head * hd)
    ids = sentences()
    keep_g, keep_m = {}, {}
    grouped = llama.forward(w, ids, n_head, n_kv_head, keep=keep_g)
    assert_allclose(grouped, llama.forward(copied, ids, n_head, keep=keep_m), rtol=1e-12, atol=1e-12)
    for a, b in zip(keep_g["attn"], keep_m["attn"]):
        assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError):  # the wrong count of K/V heads does not pass unnoticed
        llama.forward(w, ids, n_head, 4)


def test_a_position_never_sees_a_later_token():
    w = random_weights(**CONFIGS["two K/V heads"])
    ids = sentences(1)[:, :7]
    changed = ids.copy()
    changed[0, 5:] = corpus.INDEX["dog"]
    a, b = llama.forward(w, ids, 4, 2), llama.forward(w, changed, 4, 2)
    assert_allclose(a[0, :5], b[0, :5], rtol=1e-13) and not np.allclose(a[0, 5:], b[0, 5:])


def test_silencing_a_head_zeroes_what_it_adds():
    w = random_weights()
    ids = sentences(3)
    mask = np.ones((2, 4))
    mask[1, 2] = 0
    silenced = llama.silence_heads(w, mask, 4)
    assert not np.allclose(llama.forward(silenced, ids, 4), llama.forward(w, ids, 4))
    assert_allclose(llama.forward(silenced, ids, 4), training_pass.forward(w, ids, 4, head_mask=mask),
                    rtol=1e-11, atol=1e-12)
    assert np.array_equal(silenced["0.wo"], w["0.wo"]) and not silenced["1.wo"][4:6].any()


def test_the_code_key_shows_the_reference_forward_in_short_lines():
    """Under 70 lines (the KV cache included), each whole in the code window at 80 columns, and none of training's
    devices."""
    import inspect

    from tui.screens.code import code_width
    text = "\n".join(inspect.getsource(f) for f in llama.CODE)
    assert len(text.splitlines()) < 70 and max(map(len, text.splitlines())) <= code_width(80)
    for word in ("Prefixes", "turn_pairs", "dense(", "complex", "check_bytes"):
        assert word not in text


# --- the fast pass against the reference ---------------------------------------------------------------------------

@pytest.mark.parametrize("config", CONFIGS)
def test_the_fast_forward_gives_the_reference_logits_and_attention(config):
    w = random_weights(**CONFIGS[config])
    ids = sentences()[:, :-1]
    keep_ref, keep_fast = {}, {}
    reference = llama.forward(w, ids, 4, CONFIGS[config]["n_kv_head"], keep=keep_ref)
    assert_allclose(training_pass.forward(w, ids, 4, keep=keep_fast), reference, rtol=1e-11, atol=1e-12)
    for a, b in zip(keep_fast["attn"], keep_ref["attn"]):
        assert_allclose(a, b, rtol=1e-11, atol=1e-13)
    real = ids != PAD
    rows = training_pass.Prefixes(ids, real)
    assert len(rows) < real.sum()  # prefixes were shared
    assert_allclose(training_pass.forward(w, rows, 4)[rows.at[real]], reference[real], rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("run", sorted(tiny.RUNS))
def test_the_fast_forward_gives_the_reference_logits_on_the_shipped_runs(run):
    w, cfg, _ = tiny.load(tiny.RUNS[run])
    ids = sentences(64, seed=5)[:, :-1]
    reference = llama.forward(w, ids, cfg.n_head)
    fast = training_pass.forward(w, ids, cfg.n_head)
    assert reference.dtype == fast.dtype == np.float32
    assert_allclose(fast, reference, rtol=1e-4, atol=1e-4)  # float32: the sums run in another order
    wide = llama.forward({k: a.astype(np.float64) for k, a in w.items()}, ids, cfg.n_head)
    assert np.abs(reference - wide).max() < 1e-4  # and both are float32 roundings of the same numbers


@pytest.mark.parametrize("config", CONFIGS)
def test_the_fast_gradients_are_the_reference_losss_derivatives(config):
    """training_pass.loss_and_grads against finite differences of the reference forward's loss, in float64: entry
    by entry for a few entries of every weight, and along random directions through all of them."""
    n_head, n_kv_head = CONFIGS[config]["n_head"], CONFIGS[config]["n_kv_head"]
    w = random_weights(**CONFIGS[config])
    ids = sentences()
    loss, grads = training_pass.loss_and_grads(w, n_head, ids, PAD)
    assert loss == pytest.approx(reference_loss(w, n_head, n_kv_head, ids), rel=1e-12)
    assert {k: g.shape for k, g in grads.items()} == {k: a.shape for k, a in w.items()}
    rng = np.random.default_rng(1)
    eps = 1e-6
    for name, a in w.items():
        for ix in [tuple(rng.integers(0, n) for n in a.shape) for _ in range(4)]:
            old = a[ix]
            a[ix] = old + eps
            up = reference_loss(w, n_head, n_kv_head, ids)
            a[ix] = old - eps
            down = reference_loss(w, n_head, n_kv_head, ids)
            a[ix] = old
            assert grads[name][ix] == pytest.approx((up - down) / (2 * eps), rel=1e-5, abs=1e-9), (name, ix)
    for _ in range(3):
        u = {k: rng.standard_normal(a.shape) for k, a in w.items()}
        up = reference_loss({k: a + eps * u[k] for k, a in w.items()}, n_head, n_kv_head, ids)
        down = reference_loss({k: a - eps * u[k] for k, a in w.items()}, n_head, n_kv_head, ids)
        along = sum(float((grads[k] * u[k]).sum()) for k in w)
        assert along == pytest.approx((up - down) / (2 * eps), rel=1e-6)


@pytest.mark.parametrize("run", sorted(tiny.RUNS))
def test_the_fast_gradients_on_the_shipped_runs_in_float32(run):
    """The shipped weights, in float32 as training runs: the gradient along random directions is the reference
    loss's slope there, computed in float64."""
    w, cfg, _ = tiny.load(tiny.RUNS[run])
    ids = sentences(64, seed=3)
    loss, grads = tiny.loss_and_grads(w, cfg, ids)
    wide = {k: a.astype(np.float64) for k, a in w.items()}
    assert loss == pytest.approx(reference_loss(wide, cfg.n_head, cfg.n_head, ids), rel=1e-5)
    rng = np.random.default_rng(2)
    eps = 1e-5
    for _ in range(3):
        u = {k: rng.standard_normal(a.shape) for k, a in w.items()}
        up = reference_loss({k: a + eps * u[k] for k, a in wide.items()}, cfg.n_head, cfg.n_head, ids)
        down = reference_loss({k: a - eps * u[k] for k, a in wide.items()}, cfg.n_head, cfg.n_head, ids)
        along = sum(float((grads[k].astype(np.float64) * u[k]).sum()) for k in w)
        assert along == pytest.approx((up - down) / (2 * eps), rel=1e-3)


# --- the fast pass's own pieces ------------------------------------------------------------------------------------

def test_the_forward_pass_fast_paths_compute_the_textbook_operations():
    """training_pass.forward runs ops.attention, ops.rms_norm, ops.silu and positions.apply_rope in fewer numpy calls
    (or, for silu, as x sigmoid(x), to keep the sigmoid for the backward pass)."""
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((3, 2, 3, 5, 4))  # [B, H, T, head_dim] each
    for fast, textbook in zip(training_pass.causal_attention(q, k, v), engine.attention(q, k, v, causal=True)):
        assert_allclose(fast, textbook, rtol=1e-12, atol=1e-15)
    x, g = rng.standard_normal((2, 5, 8)), rng.standard_normal(8)
    assert_allclose(x * training_pass.rms_scale(x) * g, engine.rms_norm(x, g), rtol=1e-12)  # how forward normalises
    gate = 4 * rng.standard_normal(50)
    assert_allclose(gate * (1.0 / (1.0 + np.exp(-gate))), engine.silu(gate), rtol=1e-14)  # and its SwiGLU
    qk = rng.standard_normal((2, 5, 2 * 3 * 4))  # [B, T, q then k]: 3 heads of head_dim 4 each
    turns = training_pass.rope_turns(5, 4, 6, qk.dtype)
    by_head = qk.reshape(2, 5, 6, 4).swapaxes(1, 2)  # [B, 2 n_head, T, head_dim]
    textbook = engine.apply_rope(by_head, np.arange(5)).swapaxes(1, 2).reshape(qk.shape)
    assert_allclose(training_pass.turn_pairs(qk, turns), textbook, rtol=1e-12, atol=1e-15)
    assert_allclose(training_pass.turn_pairs(textbook, np.conj(turns)), qk, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("case", ["small", "over 40", "a row under 1e-20", "huge", "not a number"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_causal_attention_in_and_out_of_the_range_where_it_skips_the_row_max(case, dtype):
    """Scores of a few units take exp(score) straight; a score over 40, a row whose exps sum under 1e-20 and scores
    that are not numbers take the row max first, as ops.attention does: the same weights either way."""
    rng = np.random.default_rng(4)
    q, k, v = rng.standard_normal((3, 2, 3, 5, 4))
    k = np.abs(k)  # so that a query of large negative numbers scores every key far below zero
    q = {"small": q, "over 40": 30 * q, "huge": 1e15 * q, "not a number": q * np.nan,
         "a row under 1e-20": np.where(np.arange(5)[:, None] == 3, -60.0, q)}[case]
    scores = q @ np.swapaxes(k, -1, -2) / 2 + engine.causal_mask(5)
    skips = scores.max() <= 40 and (np.exp(scores) @ np.ones(5)).min() >= 1e-20
    assert skips == (case == "small")  # each case takes the path it is named for
    with np.errstate(all="ignore"):
        textbook = engine.attention(q, k, v, causal=True)
        fast = training_pass.causal_attention(q.astype(dtype), k.astype(dtype), v.astype(dtype))
    for mine, theirs in zip(fast, textbook):
        assert mine.dtype == dtype
        if case == "not a number":
            assert np.isnan(mine).all()
        else:
            assert np.isfinite(mine).all()
            assert_allclose(mine, theirs, rtol=1e-12 if dtype == np.float64 else 2e-5, atol=1e-6)


