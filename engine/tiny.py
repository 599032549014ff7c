"""The trained tiny Llama: the backward pass of llama.forward, Adam, training, saving and loading.

The forward pass is llama.forward, the same code the random-weight demo (random_llama.py) runs.
Shapes: B sentences, T positions, d = d_model, H heads of width hd, f = d_ff, V = n_vocab.
Everything runs in float32; Python floats (never numpy float64 scalars) scale the arrays, because
numpy 2 would otherwise promote whole arrays to float64 and double the step time.
"""

import math
from dataclasses import dataclass

import numpy as np

from . import corpus, llama
from .ops import merge_heads, split_heads
from .positions import rotate_pairs

EPS = 1e-5
F32 = np.float32


@dataclass(frozen=True)
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
    "big": TrainedLlamaConfig(d_model=64, n_layer=4, n_head=8, d_ff=128, steps=750, lr=2e-3),  # ~30 s: the live demo
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


def n_params(w) -> int:
    return sum(a.size for a in w.values())


# --- the backward pass of llama.forward ------------------------------------------------------

def rms_back(dy, x, g):  # the gradient through rms_norm(x, g): dx, dg
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS)
    u = dy * g
    dx = r * u - (r ** 3) * x * np.mean(x * u, axis=-1, keepdims=True)
    dg = np.sum(dy * x * r, axis=tuple(range(dy.ndim - 1)))
    return dx, dg


def loss_and_grads(w, cfg: TrainedLlamaConfig, ids):
    """Mean cross-entropy of predicting each next token (padding excluded), and its gradient for every weight."""
    keep = {}
    logits = llama.forward(w, ids[:, :-1], cfg.n_head, keep=keep)
    targets = ids[:, 1:]
    valid = (targets != corpus.INDEX[corpus.PAD]).astype(F32)
    n = float(valid.sum())
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    picked = np.take_along_axis(logp, targets[..., None], -1)[..., 0]
    loss = float(-(picked * valid).sum() / n)

    hd = cfg.d_model // cfg.n_head
    g = {}
    dlogits = np.exp(logp)
    np.put_along_axis(dlogits, targets[..., None], np.take_along_axis(dlogits, targets[..., None], -1) - 1.0, -1)
    dlogits *= valid[..., None] * (1.0 / n)
    g["head"] = np.einsum("btd,btv->dv", keep["hf"], dlogits)
    dx, g["norm_f"] = rms_back(dlogits @ w["head"].T, keep["x_out"], w["norm_f"])
    cos, sin = keep["cos"], keep["sin"]
    for i in reversed(range(cfg.n_layer)):
        c = keep["layers"][i]
        # feed-forward
        g[f"{i}.wd"] = np.einsum("btf,btd->fd", c["m"], dx)
        dm = dx @ w[f"{i}.wd"].T
        gate, up = c["gate"], c["up"]
        sg = 1.0 / (1.0 + np.exp(-gate))
        dup = dm * gate * sg
        dgate = dm * up * sg * (1.0 + gate * (1.0 - sg))
        g[f"{i}.wg"] = np.einsum("btd,btf->df", c["h2"], dgate)
        g[f"{i}.wu"] = np.einsum("btd,btf->df", c["h2"], dup)
        dh2 = dgate @ w[f"{i}.wg"].T + dup @ w[f"{i}.wu"].T
        dxn, g[f"{i}.norm2"] = rms_back(dh2, c["x_mid"], w[f"{i}.norm2"])
        dx = dx + dxn
        # attention
        p, v = c["p"], c["v"]
        g[f"{i}.wo"] = np.einsum("btd,bte->de", c["heads"], dx)
        do = split_heads(dx @ w[f"{i}.wo"].T, cfg.n_head)  # [B, H, T, hd]
        dp = do @ np.swapaxes(v, -1, -2)
        dv = np.swapaxes(p, -1, -2) @ do
        ds = p * (dp - (dp * p).sum(-1, keepdims=True)) * (1.0 / math.sqrt(hd))
        dq = rotate_pairs(ds @ c["kr"], cos, -sin)
        dk = rotate_pairs(np.swapaxes(ds, -1, -2) @ c["qr"], cos, -sin)
        dh = 0.0
        for name, dt in (("wq", dq), ("wk", dk), ("wv", dv)):
            dflat = merge_heads(dt)  # [B, T, d]
            g[f"{i}.{name}"] = np.einsum("btd,bte->de", c["h"], dflat)
            dh = dh + dflat @ w[f"{i}.{name}"].T
        dxn, g[f"{i}.norm1"] = rms_back(dh, c["x_in"], w[f"{i}.norm1"])
        dx = dx + dxn
    g["embed"] = np.zeros_like(w["embed"])
    np.add.at(g["embed"], ids[:, :-1], dx)
    return loss, g


