"""The trained tiny Llama: training (with adam.Adam), measuring, saving and loading.

The model is llama.forward's, the code the lessons show; training runs the same sums in training_pass.py,
forward and backward, fast, and helper_process.py lends it a second core.
Shapes: B sentences, T positions, d = d_model, H heads of width hd, f = d_ff, V = n_vocab.
Everything runs in float32; Python floats (never numpy float64 scalars) scale the arrays, because
numpy 2 would otherwise promote whole arrays to float64 and double the step time.
"""

import math

import numpy as np

from . import corpus, helper_process, llama, training_pass
from .adam import Adam
from .ops import log_softmax
from .records import record

F32 = np.float32


@record
class TrainedLlamaConfig:
    d_model: int = 32
    n_layer: int = 2
    n_head: int = 4
    d_ff: int = 64
    n_vocab: int = len(corpus.VOCAB)
    steps: int = 2000
    batch: int = 64
    lr: float = 3e-3
    warmup: int = 100
    clip: float = 1.0


CONFIGS = {
    "small": TrainedLlamaConfig(d_model=16, n_layer=1, n_head=2, d_ff=32, steps=800),
    "main": TrainedLlamaConfig(),
    "big": TrainedLlamaConfig(d_model=64, n_layer=4, n_head=8, d_ff=128, steps=750, lr=2e-3),  # the live demo
}


def init(cfg: TrainedLlamaConfig, seed: int) -> dict[str, np.ndarray]:
    """Matrices N(0, 1/fan_in); the two matrices that write into the residual stream scaled by 1/sqrt(2 n_layer).

    One stream for every weight, unlike random_llama's stream per layer: the shipped runs were drawn this way."""
    rng = np.random.default_rng(seed)
    d, f, v = cfg.d_model, cfg.d_ff, cfg.n_vocab
    branch = 1 / math.sqrt(2 * cfg.n_layer)

    def mat(n_in, n_out, gain=1.0):
        return (rng.standard_normal((n_in, n_out)) * (gain / math.sqrt(n_in))).astype(F32)

    w = {"embed": rng.standard_normal((v, d)).astype(F32), "norm_f": np.ones(d, F32), "head": mat(d, v)}
    for i in range(cfg.n_layer):
        w.update({f"{i}.norm1": np.ones(d, F32), f"{i}.wq": mat(d, d), f"{i}.wk": mat(d, d), f"{i}.wv": mat(d, d),
                  f"{i}.wo": mat(d, d, branch), f"{i}.norm2": np.ones(d, F32), f"{i}.wg": mat(d, f),
                  f"{i}.wu": mat(d, f), f"{i}.wd": mat(f, d, branch)})
    return w


def shapes(cfg: TrainedLlamaConfig) -> dict[str, tuple[int, ...]]:
    """Every weight's shape, as init draws it: load checks a file against these without drawing (numpy.random
    costs a print of a tiny-* view about 8 ms)."""
    d, f, v = cfg.d_model, cfg.d_ff, cfg.n_vocab
    out = {"embed": (v, d), "norm_f": (d,), "head": (d, v)}
    for i in range(cfg.n_layer):
        out.update({f"{i}.norm1": (d,), f"{i}.wq": (d, d), f"{i}.wk": (d, d), f"{i}.wv": (d, d), f"{i}.wo": (d, d),
                    f"{i}.norm2": (d,), f"{i}.wg": (d, f), f"{i}.wu": (d, f), f"{i}.wd": (f, d)})
    return out


def n_params(w) -> int:
    return sum(a.size for a in w.values())


def loss_and_grads(w, cfg: TrainedLlamaConfig, ids, n=None):
    """Mean cross-entropy of predicting each next token of ids [B, T] (padding excluded), and its gradient for
    every weight: training_pass.loss_and_grads. n, if given, is the count of real targets to divide by (the
    whole batch's, of which ids is a part)."""
    return training_pass.loss_and_grads(w, cfg.n_head, ids, corpus.INDEX[corpus.PAD], n)


# --- training ---------------------------------------------------------------------------

