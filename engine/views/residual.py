"""Lesson 1: the causal mask and the residual stream of a Llama-shaped pass."""

import numpy as np

from .. import llama, ops, random_llama, seeds
from .core import Fact, Param, Result, Table, Tr, View, col, matrix_table, register, token_labels


def _mask(n):
    m = ops.causal_mask(n)
    labels = token_labels(n)
    return Result("mask", dict(n=n), (matrix_table(
        "mask", Tr("Causal mask added to the scores", "加到打分上的因果掩码"), m, labels, fmt="mask",
        heat="mask", row_title=Tr("query", "查询")),))


def embedding_gain(x0, w, n_head, residual=True, h=1e-5):  # [n_seq, d_model] -> [n_layer + 1]
    """How far x moves, after the embedding and after each layer, per unit nudge of the embedding x0: the rms
    singular value of the Jacobian d x_l / d x0, |J|_F / sqrt(n_seq * d_model), by central differences. A
    backward pass carries the gradient through the transpose of the same J, which has the same singular values."""
    n = x0.size
    nudge = h * np.eye(n).reshape(n, *x0.shape)  # [n, n_seq, d_model]: each copy nudges one number of x0
    up, down = x0 + nudge, x0 - nudge
    gains = [1.0]
    for i in range(llama.n_layers(w)):
        up = llama.block(up, w, i, n_head, n_head, residual)[0]      # [n, n_seq, d_model]
        down = llama.block(down, w, i, n_head, n_head, residual)[0]
        jacobian = (up - down) / (2 * h)  # [n, n_seq, d_model]: row j is d x_l / d (number j of x0)
        gains.append(float(np.linalg.norm(jacobian) / np.sqrt(n)))
    return gains


