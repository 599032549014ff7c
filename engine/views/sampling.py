"""Sampling from the trained tiny Llama: temperature, top-k and top-p on its next-token distribution, seeded
continuations, and how often heat breaks subject-verb agreement across a distracting noun."""

import functools
from collections import OrderedDict

import numpy as np

from .. import llama, ops, sampling
from ..errors import ParamError
from .core import Fact, Param, Result, Table, Tr, View, col, register
from .tiny import _FORGET, _RUN, YOURS, _tiny_run, _trained

N_SAMPLES = 5            # continuations in the samples table
TEMPERATURES = (0.0, 0.5, 1.0, 1.5, 2.0)
PLAUSIBLE = 0.01         # a token the model gives at least this p at T=1 counts as plausible
SHAPES = ("the cat near the dogs", "the", "the cat sat", "the cat sat on")  # flat, flat, peaked, certain


# --- what does not depend on the settings, computed once ----------------------------------------

_PROMPTS: OrderedDict = OrderedDict()  # (run, prompt) -> its last position's logits [n_vocab] float64, and ranking
_NEXT: OrderedDict = OrderedDict()     # (run, tuple of ids, <bos> first) -> next-token logits [n_vocab]
_CACHE_SIZE = 4096


def _remember(cache: OrderedDict, key, value):
    cache[key] = value
    if len(cache) > _CACHE_SIZE:
        cache.popitem(last=False)
    return value


def _prompt_logits(prompt: str, run: str = "seed0"):  # -> [n_vocab] float64, [n_vocab] token ids
    """The trained model's logits after the prompt's last word, and sampling.ranking of them."""
    if (run, prompt) not in _PROMPTS:
        logits = _tiny_run(prompt, run=run)[3][-1].astype(np.float64)
        _remember(_PROMPTS, (run, prompt), (logits, sampling.ranking(logits)))
    return _PROMPTS[run, prompt]


def _next_logits(seqs, run: str = "seed0"):  # list of n id lists of one length -> [n, n_vocab] float64
    """Next-token logits of each sequence; sequences seen before are not run again."""
    w, cfg, _ = _trained(run)
    todo = [s for s in dict.fromkeys(map(tuple, seqs)) if (run, s) not in _NEXT]
    if todo:
        logits = llama.forward(w, np.array(todo, dtype=np.int64), cfg.n_head)[:, -1]  # [n_todo, n_vocab]
        for s, z in zip(todo, logits.astype(np.float64)):
            _remember(_NEXT, (run, s), z)
    return np.stack([_NEXT[run, tuple(s)] for s in seqs])


def _forget_yours() -> None:
    """What was computed from the learner's weights, dropped when they change (tiny.use_weights)."""
    for cache in (_PROMPTS, _NEXT):
        for key in [k for k in cache if k[0] == YOURS]:
            del cache[key]
    _AGREEMENT.pop(YOURS, None)
    _rates.cache_clear()
    _tiny_sample.cache_clear()


_FORGET.append(_forget_yours)


def _verb_forms():
    """Token ids of the singular and of the plural forms of every agreeing verb, and of the past verbs."""
    from .. import corpus
    pairs = corpus.INTRANSITIVE + corpus.TRANSITIVE
    return (np.array([corpus.INDEX[p[0]] for p in pairs]), np.array([corpus.INDEX[p[1]] for p in pairs]),
            np.array([corpus.INDEX[v] for v in corpus.PAST]))


