"""Lesson 9: RMSNorm on one vector, its scale invariance, where it sits in a deep stack, and what it costs."""

import functools

import numpy as np

from .. import llama, norms, ops, seeds, sizing
from .core import Fact, Param, Result, Table, Tr, View, col, register

OVERFLOW = Tr("overflow", "溢出")
TINY = 1e-3  # x * TINY has mean(x^2) near eps = 1e-5: where eps shows


def _dims(n):
    return tuple(f"d{i}" for i in range(n))


def _vector(seed, scale, eps):
    x, g = norms.norm_demo(seed)
    ms = float(np.mean(x * x))
    r = float(np.sqrt(ms + eps))  # what RMSNorm divides by, eps included
    xhat = x / r                  # [d] before the gain
    y = ops.rms_norm(x, g, eps)
    sx = scale * x
    y_scaled = ops.rms_norm(sx, g, eps)
    diff = np.abs(y_scaled - y)
    s = f"{scale:g}"
    places = max(0, 3 - round(float(np.log10(scale))))  # x * scale keeps x's significant digits: x has 3 places
    vector = Table("vector", Tr(f"RMSNorm of one x, d = {len(x)}, eps = {eps:g}",
                                f"对一个 x 做 RMSNorm，d = {len(x)}，eps = {eps:g}"),
                   (col("dim", "dim", "维"), col("x", "x", "x", "+.3f"), col("x2", "x^2", "x^2", ".3f"),
                    col("xhat", "x / rms", "x / 均方根", "+.3f"), col("g", "g", "g", ".3f"),
                    col("y", "y = x / rms * g", "y = x / 均方根 * g", "+.3f")),
                   tuple((dim, *map(float, row)) for dim, row in zip(_dims(len(x)), zip(x, x * x, xhat, g, y))))
    scaled = Table("scale", Tr(f"x and x * {s} through the same RMSNorm (eps = {eps:g})",
                               f"x 和 x * {s} 过同一个 RMSNorm（eps = {eps:g}）"),
                   (col("dim", "dim", "维"), col("x", "x", "x", "+.3f"), col("y", "y(x)", "y(x)", "+.6f"),
                    col("sx", f"x * {s}", f"x * {s}", f"+.{places}f"), col("ys", f"y(x * {s})", f"y(x * {s})", "+.6f"),
                    col("diff", "difference", "差", ".1e")),
                   tuple((dim, *map(float, row)) for dim, row in zip(_dims(len(x)), zip(x, y, sx, y_scaled, diff))))
    return Result("norm-vector", dict(seed=seed, scale=scale, eps=eps), (vector, scaled), (
        Fact("mean_sq", Tr("mean(x^2)", "x^2 的平均值"), ms, ".4g"),
        Fact("rms", Tr("rms, eps included", "均方根（含 eps）"), r, ".3f"),
        Fact("mean_x", Tr("mean of x", "x 的平均值"), float(np.mean(x)), "+.3f"),
        Fact("mean_xhat", Tr("mean of x / rms", "x / 均方根 的平均值"), float(np.mean(xhat)), "+.3f"),
        Fact("rms_xhat", Tr("rms of x / rms", "x / 均方根 的均方根"), float(norms.rms(xhat)), ".3f"),
        Fact("max_diff", Tr("largest difference between y(x) and y(x * scale)", "y(x) 与 y(x * scale) 的最大差"),
             float(np.max(diff)), ".1e"),
        Fact("exact", Tr("the same up to rounding (under 1e-12)", "除舍入误差外相同（小于 1e-12）"),
             bool(np.max(diff) < 1e-12)),
        Fact("mean_sq_scaled", Tr("mean((x * scale)^2)", "(x * scale)^2 的平均值"), float(np.mean(sx * sx)), ".4g"),
        Fact("rel_diff", Tr("relative change of every y", "每个 y 的相对变化"),
             float(np.max(diff) / np.max(np.abs(y))), ".1e"),  # every y moves by one factor
        Fact("tiny", Tr("the factor that makes x tiny", "把 x 变得很小的倍数"), TINY, "g"),
        Fact("tiny_mean_sq", Tr(f"mean(x^2) of x * {TINY:g}", f"x * {TINY:g} 的 mean(x^2)"),
             float(np.mean((TINY * x) ** 2)), ".4g"),
        Fact("tiny_rms", Tr(f"rms of y(x * {TINY:g}) over rms of y(x), eps included",
                            f"y(x * {TINY:g}) 与 y(x) 的均方根之比（含 eps）"),
             float(norms.rms(ops.rms_norm(TINY * x, g, eps)) / norms.rms(y)), ".3f")))


