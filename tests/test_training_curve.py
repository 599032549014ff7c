"""The training curves tiny.train records in the manifest, and the charts tiny-heads draws from them.

The spreads are recomputed here from the attention maps with a plain entropy in float64, the loss windows
from the per-step losses on_step reports, and the weights of a short run from a training loop that records
nothing."""


import numpy as np
import pytest
from rich.cells import cell_len

import engine
from engine import corpus, helper_process, llama, tiny
from engine.records import replace

RUNS = {"seed0": 0, "seed1": 1}


@pytest.fixture(scope="module")
def shipped():
    return {run: tiny.load(path) for run, path in tiny.RUNS.items()}


def plain_spread(w, n_head, batch):
    """max / min over every head of its mean attention entropy, over the real query positions after the first."""
    inputs, targets = batch.ids[:, :-1], batch.ids[:, 1:]
    keep = {}
    llama.forward(w, inputs, n_head, keep=keep)
    real = targets != corpus.INDEX[corpus.PAD]  # [B, T]: this position predicts a real token
    real[:, 0] = False
    means = []
    for p in keep["attn"]:  # [B, H, T, T]
        p = p.astype(np.float64)
        logp = np.log(np.where(p > 0, p, 1.0))
        ent = -np.sum(p * logp, axis=-1)  # [B, H, T]
        for h in range(p.shape[1]):
            means.append(ent[:, h, :][real].mean())
    return max(means) / min(means)


# --- the shipped runs' curves ------------------------------------------------------------

@pytest.mark.parametrize("run", RUNS)
def test_the_shipped_curves_have_the_documented_steps(shipped, run):
    _, cfg, meta = shipped[run]
    c = meta["curve"]
    assert cfg.steps == meta["steps"] == 2000
    assert c["loss_every"] == tiny.CURVE_EVERY == 20 and c["spread_every"] == tiny.SPREAD_EVERY == 100
    assert c["loss_step"] == list(range(20, 2001, 20)) and len(c["loss"]) == 100
    assert c["spread_step"] == list(range(0, 2001, 100)) and len(c["spread"]) == 21
    assert c["spread_sentences"] == tiny.SPREAD_SENTENCES == 200


@pytest.mark.parametrize("run", RUNS)
def test_the_loss_curve_falls_to_the_floor_and_ends_at_the_last_loss(shipped, run):
    _, _, meta = shipped[run]
    loss, floor = meta["curve"]["loss"], meta["floor"]
    assert loss[0] > floor + 2  # the first 20 steps: near ln 52 = 3.95, far above the floor
    # the last window's mean, against the last step's loss: both within a few thousandths of the floor
    assert abs(loss[-1] - meta["train_loss"]) < 0.01
    assert all(abs(v - floor) < 0.02 for v in loss[-50:])  # the second half of training stays at the floor


@pytest.mark.parametrize("run", RUNS)
def test_the_spread_curve_is_measured_on_the_first_held_out_sentences(shipped, run):
    """The curve's ends are the spreads at init and trained on the first 200 held-out sentences; the
    manifest's entropy_spread_init and entropy_spread_trained are on all 4,000 of them. Recomputed here
    both ways: the subset gives the curve's ends, the whole set the manifest's figures."""
    w, cfg, meta = shipped[run]
    c = meta["curve"]
    held = corpus.draw_ids(np.random.default_rng([RUNS[run], 1]), 4000, "held-out")
    start = tiny.init(cfg, RUNS[run])
    assert plain_spread(start, cfg.n_head, held[:200]) == pytest.approx(c["spread"][0], rel=1e-5)
    assert plain_spread(w, cfg.n_head, held[:200]) == pytest.approx(c["spread"][-1], rel=1e-5)
    assert plain_spread(start, cfg.n_head, held) == pytest.approx(meta["entropy_spread_init"], rel=1e-5)
    assert plain_spread(w, cfg.n_head, held) == pytest.approx(meta["entropy_spread_trained"], rel=1e-5)
    # the subset is a sample: its ends are near the whole set's, not equal
    assert c["spread"][0] == pytest.approx(meta["entropy_spread_init"], rel=0.05)
    assert c["spread"][-1] == pytest.approx(meta["entropy_spread_trained"], rel=0.05)


# --- recording in a short run --------------------------------------------------------------

SHORT = replace(tiny.CONFIGS["small"], steps=130)


def unrecorded(cfg, seed):
    """train()'s weights with nothing measured along the way, and no helper process: init, the sentences, the
    gradients, Adam."""
    w = tiny.init(cfg, seed)
    rng = np.random.default_rng([seed, 2])
    adam = tiny.Adam(w)
    for step in range(cfg.steps):
        if step % tiny.TRAIN_CHUNK == 0:
            sentences = corpus.draw_ids(rng, tiny.TRAIN_CHUNK * cfg.batch, "train").ids
        at = step % tiny.TRAIN_CHUNK * cfg.batch
        parts = helper_process.parts(sentences[at:at + cfg.batch], corpus.INDEX[corpus.PAD],  # a batch at a time
                                     tiny.part_work(cfg))
        _, g = tiny.batch_grads(w, cfg, parts, adam)  # both halves in this process
        adam.step(g, tiny.lr_at(step, cfg), cfg.clip)
    return w