def agreement_logits(run: str = "seed0"):  # -> [N, n_vocab] x2 logits, ranking; [N, n_vocab] x2 right, wrong; [n_vocab]
    """Where the verb is predicted, in the run's probe sentences (engine.tiny.probe_sentences: 300 distinct unseen
    sentences whose distractor has the other number, kept in the run's manifest):
    the model's logits and their ranking, which tokens are verb forms of the right and of the wrong number, and
    which are past verbs (grammatical there too: they do not agree)."""
    if run not in _AGREEMENT:
        from ..tiny import stored_probe
        w, cfg, meta = _trained(run)
        batch = stored_probe(meta)
        pos, rows = batch.verb_at, np.arange(len(batch))
        logits = llama.forward(w, batch.ids[:, : pos.max() + 1], cfg.n_head)[rows, pos].astype(np.float64)
        singular, plural, past = _verb_forms()
        is_singular = np.isin(batch.good, singular)  # [N] the subject's number, read off its verb
        sing_mask = np.isin(np.arange(logits.shape[1]), singular)  # [n_vocab]
        plur_mask = np.isin(np.arange(logits.shape[1]), plural)
        right = np.where(is_singular[:, None], sing_mask, plur_mask)
        wrong = np.where(is_singular[:, None], plur_mask, sing_mask)
        _AGREEMENT[run] = (logits, sampling.ranking(logits), right, wrong, np.isin(np.arange(logits.shape[1]), past))
    return _AGREEMENT[run]


_AGREEMENT: dict = {}


def agreement_rates(logits, order, groups, temperature, top_k, top_p):  # [N, n_vocab] x2, [[N, n_vocab]] -> [float]
    """For each group of tokens, the exact expected share of sentences whose sampled token is in it: the mean over
    sentences of the final p summed over the group. No Monte Carlo."""
    p = sampling.final_probs(logits, temperature, top_k, top_p, order)  # [N, n_vocab]
    return [float((p * g).sum(1).mean()) for g in groups]


@functools.lru_cache(maxsize=4096)
def _rates(run, temperature, top_k, top_p):  # -> right, wrong, past, other: expected shares
    """agreement_rates for one run and setting, computed once: the table's rows recur as the other keys change."""
    logits, order, right, wrong, past = agreement_logits(run)
    groups = (right, wrong, past[None, :], ~(right | wrong | past[None, :]))
    return tuple(agreement_rates(logits, order, groups, temperature, top_k, top_p))


# --- the views ----------------------------------------------------------------------------------

def _check(top_p):
    """top_p = 0 passes the parameter's range, which is closed, but keeps nothing."""
    if not top_p > 0:
        raise ParamError("top_p must be above 0 and at most 1: with top_p=0 no token would be kept",
                         "top_p 必须大于 0、不超过 1：top_p=0 一个词元也留不下")