def lr_at(step: int, cfg: TrainedLlamaConfig) -> float:
    """Linear warm-up, then cosine decay to a fiftieth."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    t = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * t)))


def part_work(cfg: TrainedLlamaConfig) -> "helper_process.Work":
    """How helper_process weighs a part of a batch for this config: training_pass.work's counts, and the helper's
    gradient (every parameter) as its handoff."""
    row, position, score = training_pass.work(cfg.d_model, cfg.n_layer, cfg.n_head, cfg.n_head, cfg.d_ff,
                                              cfg.n_vocab)
    return helper_process.Work(row, position, score, handoff=sum(math.prod(s) for s in shapes(cfg).values()))


def batch_grads(w, cfg: TrainedLlamaConfig, parts, adam: Adam, helper: "helper_process.Helper | None" = None):
    """A batch's mean loss and its gradient, flat in Adam's order, as the sum of its two parts' (the pair that
    helper_process.parts cuts it into): the first part's plus the second's, each divided by the whole batch's count of
    real targets. A helper computes the second part meanwhile; without one, this process computes it after the
    first. The sum is the same either way, so a run's weights are bit for bit the same with a helper or without."""
    first, second = parts
    pad = corpus.INDEX[corpus.PAD]
    n = float((first[:, 1:] != pad).sum() + (second[:, 1:] != pad).sum())
    if helper is not None and len(second):
        helper.start("grads", second, n)
    loss, g = loss_and_grads(w, cfg, first, n)
    flat = adam.flatten(g)
    if len(second):
        if helper is not None:
            loss += helper.finish()
            flat += helper.grad
        else:
            more, g = loss_and_grads(w, cfg, second, n)
            loss += more
            flat += adam.flatten(g)
    return loss, flat


# --- measuring ----------------------------------------------------------------------------

EVAL_CHUNK = 100  # sentences per forward pass in evaluate: under 30 MiB of arrays for the big config, any count


def evaluate(w, cfg: TrainedLlamaConfig, sentences, helper: "helper_process.Helper | None" = None) -> dict:
    """Loss per token, agreement accuracy (all, and where the distractor's number differs), on sentences
    (a corpus.Batch, or a list of corpus.Sentence).

    Run EVAL_CHUNK sentences at a time: one pass over 4,000 would hold every layer's activations for all
    of them at once (1 GB for the big config). A helper (from train()) runs every other chunk; the chunks'
    sums are added in order either way, so the result is the same to the last bit."""
    batch = corpus.as_batch(sentences)
    chunks = [batch[lo:lo + EVAL_CHUNK] for lo in range(0, len(batch), EVAL_CHUNK)]
    sums = helper_process.alternate(helper, "evaluate", [(c,) for c in chunks], lambda c: evaluate_chunk(w, cfg, c))
    nll, n_tok, ent, n_rows = 0.0, 0, 0.0, 0
    for picked, tokens, _, _, weighted, rows in sums:
        nll, n_tok = nll - picked, n_tok + tokens
        ent, n_rows = ent + weighted, n_rows + rows
    right, mismatch = np.concatenate([s[2] for s in sums]), np.concatenate([s[3] for s in sums])
    return {"loss": nll / n_tok, "agreement": float(np.mean(right)),
            "agreement_mismatch": float(np.mean(mismatch)), "head_entropy": (ent / n_rows).tolist()}


def evaluate_chunk(w, cfg: TrainedLlamaConfig, part) -> tuple:
    """evaluate()'s sums over one chunk: the log-probability of its real targets, their count, whether each
    agreement sentence is right, the same for those whose distractor differs in number, each head's entropy
    times the rows it is averaged over, and that count of rows."""
    keep = {}
    targets = part.ids[:, 1:]
    valid = targets != corpus.INDEX[corpus.PAD]
    prefixes = training_pass.Prefixes(part.ids[:, :-1], valid)
    logits = training_pass.forward(w, prefixes, cfg.n_head, keep=keep)  # [M, n_vocab]: a row per distinct prefix
    picked = log_softmax(logits)[prefixes.at[valid], targets[valid]]
    agrees = np.flatnonzero(part.verb_at >= 0)
    at = logits[prefixes.at[agrees, part.verb_at[agrees]]]  # [k, n_vocab]: position verb_at predicts the verb
    ok = at[np.arange(len(at)), part.good[agrees]] > at[np.arange(len(at)), part.bad[agrees]]
    rows = int(valid[:, 1:].sum())  # the rows head_entropies averages over
    return (float(picked.sum(dtype=np.float64)), int(valid.sum()), ok, ok[part.mismatch[agrees]],
            np.array(head_entropies(keep["attn"], valid)) * rows, rows)


