"""Training on two cores: a forked helper computes the second half of each batch (engine/helper_process.py).

The weights must not depend on whether it ran, and the helper must never outlive training, hang it, or
stay behind as a zombie."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from engine import corpus, helper_process, tiny
from engine.records import replace

ROOT = Path(__file__).resolve().parent.parent
SHORT = replace(tiny.CONFIGS["main"], steps=60)
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the helper is forked on Linux only")


def children(pid: int) -> set[int]:
    """The live child processes of pid (Linux /proc)."""
    out = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        out |= {int(c) for c in (task / "children").read_text().split()}
    return out


def run(code: str, *args: str, timeout: float = 300) -> str:
    """code in a fresh python (one thread, so can_fork() holds), with one BLAS thread as the CLI sets."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@linux
@pytest.mark.slow
def test_the_weights_are_bit_identical_with_and_without_the_helper():
    out = run(f"""
import hashlib, os
from engine import tiny, helper_process
from engine.records import replace
cfg = replace(tiny.CONFIGS["main"], steps={SHORT.steps})
assert helper_process.can_fork()
before = set(os.listdir(f"/proc/{{os.getpid()}}/task"))
for processes in (1, 2, None):
    w, summary = tiny.train(cfg, 4, n_eval=250, processes=processes)  # 3 evaluation chunks: one odd out
    digest = hashlib.sha256(b"".join(w[k].tobytes() for k in sorted(w))).hexdigest()
    summary.pop("seconds", None)
    print(processes, digest, hashlib.sha256(repr(sorted(summary.items())).encode()).hexdigest())
""")
    lines = [line.split() for line in out.splitlines()]
    assert [p for p, *_ in lines] == ["1", "2", "None"]
    assert len({tuple(rest) for _, *rest in lines}) == 1, out  # the weights, and every figure of the summary


def test_the_halves_add_up_to_the_whole_batch():
    """batch_grads is the batch's mean loss and gradient, summed from halves (float64, so only the order of the
    sums differs); an odd batch and a batch of one work too."""
    cfg = tiny.TrainedLlamaConfig(d_model=8, n_layer=2, n_head=2, d_ff=12)
    ids = corpus.encode(corpus.draw(7, 3, "train"))
    for rows in (7, 6, 1):
        w = {k: v.astype(np.float64) for k, v in tiny.init(cfg, 0).items()}
        adam = tiny.Adam(w)
        whole, g = tiny.loss_and_grads(w, cfg, ids[:rows])
        parts = helper_process.parts(ids[:rows], corpus.INDEX[corpus.PAD], tiny.part_work(cfg))
        loss, flat = tiny.batch_grads(w, cfg, parts, adam)
        assert loss == pytest.approx(whole, rel=1e-12)
        np.testing.assert_allclose(flat, adam.flatten(g), rtol=1e-10, atol=1e-13)


@linux
def test_a_helper_that_dies_is_an_error_not_a_hang():
    cfg = tiny.CONFIGS["small"]
    w = tiny.init(cfg, 0)
    adam = tiny.Adam(w, shared=True)
    helper = helper_process.Helper({"grads": lambda ids, n: tiny.loss_and_grads(w, cfg, ids, n)}, adam)
    ids = corpus.draw_ids(np.random.default_rng(0), 8, "train").ids
    helper.start("grads", ids, 40.0)
    helper.finish()  # alive: one round trip works
    assert np.abs(helper.grad).sum() > 0
    os.kill(helper.pid, signal.SIGKILL)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="helper process ended"):
        helper.start("grads", ids, 40.0)
        helper.finish()
    assert time.monotonic() - started < 5
    helper.close()  # reaps it
    assert helper.pid not in children(os.getpid())


@linux
def test_a_failing_job_is_an_error_and_the_helper_goes_on():
    cfg = tiny.CONFIGS["small"]
    w = tiny.init(cfg, 0)
    adam = tiny.Adam(w, shared=True)

    def boom():
        raise ValueError("no such thing")

    helper = helper_process.Helper({"boom": boom, "double": lambda x: 2 * x}, adam)
    try:
        helper.start("boom")
        with pytest.raises(RuntimeError, match="boom: ValueError: no such thing"):
            helper.finish()
        helper.start("nothing")
        with pytest.raises(RuntimeError, match="KeyError"):
            helper.finish()
        helper.start("double", 21)
        assert helper.finish() == 42
    finally:
        helper.close()


@linux
@pytest.mark.parametrize("n", [250, 400])  # an odd and an even number of chunks
def test_evaluating_with_the_helper_gives_the_same_bits(n):
    cfg = tiny.CONFIGS["small"]
    w = tiny.init(cfg, 2)
    adam = tiny.Adam(w, shared=True)
    helper = helper_process.Helper({"evaluate": lambda part: tiny.evaluate_chunk(w, cfg, part)}, adam)
    try:
        held = corpus.draw_ids(np.random.default_rng(5), n, "held-out")
        alone, shared = tiny.evaluate(w, cfg, held), tiny.evaluate(w, cfg, held, helper)
    finally:
        helper.close()
    assert alone == shared and 0 < alone["agreement"] < 1


WORK = tiny.part_work(tiny.CONFIGS["main"])


def _cost(part, pad):  # helper_process' measure of work, from a part itself
    real, (count, span) = int((part[:, 1:] != pad).sum()), (part.shape[0], part.shape[1] - 1)
    return WORK.row * (real - 2 * count) + count * span * (WORK.position + WORK.score * span)