@functools.lru_cache(maxsize=1024, typed=True)  # keys pressed back and forth, and check-lessons, ask again
def _tiny_sample(prompt, temperature, top_k, top_p, seed, run):
    from .. import corpus
    _check(top_p)
    logits, order = _prompt_logits(prompt, run)
    st = sampling.filtered(logits, temperature, top_k, top_p, order)
    p = st["p"]
    cut, kept = Tr("cut", "去掉"), Tr("kept", "保留")
    words = prompt.split()
    cap = corpus.MAX_LEN - len(words)
    start = [corpus.INDEX[corpus.BOS]] + [corpus.INDEX[x] for x in words]
    conts = sampling.sample_continuations(functools.partial(_next_logits, run=run), start, corpus.INDEX[corpus.DOT],
                                          cap, N_SAMPLES, seed, temperature, top_k, top_p)
    texts = [" ".join(corpus.VOCAB[t] for t in c) for c in conts]
    singular, plural, past = _verb_forms()
    p_raw = sampling.apply_temperature(logits, 1.0)  # [n_vocab] the model's own distribution
    shapes = []
    for other in SHAPES:  # the same settings on prompts whose distributions differ in shape
        z, o = _prompt_logits(other, run)
        s_ = sampling.filtered(z, temperature, top_k, top_p, o)
        plausible = int((sampling.apply_temperature(z, 1.0) >= PLAUSIBLE).sum())
        shapes.append((other, plausible, int(s_["keep_k"].sum()), int(s_["keep"].sum()),
                       float(ops.entropy(s_["p"]))))
    return Result("tiny-sample", dict(prompt=prompt, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed,
                                      run=run), (
        Table("dist", Tr(f'After "{prompt}": every token, most likely first',
                         f"「{prompt}」之后：每个词元，按可能性从大到小"),
              (col("token", "token", "词元"), col("logit", "logit", "原始 logit", "+.2f"),
               col("p", "p sampled from", "采样用的 p", ".3f")),
              tuple((corpus.VOCAB[t], float(logits[t]), float(p[t])) for t in order),
              note=Tr("p: softmax(logit / T), top-k, top-p, renormalised; 0 once removed",
                      "p：softmax(logit / T)，再 top-k、top-p，重新归一化；去掉的为 0")),
        Table("filters", Tr("Which tokens each filter keeps", "每一道筛选留下哪些词元"),
              (col("token", "token", "词元"), col("p_temp", "softmax(z/T)", "softmax(z/T)", ".3f"),
               col("top_k", "top-k", "top-k 筛"), col("top_p", "top-p", "top-p 筛"),
               col("p", "final p", "最终 p", ".3f")),
              tuple((corpus.VOCAB[t], float(st["p_temp"][t]), kept if st["keep_k"][t] else cut,
                     (kept if st["keep_p"][t] else cut) if st["keep_k"][t] else "-", float(p[t])) for t in order),
              note=Tr("top-p adds the p top-k left, most likely first; ties: lower id first",
                      "top-p 从最可能的往下累加 top-k 留下的 p；并列时编号小的在前")),
        Table("shapes", Tr("The same settings after other prompts", "同样的设置，换几个开头"),
              (col("prompt", "prompt", "开头"), col("plausible", "p >= 1% at T=1", "T=1 时 p >= 1%", "d"),
               col("after_k", "after top-k", "top-k 后", "d"), col("left", "left to draw", "可抽", "d"),
               col("entropy", "entropy", "熵", ".2f")), tuple(shapes),
              note=Tr("tokens left to draw from; entropy of the final distribution, in nats",
                      "可抽：剩下可抽的词元数；熵：最终分布的熵，单位奈特")),
        Table("samples", Tr(f'{N_SAMPLES} continuations of "{prompt}", sampled with seed {seed}',
                            f"「{prompt}」的 {N_SAMPLES} 个续写，种子 {seed}"),
              (col("n", "#", "#", "d"), col("text", "continuation", "续写"), col("tokens", "tokens", "词元数", "d")),
              tuple((i + 1, text if text else Tr("(nothing)", "（无）"), len(c))
                    for i, (text, c) in enumerate(zip(texts, conts))),
              note=Tr(f"u = default_rng(seed).random(({N_SAMPLES}, {cap})): token t of row i uses u[i, t]",
                      f"u = default_rng(seed).random(({N_SAMPLES}, {cap}))：第 i 行第 t 个词元用 u[i, t]")),
    ), (Fact("n_vocab", Tr("tokens in the vocabulary", "词表里的词元"), len(p), "d"),
        Fact("plausible", Tr("tokens with p >= 1% at T=1", "T=1 时 p >= 1% 的词元"),
             int((p_raw >= PLAUSIBLE).sum()), "d"),
        Fact("survivors", Tr("tokens left to sample from", "剩下可抽的词元"), int(st["keep"].sum()), "d"),
        Fact("after_k", Tr("tokens left after top-k", "top-k 之后剩下的词元"), int(st["keep_k"].sum()), "d"),
        Fact("entropy", Tr("entropy of the final distribution, nats", "最终分布的熵（奈特）"),
             float(ops.entropy(p)), ".3f"),
        Fact("after_p", Tr("tokens left after top-k and top-p", "top-k 和 top-p 之后剩下的词元"),
             int(st["keep_p"].sum()), "d"),
        Fact("nucleus", Tr("p that top-p's tokens held before renormalising",
                           "top-p 留下的词元在重新归一化前的 p 之和"), float(st["p_k"][st["keep_p"]].sum()), ".3f"),
        Fact("entropy_raw", Tr("entropy at T=1 with no filter, nats", "T=1、不筛选时的熵（奈特）"),
             float(ops.entropy(p_raw)), ".3f"),
        Fact("top", Tr("most likely token", "最可能的词元"), corpus.VOCAB[order[0]]),
        Fact("top_logit", Tr("its logit", "它的 logit"), float(logits[order[0]]), "+.2f"),
        Fact("top_p_raw", Tr("its p at T=1", "它在 T=1 时的 p"), float(p_raw[order[0]]), ".3f"),
        Fact("top_final", Tr("its final p", "它的最终 p"), float(p[order[0]]), ".3f"),
        Fact("p_singular", Tr("final p on singular verb forms", "单数动词形式的最终 p"),
             float(p[singular].sum()), ".3f"),
        Fact("p_plural", Tr("final p on plural verb forms", "复数动词形式的最终 p"), float(p[plural].sum()), ".3f"),
        Fact("p_past", Tr("final p on past verbs", "过去式动词的最终 p"), float(p[past].sum()), ".3f"),
        Fact("plural_raw", Tr("p on plural verb forms at T=1", "T=1 时复数动词形式的 p"),
             float(p_raw[plural].sum()), ".3f"),
        Fact("n_samples", Tr("continuations sampled", "采样的续写"), N_SAMPLES, "d"),
        Fact("distinct", Tr(f"different continuations of {N_SAMPLES}", f"{N_SAMPLES} 个续写里互不相同的"),
             len(set(texts)), "d"),
        Fact("cap", Tr("most tokens a continuation may take: up to the training sentences' length",
                       "续写最多能有的词元数：到训练句子的最大长度为止"), cap, "d"),
        Fact("n_ended", Tr("continuations that ended with '.'", "以句号结束的续写"),
             sum(bool(c) and c[-1] == corpus.INDEX[corpus.DOT] for c in conts), "d"),
        Fact("n_capped", Tr("continuations stopped by the length cap", "被长度上限截断的续写"),
             sum(len(c) == cap and c[-1] != corpus.INDEX[corpus.DOT] for c in conts), "d"),
        Fact("greedy", Tr("greedy (temperature 0)", "贪心（温度为 0）"), temperature == 0),
        Fact("t_one", Tr("temperature 1", "温度为 1"), temperature == 1),
        Fact("as_raw", Tr("p is the model's own: T=1 and no token removed", "p 就是模型本来的分布：T=1 且没有去掉词元"),
             temperature == 1 and bool(st["keep_p"].all())),
        Fact("hotter", Tr("temperature above 1", "温度高于 1"), temperature > 1),
        *_filter_facts(top_k, top_p),
        Fact("filtered", Tr("top-k or top-p removed tokens", "top-k 或 top-p 去掉了词元"),
             bool(st["keep_p"].sum() < len(p)))))


