"""Lesson 4: one vector cut into heads."""

import numpy as np

from .. import demos, ops, sizing
from ..errors import ParamError
from .core import Column, Fact, Param, Result, Table, Tr, View, col, matrix_table, register, token_labels

# Presets whose heads tile d_model, then the two whose heads do not.
_TILING = ("llama2-7b", "llama3-8b", "llama3.2-1b", "gemma-2b", "gemma-7b", "mistral-nemo-12b")


def _tiling_rows():
    """heads * head_dim against d_model for some of sizing's presets."""
    rows = []
    for name in _TILING:
        cfg = sizing.PRESETS[name]
        product = cfg.n_head * cfg.d_head
        rows.append((cfg.name, cfg.n_head, cfg.d_head, product, cfg.d_model,
                     Tr("yes", "是") if product == cfg.d_model else Tr("no", "否")))
    return tuple(rows)


def _weights_table(d_model, heads):
    """The four projections' sizes at this head count: each maps d_model to heads * head_dim or back."""
    head_dim = d_model // heads
    shape = f"{d_model} * {heads} * {head_dim}"
    rows = tuple((name, shape, d_model * heads * head_dim) for name in ("W_q", "W_k", "W_v", "W_o"))
    total = sum(r[2] for r in rows)
    return Table("weights", Tr(f"The projections at {heads} heads of {head_dim}",
                               f"{heads} 个头、每头 {head_dim} 维时的投影矩阵"),
                 (col("matrix", "matrix", "矩阵"),
                  col("shape", "d_model * heads * head_dim", "d_model * 头数 * 每头维度"),
                  col("params", "parameters", "参数", ",")),
                 rows + ((Tr("all four", "四个合计"), "", total),))


def _heads(heads, seed, n):
    d_model = 32
    if d_model % heads:
        divisors = ", ".join(str(h) for h in range(1, d_model + 1) if d_model % h == 0)
        raise ParamError(f"heads={heads} does not divide d_model={d_model}; choose one of: {divisors}",
                         f"heads={heads} 不能整除 d_model={d_model}；可选：{divisors}")
    r = demos.multi_head_demo(heads, seed, n, d_model)
    labels = token_labels(n)
    per_head = tuple(
        (h, d_model // heads, s.stats.max_weight, s.stats.mean_entropy,
         Tr(f"tok {s.sharpest[0]} -> tok {s.sharpest[1]}", f"词 {s.sharpest[0]} 最关注词 {s.sharpest[1]}"))
        for h, s in enumerate(r.heads))
    tables = [Table("heads", Tr(f"{heads} heads of d_model={d_model}", f"d_model={d_model} 切成 {heads} 个头"),
                    (col("head", "head", "头"), col("head_dim", "head_dim", "每头维度", "d"),
                     col("max_weight", "max weight", "最大权重", ".3f"),
                     col("mean_entropy", "mean entropy", "平均熵", ".3f"),
                     col("sharpest", "sharpest row", "最集中的一行")), per_head)]
    tables.append(Table("last", Tr(f"Where tok {n - 1}, the last token, looks in each head",
                                   f"最后一个词元（词 {n - 1}）在每个头里看向哪里"),
                        (col("head", "head", "头", "d"),) + tuple(Column(f"k{j}", lab, ".3f")
                                                                  for j, lab in enumerate(labels)),
                        tuple((h, *map(float, w[-1])) for h, w in enumerate(r.weights)), heat="weights"))
    tables += [matrix_table(f"head{h}", Tr(f"Head {h}", f"{h} 号头"), w, labels) for h, w in enumerate(r.weights)]
    tables.append(_weights_table(d_model, heads))
    tiling = _tiling_rows()
    tables.append(Table("tiling", Tr("Do the heads tile d_model? Model cards", "各头是否正好拼满 d_model？看模型参数"),
                        (col("model", "model", "模型"), col("heads", "heads", "头数", "d"),
                         col("head_dim", "head_dim", "每头维度", "d"),
                         col("product", "heads * head_dim", "头数 * 每头维度", ","),
                         col("d_model", "d_model", "d_model", ","), col("tiles", "equal", "相等")), tiling))
    last = r.weights[:, -1, :]  # [n_head, n_seq]: where the last token looks in each head
    sharp, flat = int(np.argmax(last.max(axis=1))), int(np.argmin(last.max(axis=1)))
    return Result("heads", dict(heads=heads, seed=seed, n=n), tuple(tables), (
        Fact("spread", Tr("entropy ratio between heads, max / min", "各头熵之比（最大 / 最小）"),
             r.entropy_spread, ".2f"),
        Fact("layer_params", Tr("parameters of W_q, W_k, W_v, W_o", "W_q、W_k、W_v、W_o 的参数量"),
             r.layer_params, ","),
        Fact("last_sharp_head", Tr("the last token's sharpest head", "最后一个词元看得最集中的头"),
             sharp, "d"),
        Fact("last_sharp_weight", Tr("that head's top weight", "该头的最大权重"), float(last[sharp].max()), ".3f"),
        Fact("last_sharp_token", Tr("that head's top token", "该头最看重的词元"), labels[int(np.argmax(last[sharp]))]),
        Fact("last_flat_head", Tr("the last token's flattest head", "最后一个词元看得最平均的头"),
             flat, "d"),
        Fact("last_flat_weight", Tr("the flattest head's top weight", "最平均的头的最大权重"),
             float(last[flat].max()), ".3f"),
        Fact("last_tops", Tr("different top tokens across heads", "各头排第一的词元有几个不同"),
             len(set(np.argmax(last, axis=1).tolist())), "d"),
    ))


register(View("heads", Tr("Multi-head attention", "多头注意力"),
     (Param("heads", "int", 4, Tr("heads (must divide 32)", "头数（须整除 32）"), 1, 32),
      Param("seed", "int", demos.DEMO_SEED, Tr("random draw", "随机种子"), 0, 2**32 - 1),
      Param("n", "int", 4, Tr("tokens", "词元数"), 2, 8)),
     _heads, (ops.split_heads, demos.multi_head_demo)))
