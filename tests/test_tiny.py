"""The tiny Llama: gradients against finite differences, the grammar's floor, training, the shipped weights."""


import numpy as np
import pytest

import engine
from engine import corpus, llama, tiny, training_pass
from engine.records import replace

SMALL = tiny.TrainedLlamaConfig(d_model=8, n_layer=2, n_head=2, d_ff=12)


def _sharing_batch():
    """Three drawn sentences, a copy of the first, and one that shares its first four tokens: prefixes shared
    by all (the first two positions), by two sentences, and by a copy."""
    ids = corpus.encode(corpus.draw(3, 0, "train"))
    twin = ids[0].copy()
    twin[4] = corpus.INDEX["dog" if corpus.VOCAB[twin[4]] == "cat" else "cat"]  # a word (any) in another's place
    return np.concatenate([ids, ids[:1], twin[None]])


def test_prefixes_number_each_distinct_prefix_once():
    ids = _sharing_batch()[:, :-1]
    real = ids != corpus.INDEX[corpus.PAD]
    rows = training_pass.Prefixes(ids, real)
    b, t = np.nonzero(real)
    number = rows.at[b, t]
    assert (rows.tokens[number] == ids[b, t]).all() and (rows.pos[number] == t).all()
    assert len(rows) == len({tuple(ids[i, :j + 1]) for i, j in zip(b, t)})  # one number per distinct prefix
    for m in range(len(rows)):  # and every place with that number holds the same prefix
        places = np.flatnonzero(number == m)
        assert len({tuple(ids[b[i], :t[i] + 1]) for i in places}) == 1
        assert rows.first[m] in (b[places] * ids.shape[1] + t[places])
    assert len(rows) < real.sum()  # something was shared
    grads = np.random.default_rng(2).standard_normal((ids.size, 5))
    summed = np.zeros((len(rows), 5))
    np.add.at(summed, number, grads[b * ids.shape[1] + t])
    np.testing.assert_allclose(rows.sum_copies(grads), summed, rtol=1e-12, atol=1e-15)


def test_forward_over_prefixes_gives_each_position_its_logits():
    w = {k: v.astype(np.float64) for k, v in tiny.init(SMALL, 3).items()}
    ids = _sharing_batch()[:, :-1]
    real = ids != corpus.INDEX[corpus.PAD]
    rows = training_pass.Prefixes(ids, real)
    whole, prefixes = training_pass.forward(w, ids, SMALL.n_head), training_pass.forward(w, rows, SMALL.n_head)
    assert prefixes.shape == (len(rows), SMALL.n_vocab)
    np.testing.assert_allclose(prefixes[rows.at[real]], whole[real], rtol=1e-12, atol=1e-12)


def test_a_part_with_nothing_to_predict_has_zero_loss_and_gradients():
    w = tiny.init(SMALL, 0)
    ids = np.full((2, 3), corpus.INDEX[corpus.PAD])
    ids[:, 0] = corpus.INDEX[corpus.BOS]
    loss, g = tiny.loss_and_grads(w, SMALL, ids, 10.0)
    assert loss == 0.0 and set(g) == set(w) and not any(a.any() for a in g.values())


def test_gradients_match_finite_differences_in_float64():
    w = {k: v.astype(np.float64) for k, v in tiny.init(SMALL, 0).items()}
    rng = np.random.default_rng(1)
    for k in w:
        if "norm" in k:  # away from 1, so the norm gradients are tested too
            w[k] = w[k] + 0.1 * rng.standard_normal(w[k].shape)
    ids = _sharing_batch()  # shared prefixes: their gradients are summed over the places they end
    _, grads = tiny.loss_and_grads(w, SMALL, ids)
    assert set(grads) == set(w) and all(grads[k].dtype == np.float64 for k in w)
    for name, a in w.items():
        flat = list(np.ndindex(a.shape))
        picked = [flat[i] for i in rng.choice(len(flat), min(25, len(flat)), replace=False)]
        numeric = []
        for ix in picked:
            old = a[ix]
            a[ix] = old + 1e-6
            up, _ = tiny.loss_and_grads(w, SMALL, ids)
            a[ix] = old - 1e-6
            down, _ = tiny.loss_and_grads(w, SMALL, ids)
            a[ix] = old
            numeric.append((up - down) / 2e-6)
        analytic = np.array([grads[name][ix] for ix in picked])
        numeric = np.array(numeric)
        rel = np.linalg.norm(analytic - numeric) / (np.linalg.norm(analytic) + np.linalg.norm(numeric))
        assert rel < 1e-6, (name, rel)