def _filter_facts(top_k, top_p) -> tuple[Fact, ...]:
    """Which filters are on: the conditions the prose of both views reads."""
    return (Fact("top_k_on", Tr("top-k is on", "top-k 开着"), top_k > 0),
            Fact("top_k_one", Tr("top-k keeps one token", "top-k 只留一个词元"), top_k == 1),
            Fact("top_p_on", Tr("top-p is on", "top-p 开着"), top_p < 1),
            Fact("filters_on", Tr("top-k or top-p is on", "top-k 或 top-p 开着"), top_k > 0 or top_p < 1))


def _sample_agreement(temperature, top_k, top_p, run):
    from .. import corpus
    _check(top_p)
    logits = agreement_logits(run)[0]
    rows = tuple((t, *_rates(run, t, top_k, top_p)) for t in TEMPERATURES)
    now_r, now_w, _, _ = _rates(run, temperature, top_k, top_p)
    greedy_w = rows[0][2]
    return Result("sample-agreement", dict(temperature=temperature, top_k=top_k, top_p=top_p, run=run), (
        Table("agreement", Tr(f"The verb after a distractor of the other number, {len(logits):,} unseen sentences",
                              f"干扰名词单复数相反时的动词，{len(logits):,} 个未见过的句子"),
              (col("temperature", "temperature", "温度", "g"), col("right", "right number", "单复数对", "pct"),
               col("wrong", "wrong number", "单复数错", "pct"), col("past", "past verb", "过去式", "pct"),
               col("other", "any other word", "其他词", "pct")),
              rows,
              note=Tr("exact expected share of draws: p summed per column, mean over sentences"
                      + (f"; every row with top_k={top_k}, top_p={top_p:g}" if top_k > 0 or top_p < 1 else ""),
                      "采样的精确期望比例：每一列词元的 p 之和，再对句子取平均"
                      + (f"；每一行都用 top_k={top_k}、top_p={top_p:g}" if top_k > 0 or top_p < 1 else ""))),
    ), (Fact("wrong_now", Tr("wrong-number verbs at this temperature", "当前温度下单复数错的动词"), now_w, "pct"),
        Fact("right_now", Tr("right-number verbs at this temperature", "当前温度下单复数对的动词"), now_r, "pct"),
        Fact("wrong_greedy", Tr("wrong-number verbs, greedy", "贪心时单复数错的动词"), greedy_w, "pct"),
        Fact("wrong_hot", Tr(f"wrong-number verbs at temperature {TEMPERATURES[-1]:g}",
                             f"温度 {TEMPERATURES[-1]:g} 时单复数错的动词"), rows[-1][2], "pct"),
        Fact("sentences", Tr("sentences", "句子数"), len(logits), ","),
        Fact("middle", Tr(f"temperature between 0 and {TEMPERATURES[-1]:g}", f"温度在 0 和 {TEMPERATURES[-1]:g} 之间"),
             0 < temperature < TEMPERATURES[-1]),
        Fact("beyond", Tr(f"temperature above {TEMPERATURES[-1]:g}", f"温度高于 {TEMPERATURES[-1]:g}"),
             temperature > TEMPERATURES[-1]),
        Fact("grammar_agree", Tr("the grammar's share of agreeing verbs there", "语法里此处是一致动词的比例"),
             corpus.P_VERB["intransitive"] + corpus.P_VERB["transitive"], "pct"),
        Fact("grammar_past", Tr("the grammar's share of past verbs there", "语法里此处是过去式的比例"),
             corpus.P_VERB["past"], "pct"),
        *_filter_facts(top_k, top_p)))


