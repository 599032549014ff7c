"""The trained tiny Llama's heads silenced one at a time: which head carries subject-verb agreement (the
misconceptions lesson), on the learner's sentence and, from each run's manifest, over 300 unseen sentences."""

import numpy as np

from .. import llama
from ..errors import ParamError
from .core import Fact, Param, Result, Table, Tr, View, col, lazy_source, register
from .tiny import _subject_position, _tiny_run, _trained

RUNS = ("seed0", "seed1")


def _tiny_ablation(sentence):
    from .. import corpus
    from ..tiny import PROBE_SENTENCES
    s = corpus.parse(sentence)
    if s.verb_at is None:
        raise ParamError("the sentence needs a verb that agrees with its subject, such as sits or sit",
                         "句子里需要一个与主语一致的动词，比如 sits 或 sit")
    good, bad = corpus.verb_pair(s)
    # the verb is predicted at the position before it; in <bos>-indexed terms that is verb_at
    pos, words = s.verb_at, ["<bos>", *s.tokens]
    subj = _subject_position(words)
    one, base = {}, {}
    for run in RUNS:
        w, cfg, _, logits, keep = _tiny_run(sentence, run=run)
        base[run] = float(logits[pos, good] - logits[pos, bad])
        one[run] = []
        for layer in range(cfg.n_layer):
            for h in range(cfg.n_head):
                mask = np.ones((cfg.n_layer, cfg.n_head))
                mask[layer, h] = 0
                ab = _tiny_run(sentence, mask, run)[3]
                change = float(ab[pos, good] - ab[pos, bad]) - base[run]
                one[run].append((layer + 1, h, float(keep["attn"][layer][0, h, pos, subj]), change))
    average = {run: [(a["layer"], a["head"], a["attention"], a["change"], a["lost"])
                     for a in _trained(run)[2]["ablation"]]
               for run in RUNS}
    name = lambda r: Tr(f"layer {r[0]} head {r[1]}", f"第 {r[0]} 层 {r[1]} 号头")  # noqa: E731
    both = lambda rows: tuple(a[:2] + a[2:4] + b[2:4] for a, b in zip(*(rows[run] for run in RUNS)))  # noqa: E731
    columns = (col("layer", "layer", "层", "d"), col("head", "head", "头", "d"),
               *(c for run in RUNS for c in (col(f"{run}_attn", f"{run} attn", f"{run} 注意力", ".3f"),
                                             col(f"{run}_change", f"{run} change", f"{run} 变化", "+.2f"))))
    def head_facts(key, r, what):  # a head picked out of the averages: which, its attention, its margin change
        return (Fact(key, what, name(r)),
                Fact(f"{key}_attn", Tr("  that head's attention on the subject", "  该头对主语的注意力"), r[2], ".3f"),
                Fact(f"{key}_change", Tr("  the margin change without it", "  去掉它后差值的变化"), r[3], "+.2f"))

    facts = []
    for run in RUNS:
        most_attn, most_hurt = max(one[run], key=lambda r: r[2]), min(one[run], key=lambda r: r[3])
        avg_attn, avg_hurt = max(average[run], key=lambda r: r[2]), min(average[run], key=lambda r: r[3])
        facts += [
            Fact(f"{run}_margin", Tr(f"{run}: margin with every head", f"{run}：所有头都在时的差值"),
                 base[run], "+.2f"),
            Fact(f"{run}_most_attention", Tr(f"{run}: looks hardest at the subject", f"{run}：最关注主语的头"),
                 name(most_attn)),
            Fact(f"{run}_most_needed", Tr(f"{run}: silencing it lowers the margin most",
                                          f"{run}：静音后差值降得最多的头"),
                 name(most_hurt)),
            Fact(f"{run}_same", Tr(f"{run}: the same head", f"{run}：是同一个头"), most_attn[:2] == most_hurt[:2]),
            *head_facts(f"{run}_avg_attention", avg_attn, Tr(f"{run}, on average: looks hardest at the subject",
                                                              f"{run}，平均而言：最关注主语的头")),
            *head_facts(f"{run}_avg_needed", avg_hurt, Tr(f"{run}, on average: silencing it lowers the margin most",
                                                           f"{run}，平均而言：静音后差值降得最多的头")),
            Fact(f"{run}_avg_needed_lost", Tr(f"{run}, on average: agreement lost without it",
                                              f"{run}，平均而言：去掉它后一致出错的比例"), avg_hurt[4], "pct"),
            Fact(f"{run}_avg_same", Tr(f"{run}, on average: the same head", f"{run}，平均而言：是同一个头"),
                 avg_attn[:2] == avg_hurt[:2]),
            Fact(f"{run}_spread", Tr(f"{run}: no one silenced head breaks agreement in 5 % of sentences",
                                     f"{run}：静音任何一个头，一致出错都不到 5 %"),
                 max(r[4] for r in average[run]) < 0.05),
            Fact(f"{run}_most_lost", Tr(f"{run}: the most agreement one silenced head loses",
                                        f"{run}：静音单个头最多让多少句子一致出错"),
                 max(r[4] for r in average[run]), "pct"),
        ]
    facts.append(Fact("sentences", Tr("unseen sentences averaged over", "取平均的未见句子数"), PROBE_SENTENCES, ","))
    return Result("tiny-ablation", dict(sentence=sentence), (
        Table("heads", Tr(f'Silencing each head in "{sentence}"', f"在「{sentence}」里逐个静音各头"), columns,
              both(one), note=Tr(
                  f'attn: on "{words[subj]}" where the verb is predicted; change: of the margin, logit of '
                  f'"{corpus.VOCAB[good]}" minus "{corpus.VOCAB[bad]}"',
                  f"注意力：预测动词处对「{words[subj]}」的注意力；变化：差值（「{corpus.VOCAB[good]}」"
                  f"的 logit 减「{corpus.VOCAB[bad]}」）的变化")),
        Table("average", Tr(f"Averaged over {PROBE_SENTENCES} unseen sentences whose distractor has the "
                            "other number", f"对 {PROBE_SENTENCES} 个未见过、且干扰名词单复数相反的句子取平均"),
              columns, both(average),
              note=Tr("attn: on the subject where the verb is predicted; change: mean margin change",
                      "注意力：预测动词处对主语的注意力；变化：静音后差值的平均变化")),
    ), tuple(facts))


register(View("tiny-ablation", Tr("The trained tiny Llama: which head carries agreement",
                                  "训练好的小 Llama：谁在传递主谓一致"),
     (Param("sentence", "sentence", "the cat near the dogs sits .", Tr("a sentence with an agreeing verb",
                                                                        "带一致动词的句子")),),
     _tiny_ablation, (lazy_source("tiny", "ablation"), lazy_source("tiny", "margins"), llama.silence_heads,
                       *llama.CODE)))
