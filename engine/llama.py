"""A Llama-shaped forward pass small enough to print: RMSNorm, RoPE attention, SwiGLU, residual adds.

The weights are random (seeded), so the next-token probabilities carry no knowledge; what the pass
shows is the shape of the computation: x keeps its shape through every layer, and each sub-block
adds to x instead of replacing it.
"""

from dataclasses import dataclass

import numpy as np

from .demos import DEMO_SEED
from .errors import check_bytes
from .ops import attention, merge_heads, rms_norm, softmax, split_heads, swiglu
from .positions import apply_rope

VOCAB = ("<bos>", "the", "a", "cat", "dog", "sat", "ran", "on", "under", "mat",
         "rug", "and", "big", "small", "sees", ".")
PROMPT = ("<bos>", "the", "cat", "sat", "on")


@dataclass(frozen=True)
class TinyConfig:
    d_model: int = 16  # width of x
    n_layer: int = 4
    n_head: int = 2    # head_dim 8
    d_ff: int = 48     # swiglu_hidden(16, multiple_of=16)
    n_vocab: int = len(VOCAB)


@dataclass(frozen=True)
class ForwardTrace:
    xs: list[np.ndarray]  # x after the embedding and after each layer, each [n_seq, d_model]
    probs: np.ndarray     # [n_vocab] next-token probabilities at the last position


BRANCH_GAIN = 1.0 / np.sqrt(8)  # scales each residual branch's output, as 1/sqrt(2 n_layer) would for 4 layers


def init_weights(cfg: TinyConfig, seed=DEMO_SEED):
    """Seeded weights: matrices N(0, 1/fan_in), the residual branches' outputs scaled by BRANCH_GAIN.

    The embedding, the output head and each layer draw from their own stream of one seed, and the
    gain does not depend on depth, so a deeper stack is the same stack with more layers on top."""
    d, f = cfg.d_model, cfg.d_ff
    embed_rng, out_rng, *layer_rngs = np.random.SeedSequence(seed).spawn(2 + cfg.n_layer)

    def mat(rng, n_in, n_out, gain=1.0):
        return rng.standard_normal((n_in, n_out)) / np.sqrt(n_in) * gain

    layers = []
    for ss in layer_rngs:
        rng = np.random.default_rng(ss)
        layers.append(dict(wq=mat(rng, d, d), wk=mat(rng, d, d), wv=mat(rng, d, d), wo=mat(rng, d, d, BRANCH_GAIN),
                           w_gate=mat(rng, d, f), w_up=mat(rng, d, f), w_down=mat(rng, f, d, BRANCH_GAIN),
                           norm_attn=np.ones(d), norm_ffn=np.ones(d)))
    return dict(embed=np.random.default_rng(embed_rng).standard_normal((cfg.n_vocab, d)), layers=layers,
                norm_final=np.ones(d), out=mat(np.random.default_rng(out_rng), d, cfg.n_vocab))


def self_attention(x, w, n_head):  # [n_seq, d_model] -> [n_seq, d_model]
    """Causal multi-head attention with RoPE on q and k."""
    pos = np.arange(x.shape[0])
    q, k, v = (split_heads(x @ w[name], n_head) for name in ("wq", "wk", "wv"))  # [n_head, n_seq, head_dim]
    heads = [attention(apply_rope(q[h], pos), apply_rope(k[h], pos), v[h], causal=True)[0]
             for h in range(n_head)]
    return merge_heads(np.stack(heads)) @ w["wo"]


def forward(tokens, cfg: TinyConfig = TinyConfig(), seed=DEMO_SEED, residual=True):
    """Run the prompt through every layer; keep x after each, and the last position's next-token probabilities."""
    check_bytes(2 * cfg.n_layer * (4 * cfg.d_model**2 + 3 * cfg.d_model * cfg.d_ff) * 8,
                f"a {cfg.n_layer}-layer pass", f"{cfg.n_layer} 层的前向计算")
    w = init_weights(cfg, seed)
    x = w["embed"][[VOCAB.index(t) for t in tokens]]  # [n_seq, d_model]
    xs = [x]
    for layer in w["layers"]:
        h = self_attention(rms_norm(x, layer["norm_attn"]), layer, cfg.n_head)
        x = x + h if residual else h
        h = swiglu(rms_norm(x, layer["norm_ffn"]), layer["w_gate"], layer["w_up"], layer["w_down"])
        x = x + h if residual else h
        xs.append(x)
    logits = rms_norm(x[-1:], w["norm_final"]) @ w["out"]  # [1, n_vocab]
    return ForwardTrace(xs, softmax(logits)[0])