def test_the_floor_two_ways():
    h, length, floor = corpus.entropy_floor()
    rng = np.random.default_rng(0)
    sample = [corpus.sample(rng) for _ in range(60_000)]
    monte_carlo = -sum(s.logp for s in sample) / sum(len(s.tokens) for s in sample)
    assert abs(monte_carlo - floor) < 0.01
    assert abs(np.mean([len(s.tokens) for s in sample]) - length) < 0.05


@pytest.mark.slow
def test_the_grammar_has_the_cat_sat_on_the_mat():
    rng = np.random.default_rng(3)
    texts = {corpus.sample(rng).text for _ in range(200_000)}
    assert "the cat sat on the mat ." in texts
    assert max(len(t.split()) for t in texts) <= corpus.MAX_LEN
    assert 50 <= len(corpus.VOCAB) <= 80


def test_held_out_sentences_never_reach_training():
    train = corpus.draw(3000, 0, "train")
    assert not any(corpus.held_out(s) for s in train)
    assert all(corpus.held_out(s) for s in corpus.draw(300, 0, "held-out"))


def test_a_short_run_lowers_the_loss_and_is_deterministic():
    cfg = replace(tiny.CONFIGS["small"], steps=60)
    losses = []
    w1, _ = tiny.train(cfg, 5, on_step=lambda step, loss, w: losses.append(loss), n_eval=200)
    w2, _ = tiny.train(cfg, 5, n_eval=200)
    assert np.mean(losses[-10:]) < losses[0] - 1.0
    assert all(np.array_equal(w1[k], w2[k]) for k in w1)  # the same seed, bit for bit
    w3, _ = tiny.train(cfg, 6, n_eval=200)
    assert not np.array_equal(w1["head"], w3["head"])


def test_activations_stay_float32():
    w = tiny.init(tiny.CONFIGS["main"], 0)
    keep = {}
    logits = llama.forward(w, corpus.encode(corpus.draw(4, 0, "train")), tiny.CONFIGS["main"].n_head, keep=keep)
    assert logits.dtype == np.float32
    assert all(p.dtype == np.float32 for p in keep["attn"]) and all(x.dtype == np.float32 for x in keep["residual"])
    keep = {}
    fast = training_pass.forward(w, corpus.encode(corpus.draw(4, 0, "train")), tiny.CONFIGS["main"].n_head, keep=keep)
    assert fast.dtype == np.float32 and all(p.dtype == np.float32 for p in keep["attn"])
    _, grads = tiny.loss_and_grads(w, tiny.CONFIGS["main"], corpus.encode(corpus.draw(4, 0, "train")))
    assert {g.dtype for g in grads.values()} == {np.dtype(np.float32)}


def test_the_shipped_weights_agree_on_unseen_mismatched_sentences():
    w, cfg, meta = tiny.load()
    unseen = [s for s in corpus.draw(6000, 99, "held-out") if s.mismatch]
    result = tiny.evaluate(w, cfg, unseen)
    assert len(unseen) > 500 and result["agreement_mismatch"] >= 0.99
    assert meta["loss"] - meta["floor"] < 0.01
    assert meta["entropy_spread_trained"] >= 2 * meta["entropy_spread_init"]
    assert tiny.n_params(w) == 23_968 and all(a.dtype == np.float32 for a in w.values())


def test_the_tiny_views_show_the_trained_model():
    result = engine.run_view("tiny-ablation")
    rows = result.tables[0].rows
    assert len(rows) == 8 and {f.key for f in result.facts} >= {
        f"{run}_{k}" for run in ("seed0", "seed1") for k in ("most_attention", "most_needed", "same", "avg_same")}
    attention = engine.run_view("tiny-attention", {"sentence": "the cat sat on the mat ."})
    for table in attention.tables:
        assert all(abs(sum(row[1:]) - 1) < 1e-5 for row in table.rows)
    assert engine.run_view("tiny-next").facts[0].value in corpus.VOCAB


@pytest.mark.parametrize("sentence, words", [("the unicorn sits .", "vocabulary"), ("the cat sat .", "agrees")])
def test_tiny_views_refuse_what_they_cannot_show(sentence, words):
    with pytest.raises(engine.ParamError):
        engine.run_view("tiny-ablation", {"sentence": sentence})


