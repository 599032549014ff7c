"""Lesson 3: scaled dot-product attention, the d sweep, and "The cat sat on"."""

import numpy as np

from .. import demos, ops
from .core import Chart, Fact, Param, Result, Series, Table, Tr, View, col, matrix_table, register, token_labels


def _stats_table(raw: demos.WeightStats, scaled: demos.WeightStats, causal=False):
    note = Tr("with the causal mask, token 0 sees only itself; its row is left out",
              "加了因果掩码，词 0 只能看到自己，这一行不计入") if causal else None
    return Table("stats", Tr("Without and with the division by sqrt(d)", "除以 sqrt(d) 前后对比"),
                 (col("variant", "weights", "权重"), col("max_weight", "max weight", "最大权重", ".3f"),
                  col("mean_entropy", "mean entropy (nats)", "平均熵（奈特）", ".3f")),
                 ((Tr("q.k (unscaled)", "q.k（未缩放）"), raw.max_weight, raw.mean_entropy),
                  (Tr("q.k / sqrt(d)", "q.k / sqrt(d)"), scaled.max_weight, scaled.mean_entropy)), note=note)


DRAWS = 1000  # draws of q and k behind the typical size of a score at this d


def _attention(d, seed, causal):
    r = demos.attention_demo(d, seed, causal)
    labels = token_labels(3)
    top = int(np.argmax(r.scores[-1]))  # the last token sees every token, with the mask or without
    many = demos.qk_scores(np.random.default_rng([seed, d]), DRAWS, 3, d)  # [DRAWS, 3, 3] scores of fresh q, k
    facts = (Fact("score_rms", Tr(f"rms of a score over {DRAWS:,} draws", f"{DRAWS:,} 次抽样的打分均方根"),
                  float(np.sqrt(np.mean(many ** 2))), ".3g"),
             Fact("sqrt_d", Tr("sqrt(d)", "sqrt(d)"), float(np.sqrt(d)), ".3g"),
             Fact("draws", Tr("draws behind that rms", "那个均方根背后的抽样次数"), DRAWS, ","),
             Fact("last_top", Tr("the last token scores highest", "最后一个词元打分最高的是"), labels[top]),
             Fact("last_top_score", Tr("the last token's highest score", "最后一个词元的最高打分"),
                  float(r.scores[-1, top]), "+.2f"),
             Fact("last_top_weight", Tr("the last token's largest weight, scaled", "最后一个词元的最大权重（缩放后）"),
                  float(r.weights_scaled[-1, top]), ".3f"))
    return Result("attention", dict(d=d, seed=seed, causal=causal), (
        matrix_table("scores", Tr("Scores q.k, before softmax", "得分 q.k（softmax 之前）"), r.scores, labels,
                      fmt="+.2f", heat="signed"),
        matrix_table("raw", Tr("Weights, softmax(q.k)", "权重 softmax(q.k)"), r.weights_raw, labels),
        matrix_table("scaled", Tr("Weights, softmax(q.k / sqrt(d))", "权重 softmax(q.k / sqrt(d))"),
                      r.weights_scaled, labels),
        _stats_table(r.raw, r.scaled, causal),
    ), facts)


def _dsweep(draws, seed):
    rows = demos.d_sweep(draws=draws, seed=seed)
    sweep = Table("sweep", Tr(f"Averaged over {draws:,} random draws of q and k",
                              f"对 q、k 随机抽取 {draws:,} 次取平均"),
                  (col("d", "d", "d", ","), col("raw_max", "max, unscaled", "最大权重（未缩放）", ".3f"),
                   col("raw_entropy", "entropy, unscaled", "熵（未缩放）", ".3f"),
                   col("scaled_max", "max, scaled", "最大权重（缩放后）", ".3f"),
                   col("scaled_entropy", "entropy, scaled", "熵（缩放后）", ".3f")),
                  tuple((r.d, r.raw.max_weight, r.raw.mean_entropy, r.scaled.max_weight, r.scaled.mean_entropy)
                        for r in rows),
                  note=Tr("entropy in nats; the most a row of 3 can have is ln 3 = 1.099",
                          "熵的单位是奈特（nat）；3 个位置的一行最多 ln 3 = 1.099"))
    return Result("dsweep", dict(draws=draws, seed=seed), (sweep,), charts=_sweep_charts(sweep))