# --- training ---------------------------------------------------------------------------

def lr_at(step: int, cfg: TrainedLlamaConfig) -> float:
    """Linear warm-up, then cosine decay to a fiftieth."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    t = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * t)))


class Adam:
    def __init__(self, w, b1=0.9, b2=0.99, eps=1e-8):
        self.m = {k: np.zeros_like(a) for k, a in w.items()}
        self.v = {k: np.zeros_like(a) for k, a in w.items()}
        self.b1, self.b2, self.eps, self.t = b1, b2, eps, 0

    def step(self, w, g, lr: float, clip: float) -> float:
        """One update with gradients clipped to a global norm; returns the norm before clipping."""
        norm = math.sqrt(sum(float(np.sum(a * a)) for a in g.values()))
        scale = min(1.0, clip / (norm + 1e-12))
        self.t += 1
        c1, c2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        for k, a in w.items():
            gk = g[k] * scale
            self.m[k] = self.b1 * self.m[k] + (1 - self.b1) * gk
            self.v[k] = self.b2 * self.v[k] + (1 - self.b2) * gk * gk
            a -= (lr / c1) * self.m[k] / (np.sqrt(self.v[k] * (1.0 / c2)) + self.eps)
        return norm


# --- measuring ----------------------------------------------------------------------------

EVAL_CHUNK = 100  # sentences per forward pass in evaluate: under 30 MiB of arrays for the big config, any count


def evaluate(w, cfg: TrainedLlamaConfig, sentences) -> dict:
    """Loss per token, agreement accuracy (all, and where the distractor's number differs), on sentences.

    Run EVAL_CHUNK sentences at a time: one pass over 4,000 would hold every layer's activations for all
    of them at once (1 GB for the big config)."""
    nll, n_tok, right, mismatch, ent, n_rows = 0.0, 0, [], [], 0.0, 0
    for lo in range(0, len(sentences), EVAL_CHUNK):
        part = sentences[lo:lo + EVAL_CHUNK]
        ids = corpus.encode(part)
        keep = {}
        logits = llama.forward(w, ids[:, :-1], cfg.n_head, keep=keep)
        targets = ids[:, 1:]
        valid = targets != corpus.INDEX[corpus.PAD]
        z = logits - logits.max(-1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
        picked = np.take_along_axis(logp, targets[..., None], -1)[..., 0]
        nll, n_tok = nll - float(picked[valid].sum(dtype=np.float64)), n_tok + int(valid.sum())
        for i, s in enumerate(part):
            if s.verb_at is None:
                continue
            good, bad = corpus.verb_pair(s)
            ok = logits[i, s.verb_at, good] > logits[i, s.verb_at, bad]  # position verb_at predicts token verb_at+1
            right.append(ok)
            if s.mismatch:
                mismatch.append(ok)
        rows = int(valid[:, 1:].sum())  # the rows head_entropies averages over
        ent, n_rows = ent + np.array(head_entropies(keep["attn"], valid)) * rows, n_rows + rows
    return {"loss": nll / n_tok, "agreement": float(np.mean(right)),
            "agreement_mismatch": float(np.mean(mismatch)), "head_entropy": (ent / n_rows).tolist()}


def head_entropies(attn, valid) -> list[list[float]]:
    """Mean attention entropy of each head, over the real query positions after the first."""
    out = []
    for p in attn:  # [B, H, T, T]
        ent = -(p * np.log(np.where(p > 0, p, 1.0))).sum(-1)  # [B, H, T]
        rows = valid.copy()
        rows[:, 0] = False  # position 0 sees only itself
        out.append([float(ent[:, h][rows].mean()) for h in range(p.shape[1])])
    return out


def spread(entropies) -> float:
    """Max over min of the heads' mean entropies, over every layer."""
    flat = [e for layer in entropies for e in layer]
    return max(flat) / min(flat)


def train(cfg: TrainedLlamaConfig, seed: int = 0, on_step=None, stop=None, n_eval: int = 4000):
    """Train from scratch; returns (weights, summary). on_step(step, loss, w) is called every step;
    stop() returning True ends training early (the app's cancel).

    The loss is measured on fresh draws from the training distribution, and agreement on sentences
    that never appear in training. (The loss on those unseen sentences is reported too; it stays a
    little above the floor by design: training never shows them, so a model that fits its training
    distribution gives them slightly less probability than the grammar does.)
    """
    w = init(cfg, seed)
    held = corpus.draw(n_eval, seed, "held-out")
    fresh = corpus.draw(n_eval, seed, "train")
    start = evaluate(w, cfg, held)
    rng = np.random.default_rng([seed, 2])
    adam = Adam(w)
    loss, done = float("nan"), 0
    for step in range(cfg.steps):
        if stop is not None and stop():
            break
        batch = corpus.encode([_train_sentence(rng) for _ in range(cfg.batch)])
        loss, g = loss_and_grads(w, cfg, batch)
        adam.step(w, g, lr_at(step, cfg), cfg.clip)
        done = step + 1
        if on_step is not None:
            on_step(step, loss, w)
    end = evaluate(w, cfg, held)
    summary = {"loss": evaluate(w, cfg, fresh)["loss"], "loss_unseen": end["loss"], "train_loss": loss,
               "floor": corpus.entropy_floor()[2], "steps": done,
               "agreement": end["agreement"], "agreement_mismatch": end["agreement_mismatch"],
               "entropy_spread_init": spread(start["head_entropy"]),
               "entropy_spread_trained": spread(end["head_entropy"]),
               "head_entropy_init": start["head_entropy"], "head_entropy_trained": end["head_entropy"]}
    return w, summary


def _train_sentence(rng):
    while True:
        s = corpus.sample(rng)
        if not corpus.held_out(s):
            return s


# --- saving and loading ---------------------------------------------------------------------

SHIPPED = __import__("pathlib").Path(__file__).resolve().parent / "data" / "tiny-main.npz"
RUNS = {"seed0": SHIPPED, "seed1": SHIPPED.with_name("tiny-main-seed1.npz")}  # two runs of the main config


def save(path, w, cfg: TrainedLlamaConfig, manifest: dict) -> None:
    """float32 weights and a JSON manifest (config, seed, steps, losses, floor, accuracies) in one .npz,
    written whole or not at all: into a temporary file beside `path`, synced, then renamed over it, so a
    full disk or a kill mid-save leaves any old file as it was. `path` is used as given (no .npz added)."""
    import dataclasses
    import json
    import os
    import tempfile
    from pathlib import Path

    path = Path(path)
    meta = {"config": dataclasses.asdict(cfg), **manifest}
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(f.fileno(), 0o666 & ~umask)  # the mode a plain open() would give, not mkstemp's 0600
            np.savez(f, __manifest__=np.array(json.dumps(meta)), **{k: a.astype(F32) for k, a in w.items()})
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load(path=SHIPPED):
    """(weights, config, manifest) from a file that save() wrote."""
    import json

    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["__manifest__"]))
        w = {k: data[k].astype(F32) for k in data.files if k != "__manifest__"}
    cfg = TrainedLlamaConfig(**meta["config"])
    expected = init(cfg, 0)
    if set(w) != set(expected) or any(w[k].shape != expected[k].shape for k in w):
        raise ValueError(f"{path}: the weights do not match their manifest's config")
    return w, cfg, meta
