"""Lesson 12: attention weights are not explanations."""

import numpy as np

from .. import demos
from .core import Fact, Param, Result, Table, Tr, View, col, register


def _explain(seed, draws):
    r = demos.weight_vs_effect(seed, draws)
    top_w, top_e = int(np.argmax(r.weights)), int(np.argmax(r.removal_effect))
    # Removing token j renormalises the others: out = w_j v_j + (1 - w_j) rest_j, where rest_j is the mix
    # of the other values, so the output moves by exactly w_j |v_j - rest_j|. The distance is read back
    # from the effect (effect / weight), which is that identity solved for it; a weight that underflows
    # to 0 moves nothing, and its distance is then shown as 0.
    rest = np.divide(r.removal_effect, r.weights, out=np.zeros_like(r.weights), where=r.weights > 0)
    rows = tuple((Tr(f"tok {j}", f"词 {j}"), float(r.weights[j]), float(r.value_norms[j]), float(rest[j]),
                  float(r.removal_effect[j])) for j in range(len(r.weights)))
    return Result("explain", dict(seed=seed, draws=draws), (
        Table("tokens", Tr("The last token's attention, and what each token is worth",
                           "最后一个词元的注意力，和每个词元的分量"),
              (col("token", "token", "词元"), col("weight", "weight", "权重", ".3f"),
               col("v_norm", "|v|", "|v|", ".2f"), col("rest", "|v - rest|", "|v - 其余|", ".2f"),
               col("effect", "output moves when removed", "去掉后输出变化", ".3f")),
              rows, note=Tr("rest: the mix of the other values; output moves = weight * |v - rest|",
                            "其余：其他值的混合；输出变化 = 权重 * |v - 其余|")),
    ), (Fact("most_weight", Tr("largest weight", "权重最大"), Tr(f"tok {top_w}", f"词 {top_w}")),
        Fact("most_effect", Tr("largest effect", "影响最大"), Tr(f"tok {top_e}", f"词 {top_e}")),
        Fact("disagree", Tr(f"draws out of {draws:,} where the two differ", f"{draws:,} 次抽样中两者不同的比例"),
             r.disagree_rate, "pct"),
        Fact("same", Tr("the largest weight is also the largest effect", "权重最大的也是影响最大的"), top_w == top_e)))


register(View("explain", Tr("Attention weights are not explanations", "注意力权重不是解释"),
     (Param("seed", "int", demos.DEMO_SEED, Tr("random draw", "随机种子"), 0, 2**32 - 1),
      Param("draws", "int", 1000, Tr("draws for the rate", "统计用的抽样次数"), 100, 100000)),
     _explain, (demos.weight_vs_effect,)))