def _residual(residual, seed, layers):
    cfg = random_llama.RandomLlamaConfig(n_layer=layers)
    runs = {on: random_llama.trace(random_llama.PROMPT, cfg, seed, residual=on) for on in (True, False)}

    def norm(x):
        return float(np.mean(np.linalg.norm(x, axis=-1)))

    def cos(x, x0):
        return float(np.mean(np.sum(x * x0, -1) / np.linalg.norm(x, axis=-1) / np.linalg.norm(x0, axis=-1)))

    x0 = runs[True].xs[0]
    stages = [Tr("embedding", "词嵌入")] + [Tr(f"layer {i}", f"第 {i} 层") for i in range(1, layers + 1)]
    rows = tuple((stage, "[{}, {}]".format(*on.shape), norm(on), cos(on, x0), norm(off), cos(off, x0))
                 for stage, on, off in zip(stages, runs[True].xs, runs[False].xs))
    w = random_llama.init_weights(cfg, seed)
    grads = {on: embedding_gain(x0, w, cfg.n_head, on) for on in (True, False)}
    steps = {on: np.array(g[1:]) / np.array(g[:-1]) for on, g in grads.items()}  # [layers] what each layer multiplies
    paths = tuple((stage, row[3], row[5], g_on, g_off)
                  for stage, row, g_on, g_off in zip(stages, rows, grads[True], grads[False]))
    probs = runs[residual].probs
    top = np.argsort(-probs, kind="stable")[:5]
    return Result("residual", dict(residual=residual, seed=seed, layers=layers), (
        Table("stream", Tr(f'x through {layers} layers for "{" ".join(random_llama.PROMPT[1:])}"',
                           f'「{" ".join(random_llama.PROMPT[1:])}」的 x 经过 {layers} 层'),
              (col("stage", "after", "阶段"), col("shape", "shape", "形状"),
               col("norm_on", "|x| add", "|x| 残差", ".2f"), col("cos_on", "cos add", "cos 残差", "+.2f"),
               col("norm_off", "|x| replace", "|x| 无残差", ".2f"),
               col("cos_off", "cos replace", "cos 无残差", "+.2f")),
              rows, note=Tr("|x|: mean length of a token's vector; cos: its cosine with its own embedding",
                            "|x|：每个词元向量的平均长度；cos：它与该词元嵌入的余弦，即嵌入还剩多少")),
        Table("paths", Tr("What reaches each stage from the embedding: the token, and a nudge",
                          "从词嵌入到每个阶段还剩什么：词元本身，和一次微小的改动"),
              (col("stage", "after", "阶段"), col("cos_on", "cos add", "cos 残差", "+.2f"),
               col("cos_off", "cos replace", "cos 无残差", "+.2f"), col("grad_on", "dx/dx0 add", "dx/dx0 残差", ".2f"),
               col("grad_off", "dx/dx0 replace", "dx/dx0 无残差", ".2f")),
              paths, note=Tr("dx/dx0: how far x moves per unit nudge of the embedding x0 (rms singular value)",
                             "dx/dx0：词嵌入 x0 改动一个单位时 x 移动多少（奇异值的均方根）")),
        Table("next", Tr("Top 5 next tokens (random weights: no knowledge)", "下一个词元前 5 名（随机权重，没有知识）"),
              (col("rank", "rank", "名次"), col("token", "token", "词元"), col("p", "probability", "概率", ".3f")),
              tuple((i + 1, random_llama.VOCAB[t], float(probs[t])) for i, t in enumerate(top))),
    ), (Fact("last_cos_on", Tr("cos with the embedding after the last layer, with the adds",
                               "最后一层之后与嵌入的余弦（相加）"), rows[-1][3], "+.2f"),
        Fact("last_cos_off", Tr("cos with the embedding after the last layer, replacing x",
                                "最后一层之后与嵌入的余弦（替换）"), rows[-1][5], "+.2f"),
        Fact("last_grad_on", Tr("dx/dx0 after the last layer, with the adds", "最后一层之后的 dx/dx0（相加）"),
             grads[True][-1], ".2f"),
        Fact("last_grad_off", Tr("dx/dx0 after the last layer, replacing x", "最后一层之后的 dx/dx0（替换）"),
             grads[False][-1], ".2f"),
        Fact("step_on_min", Tr("smallest factor a layer applies to dx/dx0, with the adds",
                               "相加时一层给 dx/dx0 乘上的最小倍数"), float(steps[True].min()), ".2f"),
        Fact("step_on_max", Tr("largest factor a layer applies to dx/dx0, with the adds",
                               "相加时一层给 dx/dx0 乘上的最大倍数"), float(steps[True].max()), ".2f"),
        Fact("step_off_min", Tr("smallest factor a layer applies to dx/dx0, replacing x",
                                "替换时一层给 dx/dx0 乘上的最小倍数"), float(steps[False].min()), ".2f"),
        Fact("step_off_max", Tr("largest factor a layer applies to dx/dx0, replacing x",
                                "替换时一层给 dx/dx0 乘上的最大倍数"), float(steps[False].max()), ".2f"),
        Fact("n_seq", Tr("positions: <bos> and the words", "位置数：<bos> 加上各个词"), x0.shape[0], "d"),
        Fact("n_words", Tr("words after <bos>", "<bos> 之后的词数"), len(random_llama.PROMPT) - 1, "d"),
        Fact("d_model", Tr("numbers per position", "每个位置的数"), x0.shape[1], "d")))


register(View("mask", Tr("The causal mask", "因果掩码"),
     (Param("n", "int", 4, Tr("tokens", "词元数"), 1, 10),), _mask, (ops.causal_mask,)))

register(View("residual", Tr("The residual stream", "残差流"),
     (Param("residual", "bool", True, Tr("add each layer's output to x", "把每层的输出加回 x")),
      Param("seed", "int", seeds.DEMO_SEED, Tr("random weights", "随机权重的种子"), 0, 2**32 - 1),
      Param("layers", "int", 4, Tr("layers", "层数"), 1, 32)),
     _residual, (random_llama.trace, embedding_gain, *llama.CODE)))