def test_recording_the_curve_leaves_the_weights_bit_identical():
    points = []
    w, summary = tiny.train(SHORT, 3, n_eval=300, on_curve=lambda *p: points.append(p))
    plain = unrecorded(SHORT, 3)
    assert set(w) == set(plain) and all(np.array_equal(w[k], plain[k]) for k in w)
    assert summary["curve"]["spread_step"] == [0, 100, 130] and len(points) == 6 + 3 + 1


def test_the_curve_is_the_window_means_of_each_step_and_readings_of_the_held_out_set():
    losses, weights, points = [], {}, []

    def on_step(step, loss, w):
        losses.append(loss)
        if step + 1 in (100, 130):
            weights[step + 1] = {k: a.copy() for k, a in w.items()}

    _, summary = tiny.train(SHORT, 3, on_step=on_step, n_eval=300, on_curve=lambda *p: points.append(p))
    c = summary["curve"]
    assert c["loss_step"] == [20, 40, 60, 80, 100, 120, 130]
    windows = [np.mean(losses[i:i + 20]) for i in range(0, 120, 20)] + [np.mean(losses[120:])]
    np.testing.assert_allclose(c["loss"], windows, rtol=1e-12)
    held = corpus.draw_ids(np.random.default_rng([3, 1]), 300, "held-out")[:200]
    assert c["spread_sentences"] == 200
    expected = [plain_spread(tiny.init(SHORT, 3), SHORT.n_head, held),
                plain_spread(weights[100], SHORT.n_head, held), plain_spread(weights[130], SHORT.n_head, held)]
    np.testing.assert_allclose(c["spread"], expected, rtol=1e-5)
    # on_curve saw each point as it was recorded, in order
    assert [p for p in points if p[0] == "loss"] == [("loss", s, v) for s, v in zip(c["loss_step"], c["loss"])]
    assert [p for p in points if p[0] == "spread"] == [("spread", s, v) for s, v in zip(c["spread_step"], c["spread"])]


def test_a_stopped_run_ends_its_curves_where_it_stopped():
    calls = []
    w, summary = tiny.train(SHORT, 3, n_eval=100, stop=lambda: len(calls) >= 50,
                            on_step=lambda step, loss, w: calls.append(loss))
    c = summary["curve"]
    assert summary["steps"] == 50 and c["loss_step"] == [20, 40, 50] and c["spread_step"] == [0, 50]
    assert c["loss"][-1] == pytest.approx(np.mean(calls[40:]), rel=1e-12)
    assert c["spread_sentences"] == 100  # all of a held set smaller than SPREAD_SENTENCES
    held = corpus.draw_ids(np.random.default_rng([3, 1]), 100, "held-out")
    assert c["spread"][-1] == pytest.approx(plain_spread(w, SHORT.n_head, held), rel=1e-5)


# --- the charts -------------------------------------------------------------------------

def chart(result, key):
    (found,) = [c for c in result.charts if c.key == key]
    return found


@pytest.mark.parametrize("run", RUNS)
def test_the_heads_view_charts_the_selected_runs_manifest(shipped, run):
    _, _, meta = shipped[run]
    c = meta["curve"]
    result = engine.run_view("tiny-heads", {"run": run})
    loss, spread = chart(result, "loss"), chart(result, "spread")
    assert loss.kind == spread.kind == "line"
    assert list(loss.x) == c["loss_step"] and loss.log_x and loss.x[0] > 0
    assert [s.label.en for s in loss.series] == ["training loss", "floor"]
    assert list(loss.series[0].values) == c["loss"] and list(loss.series[1].values) == [meta["floor"]] * 100
    assert list(spread.x) == c["spread_step"] and not spread.log_x
    assert [s.label.en for s in spread.series] == ["head spread"] and list(spread.series[0].values) == c["spread"]
    lo, hi = spread.y_range
    assert lo == 1.0 and all(lo <= v <= hi for v in c["spread"])
    (table,) = [t for t in result.tables if t.key == "curve"]
    assert [r[0] for r in table.rows] == c["spread_step"] and [r[2] for r in table.rows] == c["spread"]
    assert table.rows[0][1] is None and [r[1] for r in table.rows[1:]] == c["loss"][4::5]
    for text in [loss.title, spread.title, *(s.label for ch in (loss, spread) for s in ch.series)]:
        assert text.en and text.zh and text.en != text.zh
    assert all(cell_len(s.label(lang)) <= 14 for ch in (loss, spread) for s in ch.series for lang in ("en", "zh"))


def test_the_two_runs_chart_different_curves():
    a, b = (engine.run_view("tiny-heads", {"run": run}) for run in RUNS)
    assert chart(a, "loss").series[0].values != chart(b, "loss").series[0].values
    assert chart(a, "spread").series[0].values != chart(b, "spread").series[0].values