def head_entropies(attn, valid) -> list[list[float]]:
    """Mean attention entropy of each head, over the real query positions after the first."""
    rows = valid.copy()
    rows[:, 0] = False  # position 0 sees only itself
    out = []
    for p in attn:  # [B, H, T, T]
        ent = -(p * np.log(np.where(p > 0, p, 1.0))) @ np.ones(p.shape[-1], p.dtype)  # [B, H, T]: row sums
        out.append([float(ent[:, h][rows].mean()) for h in range(p.shape[1])])
    return out


def spread(entropies) -> float:
    """Max over min of the heads' mean entropies, over every layer."""
    flat = [e for layer in entropies for e in layer]
    return max(flat) / min(flat)


PROBE_SENTENCES = 300  # distinct unseen sentences whose distractor has the other number
PROBE_SEED = 11


def probe_sentences(n: int = PROBE_SENTENCES, seed: int = PROBE_SEED) -> "corpus.Batch":
    """The hard sentences the lessons measure a trained run on: the first n distinct held-out sentences drawn
    with this seed whose distractor has the other number. Training stores them in the manifest (`probe`), so
    the views need not draw them; a test draws them again and compares."""
    drawn = corpus.draw_ids(np.random.default_rng(seed), n * 10, "held-out")
    first = np.sort(np.unique(drawn.ids, axis=0, return_index=True)[1])  # each distinct sentence once, in order
    return drawn[first[drawn.mismatch[first]][:n]]


def probe_record(batch) -> dict:
    """A Batch as the manifest keeps it: plain lists, each sentence cut after its last real token."""
    length = int((batch.ids != corpus.INDEX[corpus.PAD]).sum(1).max())
    return {"ids": batch.ids[:, :length].tolist(), "verb_at": batch.verb_at.tolist(),
            "good": batch.good.tolist(), "bad": batch.bad.tolist()}


def stored_probe(meta: dict) -> "corpus.Batch":
    """The probe sentences a manifest keeps, as a Batch."""
    rec = meta["probe"]
    ids = np.array(rec["ids"], dtype=np.int64)
    return corpus.Batch(ids, *(np.array(rec[k], dtype=np.int64) for k in ("verb_at", "good", "bad")),
                        np.ones(len(ids), dtype=bool))


def ablation(w, cfg: TrainedLlamaConfig, batch, helper: "helper_process.Helper | None" = None) -> list[dict]:
    """Per head, over the probe sentences (probe_sentences): the mean attention from the position that predicts
    the verb to the subject, the mean change in the agreement margin (logit of the right verb form minus the
    wrong one) when the head's output is set to zero, and the share of sentences where the wrong form then
    wins. Training stores it in the manifest; a test recomputes it. A helper silences every other head."""
    ids, pos, rows = batch.ids, batch.verb_at, np.arange(len(batch))
    subj = np.where(np.isin(ids[:, 2], [corpus.INDEX[a] for a in corpus.ADJECTIVES]), 3, 2)  # after "the" (adj)
    base, attn = margins(w, cfg, batch)
    heads = [(layer, h) for layer in range(cfg.n_layer) for h in range(cfg.n_head)]
    masks = [np.ones((cfg.n_layer, cfg.n_head)) for _ in heads]
    for mask, head in zip(masks, heads):
        mask[head] = 0  # that head silenced
    cut = helper_process.alternate(helper, "margins", [(batch, m) for m in masks],
                                   lambda b, m: margins(w, cfg, b, m)[0])
    return [{"layer": layer + 1, "head": h, "attention": float(attn[layer][rows, h, pos, subj].mean()),
             "change": float((m - base).mean()), "lost": float(np.mean(m <= 0))} for (layer, h), m in zip(heads, cut)]


def margins(w, cfg: TrainedLlamaConfig, batch, mask=None):  # -> [n] float64, the attention maps
    """The agreement margin of each sentence (logit of the right verb form minus the wrong one where the verb is
    predicted), with the heads that mask marks 0 silenced (llama.silence_heads); and the attention maps. The
    lessons show these numbers, so they come from llama.forward, the code the code key shows."""
    rows, pos = np.arange(len(batch)), batch.verb_at
    if mask is not None:
        w = llama.silence_heads(w, mask, cfg.n_head)
    keep = {}
    inputs = batch.ids[:, : pos.max() + 1]  # all that is read is at pos, and causal attention sees nothing later
    at = llama.forward(w, inputs, cfg.n_head, keep=keep)[rows, pos]  # [n, n_vocab]
    return (at[rows, batch.good] - at[rows, batch.bad]).astype(np.float64), keep["attn"]