_TEMPERATURE = Param("temperature", "float", 1.0, Tr("the logits are divided by it; 0 is greedy",
                                                     "logit 都除以它；0 为贪心"), 0, 5)
_TOP_K = Param("top_k", "int", 0, Tr("keep the k most likely tokens; 0 is off", "只留最可能的 k 个词元；0 为不筛"),
               0, 52)  # the vocabulary's size, len(corpus.VOCAB); a test checks it
_TOP_P = Param("top_p", "float", 1.0, Tr("keep the fewest top tokens holding this much p; above 0, 1 is off",
                                         "只留总概率达到它的最少几个词元；须大于 0，1 为不筛"), 0, 1)

register(View("tiny-sample", Tr("The trained tiny Llama: sampling the next token", "训练好的小 Llama：采样下一个词元"),
     (Param("prompt", "sentence", "the cat near the dogs", Tr("words so far", "已有的词")),
      _TEMPERATURE, _TOP_K, _TOP_P,
      Param("seed", "int", 0, Tr("random draw of the samples", "续写的随机种子"), 0, 2**32 - 1),
      _RUN), _tiny_sample, (sampling.filtered, sampling.top_p_keep, sampling.sample_continuations)))

register(View("sample-agreement", Tr("The trained tiny Llama: sampling against agreement",
                                     "训练好的小 Llama：采样与主谓一致"),
     (_TEMPERATURE, _TOP_K, _TOP_P, _RUN), _sample_agreement, (agreement_rates, sampling.final_probs)))