def test_the_parts_hold_every_sentence_once_trim_only_padding_and_cost_the_least():
    pad = corpus.INDEX[corpus.PAD]
    ids = corpus.draw_ids(np.random.default_rng(3), 64 * 20, "train").ids
    batches = np.split(ids, 20)
    together = helper_process.split_batches(np.stack(batches), pad, WORK)
    for batch, both in zip(batches, together):
        first, second = helper_process.parts(batch, pad, WORK)
        assert all(np.array_equal(a, b) for a, b in zip((first, second), both))  # alone or 20 at once: the same
        assert len(first) + len(second) == 64 and len(first) and len(second)
        width = batch.shape[1]
        whole = np.concatenate([np.pad(p, ((0, 0), (0, width - p.shape[1])), constant_values=pad)
                                for p in (first, second)])
        assert sorted(map(tuple, whole)) == sorted(map(tuple, batch))  # the same sentences, nothing cut off
        assert all((p[:, -1] != pad).any() for p in (first, second))  # each trimmed to its longest sentence
        by_length = batch[np.argsort((batch != pad).sum(1), kind="stable")]
        trim = lambda p: p[:, :(p != pad).sum(1).max()]  # noqa: E731
        handoff = WORK.handoff
        every_cut = [max(_cost(trim(by_length[:k]), pad), _cost(trim(by_length[k:]), pad) + handoff)
                     for k in range(1, 64)]
        mine, theirs = _cost(first, pad), _cost(second, pad) + handoff
        assert max(mine, theirs) == pytest.approx(min(every_cut), rel=1e-12)
        assert abs(mine - theirs) < 0.2 * theirs  # about even
    one = helper_process.parts(batch[:1], pad, WORK)
    assert len(one[0]) == 1 and len(one[1]) == 0


@linux
def test_the_helper_sees_each_update_of_the_shared_weights():
    """Its half's gradient follows the weights Adam writes: the same half gives a different gradient after a
    step, equal to this process's own computation."""
    cfg = tiny.CONFIGS["small"]
    w = tiny.init(cfg, 0)
    adam = tiny.Adam(w, shared=True)
    helper = helper_process.Helper({"grads": lambda ids, n: tiny.loss_and_grads(w, cfg, ids, n)}, adam)
    try:
        ids = corpus.draw_ids(np.random.default_rng(1), 8, "train").ids
        grads = []
        for _ in range(2):
            helper.start("grads", ids, 40.0)
            loss = helper.finish()
            mine, g = tiny.loss_and_grads(w, cfg, ids, 40.0)
            assert loss == mine and np.array_equal(helper.grad, adam.flatten(g))
            grads.append(helper.grad.copy())
            adam.step(g, 1e-2, 1.0)
        assert not np.array_equal(grads[0], grads[1])
    finally:
        helper.close()


@linux
@pytest.mark.slow
def test_no_helper_is_left_after_training_or_a_cancel():
    out = run(f"""
import os
from pathlib import Path
from engine import tiny, helper_process
from engine.records import replace
cfg = replace(tiny.CONFIGS["main"], steps={SHORT.steps})
me = os.getpid()
def kids():
    return [c for t in Path(f"/proc/{{me}}/task").iterdir() for c in (t / "children").read_text().split()]
seen = []
tiny.train(cfg, 0, n_eval=100, on_step=lambda s, l, w: seen.append(len(kids())))
print(max(seen), len(kids()))
tiny.train(cfg, 0, n_eval=100, stop=lambda: len(seen) > 70, on_step=lambda s, l, w: seen.append(len(kids())))
print(len(seen), len(kids()))
""")
    (during, after), (steps, after_cancel) = [map(int, line.split()) for line in out.splitlines()]
    assert during == 1 and after == 0  # one helper while training, none (not even a zombie) after
    assert steps == 71 and after_cancel == 0


@linux
@pytest.mark.slow
def test_a_killed_trainer_takes_its_helper_with_it():
    code = """
from engine import tiny
from engine.records import replace
cfg = replace(tiny.CONFIGS["main"], steps=100_000)
def on_step(step, loss, w):
    if step == 5:
        print("running", flush=True)
tiny.train(cfg, 0, n_eval=100, on_step=on_step)
"""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "running"
        helpers = children(proc.pid)
        assert len(helpers) == 1
        proc.kill()
        proc.wait()
        (helper,) = helpers
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and Path(f"/proc/{helper}").exists() and \
                Path(f"/proc/{helper}/stat").read_text().split()[2] != "Z":
            time.sleep(0.05)
        gone = not Path(f"/proc/{helper}").exists() or Path(f"/proc/{helper}/stat").read_text().split()[2] == "Z"
        assert gone, "the helper outlived its trainer"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()


def test_no_fork_while_another_thread_runs():
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert helper_process.can_fork() is False
    finally:
        release.set()
        other.join()


@linux
@pytest.mark.slow
def test_the_live_training_child_trains_on_helper_process():
    """The app's live run (tui/training.py) watches its stdin without a thread, so train() can fork its helper;
    "stop" still ends it."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    cfg = '{"d_model": 32, "n_layer": 2, "n_head": 4, "d_ff": 64, "steps": 100000}'
    proc = subprocess.Popen([sys.executable, "-m", "tui.training", cfg, "0"], cwd=ROOT, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert '"step"' in proc.stdout.readline()
        assert len(children(proc.pid)) == 1
        proc.stdin.write("stop\n")
        proc.stdin.flush()
        last = proc.stdout.read()
        assert proc.wait(timeout=30) == 0
        assert '"end": "stopped"' in last
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdin.close()
        proc.stdout.close()