TRAIN_CHUNK = 50  # steps whose sentences are drawn together: few numpy calls, little memory
CURVE_EVERY = 20  # steps in each window of the loss curve: a point is the mean training loss over its window
SPREAD_EVERY = 100  # steps between readings of the head entropy spread
SPREAD_SENTENCES = 200  # each reading's held-out sentences: the first of train()'s held set (all, if fewer)


def train(cfg: TrainedLlamaConfig, seed: int = 0, on_step=None, stop=None, n_eval: int = 4000, on_curve=None,
          on_reading=None, processes: int | None = None, probe: bool = True):
    """Train from scratch; returns (weights, summary). on_step(step, loss, w) is called every step;
    stop() returning True ends training early (the app's cancel). probe=False leaves probe_summary() out of
    the summary (the app's live run shows none of it, and for the big config it takes seconds).

    Each step's gradient is batch_grads(): the sum of the batch's two parts. processes=2 computes the second
    part (and half of each evaluation and of the ablation) in a helper_process.Helper process, 1 in this one; None
    (the default) uses a helper where helper_process.can_fork() says one may run. The weights and the summary are
    bit for bit the same either way.

    The loss is measured on fresh draws from the training distribution, and agreement on sentences
    that never appear in training. (The loss on those unseen sentences is reported too; it stays a
    little above the floor by design: training never shows them, so a model that fits its training
    distribution gives them slightly less probability than the grammar does.)

    summary["curve"] records training as it went, in two curves of (step, value) pairs:
        loss_step, loss      the mean training loss over each window of CURVE_EVERY steps, at the step
                             that ends the window (20, 40, ...); a run that stops mid-window ends with the
                             mean of its partial window, at the step it stopped;
        spread_step, spread  spread() of the head entropies on the first SPREAD_SENTENCES held-out
                             sentences, before training (step 0), every SPREAD_EVERY steps and at the end.
    These sentences are a subset of the ones entropy_spread_init and entropy_spread_trained average over, so
    the first and last spreads are near those, not equal to them. on_curve(name, step, value), name "loss" or
    "spread", is called with each point as it is recorded (what a live chart draws); on_reading(step, result)
    with the whole evaluate() result behind each spread point (agreement too, for a progress line).
    Recording reads the weights and no random stream: the weights are bit for bit those of a run without it.
    """
    w = init(cfg, seed)
    held = corpus.draw_ids(np.random.default_rng([seed, 1]), n_eval, "held-out")
    fresh = corpus.draw_ids(np.random.default_rng([seed, 0]), n_eval, "train")
    rng = np.random.default_rng([seed, 2])
    two = helper_process.can_fork() if processes is None else processes == 2
    adam = Adam(w, shared=two)
    helper = helper_process.Helper({"grads": lambda ids, n: loss_and_grads(w, cfg, ids, n),
                               "evaluate": lambda part: evaluate_chunk(w, cfg, part),
                               "margins": lambda batch, mask: margins(w, cfg, batch, mask)[0]}, adam) if two else None
    try:
        start = evaluate(w, cfg, held, helper)
        done, loss, curve = _steps(w, cfg, adam, helper, rng, held[:SPREAD_SENTENCES], on_step, stop, on_curve,
                                    on_reading)
        end, fresh_loss = evaluate(w, cfg, held, helper), evaluate(w, cfg, fresh, helper)["loss"]
        probed = probe_summary(w, cfg, helper) if probe else {}
    finally:
        if helper is not None:
            helper.close()
    summary = {"loss": fresh_loss, "loss_unseen": end["loss"], "train_loss": loss,
               "floor": corpus.entropy_floor()[2], "steps": done,
               "agreement": end["agreement"], "agreement_mismatch": end["agreement_mismatch"],
               "entropy_spread_init": spread(start["head_entropy"]),
               "entropy_spread_trained": spread(end["head_entropy"]),
               "head_entropy_init": start["head_entropy"], "head_entropy_trained": end["head_entropy"],
               "curve": curve, **probed}
    return w, summary