def _marks(n_layer):
    """The layers the tables show: the embedding, layer 1, and a quarter, half and all of the stack."""
    return sorted({0, 1, n_layer // 4, n_layer // 2, n_layer})


@functools.lru_cache(maxsize=8)
def _runs(gain, seed):
    """The three placements through the whole stack, once per gain and seed: a shallower stack is its first
    layers (random_llama draws each layer from its own stream), so the layers key needs no new run."""
    w = norms.stack_weights(norms.MAX_LAYERS, gain, seed)
    runs = norms.run_stack(norms.stack_embedding(w), w, norms.STACK.n_head)
    # each array's rms averaged over the tokens, for every layer at once: [len(xs)], and [len(inside)] per part
    sizes = {p: _mean_rms(xs) for p, (xs, _) in runs.items()}
    parts = {p: {k: _mean_rms([part[k] for part in inside]) for k in _PARTS} for p, (_, inside) in runs.items()}
    return w["norm_f"], runs, sizes, parts


_PARTS = ("attn_in", "attn_out", "ffn_in", "ffn_out")


def _mean_rms(arrays):  # [n] of [n_seq, d_model] -> [n]
    return np.mean(norms.rms(np.stack(arrays)), axis=-1) if arrays else np.zeros(0)


def _stack(layers, gain, norm, seed):
    norm_f, full, all_sizes, all_parts = _runs(gain, seed)
    runs = {p: (xs[:layers + 1], inside[:layers]) for p, (xs, inside) in full.items()}
    x0 = runs["pre"][0][0]

    def size(p, layer):  # x's rms after this layer, averaged over the prompt's tokens, or "overflow"
        return float(all_sizes[p][layer]) if layer < len(all_sizes[p]) else OVERFLOW

    marks = _marks(layers)
    stack = Table("stack", Tr(f"rms of x through {layers} layers, three places for the norm",
                              f"x 经过 {layers} 层时的均方根：归一化放在三个位置"),
                  (col("layer", "after", "阶段"), col("pre", "pre-norm", "前置归一化", ".3g"),
                   col("post", "post-norm", "后置归一化", ".3g"), col("none", "no norm", "不归一化", ".3g")),
                  tuple((Tr("embedding", "词嵌入") if i == 0 else Tr(f"layer {i}", f"第 {i} 层"),
                         *(size(p, i) for p in norms.PLACEMENTS)) for i in marks),
                  note=Tr("rms: sqrt(mean(x^2)) of each token's x, averaged over the 5 tokens",
                          "均方根：每个词元的 x 算 sqrt(mean(x^2))，再对 5 个词元取平均"))

    def sizes(layer):
        if layer > len(runs[norm][1]):
            return (OVERFLOW,) * 6
        return (*(float(all_parts[norm][k][layer - 1]) for k in _PARTS), size(norm, layer), growth(norm, layer))

    def growth(p, layer):  # how far the layer moved x, against x's size before it: rms(x_l - x_(l-1)) / rms(x_(l-1))
        xs = full[p][0]
        return float(np.mean(norms.rms(xs[layer] - xs[layer - 1]) / norms.rms(xs[layer - 1])))

    name = {"pre": Tr("pre-norm", "前置归一化"), "post": Tr("post-norm", "后置归一化"),
            "none": Tr("no norm", "不归一化")}[norm]
    seen = Table("inside", Tr(f"What each sub-block reads and adds, {name.en}",
                              f"每个子层读进什么、加上什么：{name.zh}"),
                 (col("layer", "layer", "层"), col("attn_in", "attn reads", "注意力读入", ".3g"),
                  col("attn_out", "attn adds", "注意力加上", ".3g"), col("ffn_in", "FFN reads", "前馈读入", ".3g"),
                  col("ffn_out", "FFN adds", "前馈加上", ".3g"), col("x", "x after", "之后的 x", ".3g"),
                  col("moved", "moved / x", "改变 / x", ".2f")),
                 tuple((i, *sizes(i)) for i in marks if i > 0),
                 note=Tr("rms averaged over the 5 tokens; moved / x: rms(x after - x before) / rms(x before)",
                         "均方根对 5 个词元取平均；改变 / x：rms(之后的 x - 之前的 x) / rms(之前的 x)"))

    last = {p: size(p, layers) for p in norms.PLACEMENTS}
    pre_inputs, pre_adds = (np.concatenate([all_parts["pre"][k][:layers] for k in keys])
                            for keys in (("attn_in", "ffn_in"), ("attn_out", "ffn_out")))
    # [n_seq] x's rms^2 if every add were at right angles to the sum before it
    adds = np.stack([part[k] for part in runs["pre"][1] for k in ("attn_out", "ffn_out")])  # [2 layers, n_seq, d]
    squares = norms.rms(x0) ** 2 + sum(norms.rms(adds) ** 2)
    keep = np.ones(x0.shape[0])  # [n_seq] the weight the embedding keeps in post-norm's x
    sums = np.stack([part[f"{k}_in"] + part[f"{k}_out"] for part in runs["post"][1] for k in ("attn", "ffn")])
    for r in norms.rms(sums):  # each norm divides the whole sum, the embedding's part included
        keep /= np.sqrt(r ** 2 + norms.EPS)
    overflows = len(runs["none"][0]) <= layers
    final = ops.rms_norm(runs["pre"][0][-1], norm_f, norms.EPS)
    return Result("norm-stack", dict(layers=layers, gain=gain, norm=norm, seed=seed), (stack, seen), (
        Fact("last_pre", Tr("rms after the last layer, pre-norm", "最后一层之后的均方根（前置）"),
             last["pre"], ".3g"),
        Fact("last_post", Tr("rms after the last layer, post-norm", "最后一层之后的均方根（后置）"),
             last["post"], ".3g"),
        Fact("last_none", Tr("rms after the last layer, no norm", "最后一层之后的均方根（不归一化）"),
             last["none"], ".3g"),
        Fact("start", Tr("rms of the embeddings", "词嵌入的均方根"), size("pre", 0), ".3g"),
        Fact("pre_in_min", Tr("smallest rms a pre-norm sub-block reads", "前置时子层读入的最小均方根"),
             float(min(pre_inputs)), ".3f"),
        Fact("pre_in_max", Tr("largest rms a pre-norm sub-block reads", "前置时子层读入的最大均方根"),
             float(max(pre_inputs)), ".3f"),
        Fact("pre_add_min", Tr("smallest rms a pre-norm sub-block adds", "前置时子层加上的最小均方根"),
             float(min(pre_adds)), ".3f"),
        Fact("pre_add_max", Tr("largest rms a pre-norm sub-block adds", "前置时子层加上的最大均方根"),
             float(max(pre_adds)), ".3f"),
        Fact("pre_pred", Tr("pre-norm's rms if every add were at right angles to x",
                            "前置时，若每次加的都与 x 垂直，均方根应为"), float(np.mean(np.sqrt(squares))), ".3g"),
        Fact("moved_first", Tr("how far layer 1 moves x, over x's rms, pre-norm",
                               "前置时第 1 层让 x 改变的量占 x 的比例"), growth("pre", 1), ".2f"),
        Fact("moved_last", Tr("how far the last layer moves x, over x's rms, pre-norm",
                              "前置时最后一层让 x 改变的量占 x 的比例"), growth("pre", layers), ".2f"),
        Fact("final_rms", Tr("rms after the final norm, pre-norm", "最终归一化之后的均方根（前置）"),
             float(np.mean(norms.rms(final))), ".3f"),
        Fact("post_keep", Tr("the embedding's weight in post-norm's last x", "后置时词嵌入在最后 x 里的权重"),
             float(np.mean(keep)), ".2g"),
        Fact("none_overflows", Tr("without norms x overflows", "不归一化时 x 溢出"), overflows),
        Fact("overflow_layer", Tr("the layer where it overflows", "溢出发生的层"),
             len(runs["none"][0]) if overflows else 0, "d"),
        Fact("is_pre", Tr("the second table is pre-norm", "第二张表是前置归一化"), norm == "pre"),
        Fact("is_post", Tr("the second table is post-norm", "第二张表是后置归一化"), norm == "post"),
        Fact("is_none", Tr("the second table has no norm", "第二张表不归一化"), norm == "none")))


def _params(preset):
    cfg = sizing.preset(preset)
    items = sizing.param_count(cfg)
    norm_total = sum(n for k, n in items.items() if k.startswith("norm/"))
    total = sizing.total_params(cfg)
    published = sizing.PUBLISHED[preset]
    bias = norms.bias_count(cfg)
    d, n = cfg.d_model, cfg.n_layer
    rows = ((Tr("before attention", "注意力之前"), f"{n} x {d:,}", items["norm/attention"]),
            (Tr("before the FFN", "前馈之前"), f"{n} x {d:,}", items["norm/ffn"]),
            (Tr("final, before the LM head", "最后一个，输出头之前"), f"{d:,}", items["norm/final"]),
            (Tr("all norms", "全部归一化"), f"{2 * n + 1} x {d:,}", norm_total),
            (Tr("the whole model", "整个模型"), "", total))
    return Result("norm-params", dict(preset=preset), (
        Table("norms", Tr(f"The norms of {cfg.name}: a gain g of d_model numbers each, no bias",
                          f"{cfg.name} 的归一化：每个只有一个 d_model 维的增益 g，没有偏置"),
              (col("part", "norm", "归一化"), col("shape", "count", "个数 x 维数"),
               col("params", "parameters", "参数", ",")),
              rows),
    ), (Fact("model", Tr("model", "模型"), cfg.name),
        Fact("norm_total", Tr("norm parameters", "归一化参数"), norm_total, ","),
        Fact("norm_count", Tr("norms", "归一化的个数"), 2 * n + 1, "d"),
        Fact("norm_share", Tr("norms' share of the total", "归一化占总数的比例"), norm_total / total, "pct"),
        Fact("total", Tr("total parameters", "总参数"), total, ","),
        Fact("no_norms", Tr("total with the norms forgotten", "漏掉归一化时的总数"), total - norm_total, ","),
        Fact("published", Tr("published count", "公布的参数量"), published, ","),
        Fact("matches", Tr("the count matches the published one", "与公布的参数量一致"), total == published),
        Fact("bias", Tr("parameters biases and betas would add", "偏置和 beta 会多出的参数"), bias, ","),
        Fact("with_bias", Tr("total with them", "加上之后的总数"), total + bias, ",")))


register(View("norm-vector", Tr("RMSNorm on one vector", "对一个向量做 RMSNorm"),
     (Param("seed", "int", seeds.DEMO_SEED, Tr("random x and g", "随机的 x 和 g"), 0, 2**32 - 1),
      Param("scale", "float", 10.0, Tr("multiply x by this", "把 x 乘上这个数"), 1e-6, 1e6),
      Param("eps", "float", norms.EPS, Tr("eps under the square root", "平方根里的 eps"), 0, 1)),
     _vector, (ops.rms_norm, norms.norm_demo)))

register(View("norm-stack", Tr("Where the norm sits: a deep random stack", "归一化放在哪：一个很深的随机堆叠"),
     (Param("layers", "int", 32, Tr("layers, each an attention and an FFN sub-block",
                                    "层数，每层一个注意力子层和一个前馈子层"),
            1, norms.MAX_LAYERS),
      Param("gain", "float", 0.5, Tr("scale of what a sub-block adds", "子层输出的大小"), 0.01, 4),
      Param("norm", "choice", "pre", Tr("placement the second table follows", "第二张表看哪种放法"),
            choices=norms.PLACEMENTS),
      Param("seed", "int", seeds.DEMO_SEED, Tr("random weights", "随机权重的种子"), 0, 2**32 - 1)),
     _stack, (norms.sub_block, norms.run_stack, norms.stack_weights, norms.attention_block,
               norms.ffn_block, llama.grouped_attention, llama.rope)))

register(View("norm-params", Tr("What the norms cost", "归一化有多少参数"),
     (Param("preset", "choice", "llama2-7b", Tr("model", "模型"), choices=tuple(sizing.PRESETS)),),
     _params, (sizing.param_count, norms.bias_count)))