@pytest.mark.parametrize("run", ["seed0", "seed1"])
def test_the_stored_ablation_is_what_the_weights_give(run):
    """The misconceptions lesson reads each run's 300-sentence ablation from its manifest (training
    writes it); recomputed here from the weights, with a plain loop over sentences and heads."""
    w, cfg, meta = tiny.load(tiny.RUNS[run])
    drawn = corpus.draw_ids(np.random.default_rng(tiny.PROBE_SEED), tiny.PROBE_SENTENCES * 10, "held-out")
    seen, keep_rows = set(), []
    for i, row in enumerate(map(tuple, drawn.ids)):  # the first 300 distinct sentences with a mismatched distractor
        if row not in seen:
            seen.add(row)
            if drawn.mismatch[i] and len(keep_rows) < tiny.PROBE_SENTENCES:
                keep_rows.append(i)
    batch = drawn[np.array(keep_rows)]
    assert len(batch) == tiny.PROBE_SENTENCES
    stored = tiny.stored_probe(meta)  # the sentences the manifest keeps are these
    width = stored.ids.shape[1]
    assert np.array_equal(stored.ids, batch.ids[:, :width]) and not batch.ids[:, width:].any()
    for k in ("verb_at", "good", "bad"):
        assert np.array_equal(getattr(stored, k), getattr(batch, k))
    stored = {(a["layer"], a["head"]): a for a in meta["ablation"]}
    assert len(stored) == cfg.n_layer * cfg.n_head
    sums = {key: [0.0, 0.0, 0] for key in stored}
    for i in range(0, len(batch), 50):  # 50 sentences at a time, every head silenced in turn
        part = batch[i:i + 50]
        keep = {}
        full = llama.forward(w, part.ids, cfg.n_head, keep=keep)
        for j in range(len(part)):
            pos = part.verb_at[j]
            subject = 3 if corpus.VOCAB[part.ids[j, 2]] in corpus.ADJECTIVES else 2
            for (layer, h), acc in sums.items():
                acc[0] += keep["attn"][layer - 1][j, h, pos, subject]
        for (layer, h), acc in sums.items():
            mask = np.ones((cfg.n_layer, cfg.n_head))
            mask[layer - 1, h] = 0
            cut = training_pass.forward(w, part.ids, cfg.n_head, head_mask=mask)
            for j in range(len(part)):
                pos, good, bad = part.verb_at[j], part.good[j], part.bad[j]
                m = cut[j, pos, good] - cut[j, pos, bad]
                acc[1] += m - (full[j, pos, good] - full[j, pos, bad])
                acc[2] += m <= 0
    n = len(batch)
    for key, (attn, change, lost) in sums.items():
        assert abs(stored[key]["attention"] - attn / n) < 1e-4
        assert abs(stored[key]["change"] - change / n) < 1e-3
        assert stored[key]["lost"] == lost / n


def test_the_two_runs_show_attention_is_not_what_agreement_needs():
    """The misconceptions lesson's point, on shipped data: in seed0 the head that looks hardest at the
    subject is the one agreement needs; in seed1 it is not. How much one silenced head breaks is read from
    each run's ablation (the lesson's text follows it either way)."""
    facts = {f.key: f.value for f in engine.run_view("tiny-ablation").facts}
    for run in ("seed0", "seed1"):
        meta = tiny.load(tiny.RUNS[run])[2]
        assert meta["seed"] == int(run[-1]) and meta["agreement_mismatch"] >= 0.99
        lost = max(head["lost"] for head in meta["ablation"])
        assert facts[f"{run}_most_lost"] == lost and facts[f"{run}_spread"] is (lost < 0.05)
    assert facts["seed0_avg_same"] is True and facts["seed1_avg_same"] is False
    assert facts["seed0_avg_needed_lost"] > 0.3  # seed0's one head carries agreement: silenced, it breaks often
    assert facts["sentences"] == tiny.PROBE_SENTENCES


def _tiny_run():
    cfg = tiny.CONFIGS["small"]
    return tiny.init(cfg, 0), cfg


def _fail_in_savez(file, **arrays):
    import contextlib
    import os
    with open(file, "wb") if isinstance(file, (str, os.PathLike)) else contextlib.nullcontext(file) as f:
        f.write(b"PK\x03\x04 half a zip")  # some bytes reach the file before the disk fills
    raise OSError(28, "No space left on device")