def _steps(w, cfg, adam, helper, rng, few, on_step, stop, on_curve, on_reading):
    """train()'s loop: the steps done, the last step's loss, the curves."""
    curve = {"loss_every": CURVE_EVERY, "loss_step": [], "loss": [],
             "spread_every": SPREAD_EVERY, "spread_sentences": len(few), "spread_step": [], "spread": []}

    def record(name, step, value):
        curve[f"{name}_step"].append(step)
        curve[name].append(value)
        if on_curve is not None:
            on_curve(name, step, value)

    def read(step):  # the spread on the held-out few, with the weights after `step` updates
        result = evaluate(w, cfg, few, helper)
        record("spread", step, spread(result["head_entropy"]))
        if on_reading is not None:
            on_reading(step, result)

    loss, done, window = float("nan"), 0, 0.0
    for step in range(cfg.steps):
        if stop is not None and stop():
            break
        if step % SPREAD_EVERY == 0:  # the weights after `step` updates
            read(step)
        if step % TRAIN_CHUNK == 0:  # sentences for the next TRAIN_CHUNK steps, drawn and cut in parts at once
            sentences = corpus.draw_ids(rng, TRAIN_CHUNK * cfg.batch, "train").ids
            batches = helper_process.split_batches(sentences.reshape(TRAIN_CHUNK, cfg.batch, -1),
                                                   corpus.INDEX[corpus.PAD], part_work(cfg))
        loss, g = batch_grads(w, cfg, batches[step % TRAIN_CHUNK], adam, helper)
        adam.step(g, lr_at(step, cfg), cfg.clip)
        done = step + 1
        window += loss
        if done % CURVE_EVERY == 0:
            record("loss", done, window / CURVE_EVERY)
            window = 0.0
        if on_step is not None:
            on_step(step, loss, w)
    if done % CURVE_EVERY:
        record("loss", done, window / (done % CURVE_EVERY))
    read(done)  # the loop's last reading came before a step
    return done, loss, curve


def probe_summary(w, cfg: TrainedLlamaConfig, helper: "helper_process.Helper | None" = None) -> dict:
    """What training stores about the probe sentences: the sentences, and the head ablation on them."""
    batch = probe_sentences()
    return {"probe": probe_record(batch), "ablation": ablation(w, cfg, batch, helper)}


# --- saving and loading ---------------------------------------------------------------------

SHIPPED = __import__("pathlib").Path(__file__).resolve().parent / "data" / "tiny-main.npz"
RUNS = {"seed0": SHIPPED, "seed1": SHIPPED.with_name("tiny-main-seed1.npz")}  # two runs of the main config


def save(path, w, cfg: TrainedLlamaConfig, manifest: dict) -> None:
    """The weights as one float32 array in shapes(cfg)'s order (numpy parses each array's header with
    ast.literal_eval, one array is one parse) and a JSON manifest (config, seed, steps, losses, floor, accuracies,
    curves) in one .npz, written whole or not at all by files.write_atomic. `path` is used as given (no .npz
    added). A file replaced keeps its mode, and its owner where this process may give it; a link at `path` is
    replaced by the file, never written through."""
    import io
    import json

    from .files import write_atomic
    from .records import asdict

    expected = shapes(cfg)
    if set(w) != set(expected) or any(np.shape(w[k]) != s for k, s in expected.items()):  # flat, a [d_ff, d] for
        raise ValueError("the weights do not match the config")  # a [d, d_ff] would load back scrambled
    meta = {"config": asdict(cfg), **manifest}
    data = io.BytesIO()
    np.savez(data, __manifest__=np.array(json.dumps(meta)),
             weights=np.concatenate([w[k].astype(F32).ravel() for k in expected]))
    write_atomic(path, data.getvalue(), mode=None)  # mode None: as a plain open() would, or the replaced file's


def load(path=SHIPPED):
    """(weights, config, manifest) from a file that save() wrote."""
    import json
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["__manifest__"]))
        cfg = TrainedLlamaConfig(**meta["config"])
        expected = shapes(cfg)
        if "weights" in data.files:  # save()'s one array, cut at the weights' sizes; {} if they do not add up
            a, ends = data["weights"].astype(F32), np.cumsum([math.prod(s) for s in expected.values()])
            w = {k: a[e - math.prod(s):e].reshape(s) for (k, s), e in zip(expected.items(), ends)
                 if a.shape == (ends[-1],)}
        else:  # a file from an earlier version: one array per weight
            w = {k: data[k].astype(F32) for k in data.files if k != "__manifest__"}
    if set(w) != set(expected) or any(w[k].shape != expected[k] for k in w):
        raise ValueError(f"{path}: the weights do not match their manifest's config")
    return w, cfg, meta

