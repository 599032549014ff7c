"""Lesson 2: sinusoidal positions, RoPE, and attention without positions."""

import numpy as np

from .. import positions
from ..errors import check_bytes
from ..seeds import DEMO_SEED
from .core import (
    Chart,
    Column,
    Fact,
    Param,
    Result,
    Series,
    Table,
    Tr,
    View,
    col,
    fmt_value,
    lazy_source,
    matrix_table,
    pick_rows,
    register,
)

# Context lengths to set against the slowest pair: Llama 2's and Llama 3's trained contexts, then 32k and 128k.
REACH_CONTEXTS = (4096, 8192, 32768, 131072)
WAVE_POSITIONS = 64  # the waves chart draws positions 0 .. 63, whatever n the table shows


def _positional(n, d, base):
    check_bytes(n * d * 8 * 3, f"a {n} x {d} position table", f"{n} x {d} 的位置编码表")
    pe = positions.sinusoidal_positions(n, d, base)
    dims, positions_shown = pick_rows(d), pick_rows(n, 16)
    cols = (col("pos", "pos", "位置"),) + tuple(Column(f"d{j}", Tr(f"d{j}", f"d{j}"), "+.3f") for j in dims)
    rows = tuple((i,) + tuple(float(pe[i, j]) for j in dims) for i in positions_shown)
    cut = [Tr(f"{d} dims: the first four and the last four", f"{d} 维中的前四维和后四维")] if d > 8 else []
    cut += [Tr(f"{n:,} positions: the first eight and the last eight",
               f"{n:,} 个位置中的前八个和后八个")] if n > 16 else []
    note = Tr("showing " + "; ".join(c.en for c in cut), "只显示" + "；".join(c.zh for c in cut)) if cut else None
    pairs = pick_rows(d // 2)
    freq, wave = positions.frequencies(d, base), positions.wavelengths(d, base)
    wave_rows = tuple((i, f"d{2 * i}, d{2 * i + 1}", float(freq[i]), float(wave[i])) for i in pairs)
    reach = tuple((n_ctx, float(np.degrees((n_ctx - 1) * freq[-1])), int(np.sum((n_ctx - 1) * freq < 2 * np.pi)))
                  for n_ctx in REACH_CONTEXTS)  # the largest gap in a context of n_ctx is n_ctx - 1 positions
    return Result("positional", dict(n=n, d=d, base=base), (
        Table("table", Tr("Sinusoidal positions: sin on even dims, cos on odd", "正弦位置编码：偶数维 sin，奇数维 cos"),
              cols, rows, heat="signed", note=note),
        Table("wavelengths", Tr("How fast each dim pair turns", "每对维度转得多快"),
              (col("pair", "pair i", "第 i 对"), col("dims", "dims", "维度"),
               col("theta", "theta (rad/pos)", "theta（弧度/位）", ".4g"),
               col("wavelength", "wavelength (pos)", "波长（位置数）", "sig3")), wave_rows),
        Table("reach", Tr(f"The slowest of {d // 2} pairs (d = {d}, base {fmt_value(base)}) across a context",
                          f"{d // 2} 对中最慢的一对（d = {d}，底数 {fmt_value(base)}）跨过整段上下文"),
              (col("context", "context (positions)", "上下文（位置数）", ","),
               col("angle", "slowest pair turns (deg)", "最慢一对转过（度）", ",.1f"),
               col("under", "pairs under one turn", "不满一圈的对数", "d")), reach,
              note=Tr("turns over the largest gap in the context: its length minus 1",
                      "转角按上下文里最大的间隔计，即长度减 1")),
    ), (Fact("fastest", Tr("fastest wavelength", "最快的波长"), float(wave[0]), "sig3"),
        Fact("slowest", Tr("slowest wavelength", "最慢的波长"), float(wave[-1]), "sig3"),
        Fact("pairs", Tr("dim pairs", "维度对数"), d // 2, "d")), (_waves_chart(d, freq, pairs),))


def _waves_chart(d, freq, pairs) -> Chart:
    """sin(pos * theta_i) of the pairs the wavelengths table shows, one strip each, at positions 0 .. 63."""
    pos = np.arange(WAVE_POSITIONS)
    # the even dim 2i of sinusoidal_positions, taken for the shown pairs only: the whole table at a large d
    # would be 64 x d numbers to keep eight columns
    waves = np.sin(pos[:, None] * freq[pairs][None, :])  # [64, n_pairs]
    cut = Tr(f"the first four and the last four of {d // 2} pairs", f"{d // 2} 对中只画前四对和后四对") \
        if len(pairs) < d // 2 else None
    last = WAVE_POSITIONS - 1
    return Chart("waves", Tr(f"sin(pos * theta_i) of each pair, in its dim d2i, positions 0-{last}",
                             f"每一对的 sin(pos * theta_i)（即 d2i 维），位置 0-{last}"), "strips",
                 tuple(Series(Tr(f"d{2 * i}", f"d{2 * i}"), tuple(float(v) for v in waves[:, j]))
                       for j, i in enumerate(pairs)),
                 x=tuple(float(p) for p in pos), x_label=Tr("position", "位置"), y_range=(-1.0, 1.0),
                 note=cut)


def _layouts(d, base, seed):
    """The scores of one head's q and k, stored as Hugging Face stores them (halves layout), under the two RoPE
    layouts: pairs (2i, 2i+1) after reordering the dims, halves (i, i + d/2) as stored, and pairs without the
    reordering, the mistake of loading one layout's weights into the other's code."""
    from .. import demos
    q, k = np.random.default_rng(seed).standard_normal((2, d))  # the rope table's q and k, read as halves layout
    order = positions.halves_to_pairs(d)
    def score(rope, q, k, m, n):  # q turned to position m, k to n, by one layout's RoPE
        return float(rope(q[None], [m], base)[0] @ rope(k[None], [n], base)[0])

    rows = tuple((m, n, score(positions.apply_rope, q[order], k[order], m, n),
                  score(positions.apply_rope_halves, q, k, m, n), score(positions.apply_rope, q, k, m, n))
                 for m, n in demos.ROPE_PAIRS)
    return Table("layouts", Tr("One q and k, two RoPE layouts", "同一对 q、k，两种 RoPE 排法"),
                 (col("m", "q at m", "q 在 m", "d"), col("n", "k at n", "k 在 n", "d"),
                  col("pairs", "pairs, reordered", "相邻成对（重排后）", "+.6f"),
                  col("halves", "halves", "前后两半成对", "+.6f"),
                  col("mixed", "pairs, not reordered", "相邻成对（未重排）", "+.6f")), rows,
                 note=Tr("pairs: (2i, 2i+1), Meta and llama.cpp; halves: (i, i + d/2), Hugging Face",
                         "相邻成对：(2i, 2i+1)，Meta、llama.cpp；前后两半：(i, i + d/2)，Hugging Face"))


def _rope(d, base, seed):
    from .. import demos  # the demos load only when one of them runs: print positional needs none
    rows = demos.rope_demo(d, base, seed)
    layouts = _layouts(d, base, seed)
    same = max(abs(r[2] - r[3]) for r in layouts.rows)
    mixed = max(abs(r[4] - r[3]) for r in layouts.rows)
    return Result("rope", dict(d=d, base=base, seed=seed), (
        Table("scores", Tr("One q and one k at three places, the same distance apart",
                           "同一个 q 和 k 放在三处，间隔相同"),
              (col("m", "q at m", "q 在 m", "d"), col("n", "k at n", "k 在 n", "d"), col("gap", "m - n", "m - n", "+d"),
               col("rope", "score with RoPE", "RoPE 得分", "+.6f"),
               col("added", "score, positions added", "加性位置编码得分", "+.6f")),
              tuple((r.m, r.n, r.m - r.n, r.rope_score, r.additive_score) for r in rows),
              heat="signed", heat_cols=("rope", "added")),
        layouts,
    ), (Fact("rope_spread", Tr("largest gap between RoPE scores", "RoPE 得分之间的最大差"),
             max(r.rope_score for r in rows) - min(r.rope_score for r in rows), ".1e"),
        Fact("layout_gap", Tr("largest gap between the two layouts, dims reordered", "两种排法（维度重排后）的最大差"),
             same, ".1e"),
        Fact("mixed_gap", Tr("largest gap when the dims are not reordered", "维度未重排时的最大差"), mixed, ".2f"),
        Fact("mixed_differs", Tr("not reordering changes the scores", "不重排会改变打分"), bool(mixed > 1e-6))))


_PERM_WORDS = {"Alice": Tr("Alice", "甲"), "owes": Tr("owes", "欠"), "Bob": Tr("Bob", "乙")}


def _permutation(positions, seed, d):  # the name shadows the module, unused here
    from .. import demos
    r = demos.permutation_demo(seed, d, positions)
    a_words, b_words = [_PERM_WORDS[t] for t in r.tokens], [_PERM_WORDS[t] for t in r.shuffled]
    title_a = Tr(" ".join(w.en for w in a_words), "".join(w.zh for w in a_words))
    title_b = Tr(" ".join(w.en for w in b_words), "".join(w.zh for w in b_words))
    return Result("permutation", dict(positions=positions, seed=seed, d=d), (
        matrix_table("original", Tr(f"A: weights for \"{title_a.en}\"", f"A：「{title_a.zh}」的权重"),
                      r.weights, a_words),
        matrix_table("shuffled", Tr(f"A': weights for \"{title_b.en}\"", f"A'：「{title_b.zh}」的权重"),
                      r.weights_shuffled, b_words),
        matrix_table("permuted", Tr("P A P^T: A with rows and columns moved", "P A P^T：把 A 的行列换位"),
                      r.permuted, b_words),
    ), (Fact("bob_in_a", Tr("Alice's weight on Bob in A", "A 里甲给乙的权重"),
             float(r.weights[r.tokens.index("Alice"), r.tokens.index("Bob")]), ".3f"),
        Fact("bob_in_a2", Tr("Alice's weight on Bob in A'", "A' 里甲给乙的权重"),
             float(r.weights_shuffled[r.shuffled.index("Alice"), r.shuffled.index("Bob")]), ".3f"),
        Fact("max_diff", Tr("max |A' - P A P^T|", "A' 与 P A P^T 的最大差"), r.max_diff, ".1e"),
        Fact("same", Tr("the shuffle only moved the weights", "打乱只是挪动了权重"), bool(r.max_diff < 1e-9))))


register(View("positional", Tr("Sinusoidal positions", "正弦位置编码"),
     (Param("n", "int", 4, Tr("positions", "位置数"), 1, 10**7),
      Param("d", "int", 8, Tr("dims", "维度"), 2, 10**9, even=True),
      Param("base", "float", 10000.0, Tr("base of the frequencies", "频率的底数"), 2, 1e9)),
     _positional, (positions.sinusoidal_positions, positions.wavelengths)))

register(View("rope", Tr("Rotary positions (RoPE)", "旋转位置编码（RoPE）"),
     (Param("d", "int", 8, Tr("dims", "维度"), 2, 10**9, even=True),
      Param("base", "float", 10000.0, Tr("base of the frequencies", "频率的底数"), 2, 1e9),
      Param("seed", "int", DEMO_SEED, Tr("random draw of q and k", "q、k 的随机种子"), 0, 2**32 - 1)),
     _rope, (positions.apply_rope, positions.apply_rope_halves, positions.rotate_half, positions.halves_to_pairs,
             lazy_source("demos", "rope_demo"))))

register(View("permutation", Tr("Attention alone is a bag of words", "只有注意力时，句子只是词袋"),
     (Param("positions", "bool", False, Tr("add sinusoidal positions", "加上正弦位置编码")),
      Param("seed", "int", DEMO_SEED, Tr("random draw", "随机种子"), 0, 2**32 - 1),
      Param("d", "int", 8, Tr("dims", "维度"), 2, 10**9, even=True)),
     _permutation, (lazy_source("demos", "permutation_demo"),)))