def _fail_in_fsync(fd):
    raise OSError(28, "No space left on device")


@pytest.mark.parametrize("target, fail", [("numpy.savez", _fail_in_savez), ("os.fsync", _fail_in_fsync)])
def test_a_save_that_fails_leaves_the_old_file_whole(tmp_path, monkeypatch, target, fail):
    w, cfg = _tiny_run()
    out = tmp_path / "w.npz"
    tiny.save(out, w, cfg, {"seed": 0})
    before = out.read_bytes()
    monkeypatch.setattr(target, fail)
    with pytest.raises(OSError):
        tiny.save(out, {k: a + 1 for k, a in w.items()}, cfg, {"seed": 1})
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["w.npz"]  # no temporary file left behind
    assert tiny.load(out)[2]["seed"] == 0


def test_save_writes_the_name_it_is_given_with_the_usual_mode(tmp_path):
    import os
    w, cfg = _tiny_run()
    out = tmp_path / "weights.bin"
    tiny.save(out, w, cfg, {"seed": 0})
    assert [p.name for p in tmp_path.iterdir()] == ["weights.bin"]  # numpy adds .npz to a name, not to a file
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask
    assert all(np.array_equal(a, w[k]) for k, a in tiny.load(out)[0].items())


def test_weights_load_from_one_flat_array_or_one_array_each(tmp_path):
    """save() writes the weights as one array; a file from before that, one array per weight, still loads,
    and a flat array of the wrong size is refused, not cut."""
    import json

    from engine.records import asdict
    w, cfg = _tiny_run()
    out = tmp_path / "w.npz"
    tiny.save(out, w, cfg, {"seed": 0})
    with np.load(out) as data:
        assert data.files == ["__manifest__", "weights"] and data["weights"].dtype == np.float32
    old = tmp_path / "old.npz"
    meta = np.array(json.dumps({"config": asdict(cfg), "seed": 0}))
    np.savez(old, __manifest__=meta, **w)
    for path in (out, old):
        loaded = tiny.load(path)[0]
        assert set(loaded) == set(tiny.shapes(cfg))
        assert all(np.array_equal(loaded[k], w[k].astype(np.float32)) for k in w)
    with pytest.raises(ValueError, match="do not match"):  # the right size in the wrong shape is refused
        tiny.save(tmp_path / "t.npz", {**w, "0.wg": w["0.wg"].T.copy()}, cfg, {"seed": 0})
    whole = np.concatenate([w[k].astype(np.float32).ravel() for k in tiny.shapes(cfg)])
    for i, bad in enumerate((whole[:-1], np.append(whole, 0), whole.reshape(2, -1))):
        np.savez(tmp_path / f"bad{i}.npz", __manifest__=meta, weights=bad)
        with pytest.raises(ValueError, match="do not match"):
            tiny.load(tmp_path / f"bad{i}.npz")


def test_evaluating_in_chunks_gives_the_same_numbers(monkeypatch):
    w, cfg, _ = tiny.load()
    sentences = corpus.draw(450, 3, "held-out")
    chunked = tiny.evaluate(w, cfg, sentences)
    monkeypatch.setattr(tiny, "EVAL_CHUNK", 10**6)
    whole = tiny.evaluate(w, cfg, sentences)
    assert chunked["loss"] == pytest.approx(whole["loss"], rel=1e-6)
    assert chunked["agreement"] == whole["agreement"] and chunked["agreement_mismatch"] == whole["agreement_mismatch"]
    np.testing.assert_allclose(chunked["head_entropy"], whole["head_entropy"], rtol=1e-5)


@pytest.mark.slow
def test_training_the_big_config_stays_under_the_demo_memory_limit():
    """numpy reports its arrays to tracemalloc. One pass over every evaluation sentence once held all
    their activations: 1 GB for the big config at the default 4,000."""
    import tracemalloc
    cfg = replace(tiny.CONFIGS["big"], steps=1)
    tracemalloc.start()
    try:
        tiny.train(cfg, 0, n_eval=1000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < engine.errors.MAX_BYTES, f"{peak / 2**20:.0f} MiB"


@pytest.mark.parametrize("name", sorted(tiny.CONFIGS))
def test_load_checks_the_shapes_init_draws(name):
    cfg = tiny.CONFIGS[name]
    assert tiny.shapes(cfg) == {k: a.shape for k, a in tiny.init(cfg, 0).items()}