def _sweep_charts(sweep: Table) -> tuple[Chart, ...]:
    """The sweep table's two measures against d, unscaled and scaled: the same numbers, drawn."""
    column = {c.key: i for i, c in enumerate(sweep.columns)}

    def chart(key, title, raw, scaled, **axes):
        def series(label, col_key):
            return Series(label, tuple(float(row[column[col_key]]) for row in sweep.rows))
        return Chart(key, title, "line",
                     (series(Tr("unscaled", "未缩放"), raw), series(Tr("scaled", "缩放后"), scaled)),
                     x=tuple(float(row[column["d"]]) for row in sweep.rows),
                     x_label=Tr("d, width of q and k", "d：q、k 的维度"), log_x=True, **axes)

    return (chart("entropy", Tr("Mean entropy of a row of weights, against d", "每行权重的平均熵随 d 的变化"),
                  "raw_entropy", "scaled_entropy", y_label=Tr("nats", "奈特")),
            chart("maxweight", Tr("Largest weight, averaged over draws, against d",
                                  "最大权重（多次抽样平均）随 d 的变化"),
                  "raw_max", "scaled_max", y_range=(0.0, 1.0)))


def _cat(causal):
    weights = demos.cat_demo(causal)
    rows = tuple((tok, score, float(w), ill) for tok, score, w, ill in
                 zip(demos.CAT_TOKENS, demos.CAT_SCORES, weights, demos.CAT_ILLUSTRATION))
    return Result("cat", dict(causal=causal), (
        Table("sat", Tr('Where "sat" looks in "The cat sat on"', '「The cat sat on」里「sat」看向哪里'),
              (col("token", "token", "词元"), col("score", "q.k score", "打分 q.k", ".1f"),
               col("weight", "softmax", "softmax", ".3f"),
               col("illustration", "explainers' figure", "科普文的示意值", ".2f")), rows,
              heat="weights", heat_cols=("weight",),
              note=Tr("explainers' figure: weights a widely copied illustration prints, not computed from the "
                      "scores" + ("; the causal mask hides \"on\" from \"sat\"" if causal else ""),
                      "科普文的示意值：一张广为转载的示意图印的权重，不是由打分算出的"
                      + ("；因果掩码让「sat」看不到「on」" if causal else ""))),
    ), (Fact("sum", Tr("the weights add up to", "权重之和"), float(weights.sum()), ".3f"),))


register(View("attention", Tr("Scaled dot-product attention", "缩放点积注意力"),
     (Param("d", "int", 8, Tr("width of q and k", "q、k 的维度"), 1, 10**9),
      Param("seed", "int", demos.DEMO_SEED, Tr("random draw", "随机种子"), 0, 2**32 - 1),
      Param("causal", "bool", False, Tr("apply the causal mask", "加因果掩码"))),
     _attention, (ops.attention, demos.attention_demo)))

register(View("dsweep", Tr("Why divide by sqrt(d): the average over many draws", "为什么除以 sqrt(d)：多次抽样的平均"),
     (Param("draws", "int", 1000, Tr("random draws per d", "每个 d 抽样次数"), 1000, 10000),
      Param("seed", "int", demos.DEMO_SEED, Tr("random draw", "随机种子"), 0, 2**32 - 1)),
     _dsweep, (demos.d_sweep,)))

register(View("cat", Tr('"The cat sat on": the real softmax', '「The cat sat on」：真正的 softmax'),
     (Param("causal", "bool", False, Tr("apply the causal mask", "加因果掩码")),), _cat, (ops.softmax, demos.cat_demo)))
