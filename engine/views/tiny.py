"""The trained tiny Llama: next token and logit lens, every head's attention, heads pulled apart,
which head carries agreement, and the grammar. The weights load on first use."""

import numpy as np

from .. import llama, ops
from ..errors import ParamError
from .core import Chart, Column, Fact, Param, Result, Series, Table, Tr, View, col, lazy_source, register, run_view

# --- the trained tiny Llama ---------------------------------------------------------------

def _trained(run: str = "seed0"):
    """A run's weights, loaded once: a shipped run's, or the learner's own (run=yours, use_weights)."""
    if run == YOURS:
        if YOURS not in _TRAINED:
            raise ParamError("run=yours needs weights of your own: start with --weights FILE.npz, a file that "
                             "xf-tour train wrote",
                             "run=yours 需要你自己的权重：用 --weights FILE.npz 启动，文件由 xf-tour train 写出")
        return _TRAINED[YOURS]
    if run not in _TRAINED:
        from .. import tiny
        _TRAINED[run] = tiny.load(tiny.RUNS[run])
    return _TRAINED[run]


_TRAINED: dict = {}
YOURS = "yours"  # the run name of the weights a learner trained (xf-tour train) and opened (--weights)
MOST_BYTES = 16 * 2**20  # a weights file, and what its arrays unpack to: `big`'s is 0.5 MiB


def use_weights(path) -> str:
    """Take the weights that `xf-tour train --config main` wrote at `path` as run=yours, in every trained-model
    view; the file's name, which the footer and message show. ParamError, in one line, for anything else: not
    a file, too big, not an .npz of train's, another config than main's (the lessons speak of its 2 layers of 4
    heads), weights that are not finite, a manifest whose figures are not what train writes, or one a view
    cannot read (each view is run on them once, here). The weights opened before stay until these pass."""
    import os
    import stat
    import zipfile
    from pathlib import Path

    from .. import corpus, tiny

    name = Path(path).name

    def refuse(en, zh):
        return ParamError(f"{name}: {en}", f"{name}：{zh}")

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO named by mistake must not block the start
    except OSError as err:
        raise refuse(f"cannot open it ({err.strerror})", f"无法打开（{err.strerror}）") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise refuse("not a regular file", "不是普通文件")
    with os.fdopen(fd, "rb") as f:
        if st.st_size > MOST_BYTES:
            raise refuse(f"more than {MOST_BYTES // 2**20} MiB, far more than weights take",
                         f"超过 {MOST_BYTES // 2**20} MiB，远大于权重文件")
        try:
            if sum(i.file_size for i in zipfile.ZipFile(f).infolist()) > MOST_BYTES:  # a zip bomb
                raise refuse("unpacks to more than weights take", "解压后超过权重文件的上限")
            f.seek(0)
            w, cfg, meta = tiny.load(f)
        except ParamError:
            raise
        except Exception as err:  # not an .npz, not train's manifest, weights that do not match it
            raise refuse(f"not weights that xf-tour train wrote ({type(err).__name__})",
                         f"不是 xf-tour train 写出的权重（{type(err).__name__}）") from None
    main = tiny.CONFIGS["main"]
    shape = (cfg.d_model, cfg.n_layer, cfg.n_head, cfg.d_ff, cfg.n_vocab)
    if shape != (main.d_model, main.n_layer, main.n_head, main.d_ff, len(corpus.VOCAB)):
        raise refuse(f"d_model {cfg.d_model}, {cfg.n_layer} x {cfg.n_head} heads, d_ff {cfg.d_ff}, vocabulary "
                     f"{cfg.n_vocab}: not the main config the lessons show (train --config main)",
                     f"d_model {cfg.d_model}、{cfg.n_layer} 层 x {cfg.n_head} 头、d_ff {cfg.d_ff}、词表 {cfg.n_vocab}："
                     "不是课程展示的 main 配置（train --config main）")
    if not all(np.isfinite(a).all() for a in w.values()):
        raise refuse("weights that are not finite (the training diverged)", "权重里有非有限值（训练发散了）")
    problem = manifest_problem(meta, cfg)
    if problem is not None:
        raise refuse(f"its manifest is not one xf-tour train wrote ({problem})",
                     f"其清单不是 xf-tour train 写出的（{problem}）")
    before = _TRAINED.get(YOURS)
    forget_yours()
    _TRAINED[YOURS] = (w, cfg, meta)
    try:
        for view in YOUR_VIEWS:
            run_view(view, {"run": YOURS})
    except Exception as err:
        forget_yours()  # and what was computed from them: the weights opened before come back
        if before is not None:
            _TRAINED[YOURS] = before
        raise refuse(f"its manifest is not one xf-tour train wrote ({type(err).__name__})",
                     f"其清单不是 xf-tour train 写出的（{type(err).__name__}）") from None
    return name


def manifest_problem(meta, cfg) -> str | None:
    """What in a manifest is not as `xf-tour train` writes it, or None: every figure a view reads or shows is a
    finite number of the right kind and count (a string there would reach a title, a list a number's format),
    and the probe sentences are few and made of the vocabulary's ids."""
    import math

    from .. import corpus, tiny

    def number(x, whole=False):
        return (isinstance(x, int) or not whole and isinstance(x, float) and math.isfinite(x)) \
            and not isinstance(x, bool)

    def numbers(xs, n=None, whole=False, least=1, most=100_000):
        return isinstance(xs, list) and least <= len(xs) <= most and (n is None or len(xs) == n) \
            and all(number(x, whole) for x in xs)

    def ids(xs, n=None):
        return numbers(xs, n, whole=True, most=tiny.PROBE_SENTENCES) and all(0 <= x < cfg.n_vocab for x in xs)

    if not isinstance(meta, dict):
        return "not a table"
    for key in ("loss", "loss_unseen", "floor", "agreement", "entropy_spread_init", "entropy_spread_trained"):
        if not number(meta.get(key)):
            return key
    if not number(meta.get("steps"), whole=True):
        return "steps"
    for key in ("head_entropy_init", "head_entropy_trained"):
        rows = meta.get(key)
        if not (isinstance(rows, list) and len(rows) == cfg.n_layer
                and all(numbers(r, cfg.n_head) and min(r) > 0 for r in rows)):
            return key
    curve = meta.get("curve")
    if not isinstance(curve, dict):
        return "curve"
    for key in ("loss_every", "spread_every", "spread_sentences"):
        if not (number(curve.get(key), whole=True) and curve[key] >= 1):
            return f"curve.{key}"
    for x, y in (("loss_step", "loss"), ("spread_step", "spread")):
        if not (numbers(curve.get(x), whole=True) and numbers(curve.get(y), len(curve[x]))):
            return f"curve.{y}"
    probe = meta.get("probe")
    if not isinstance(probe, dict) or not isinstance(probe.get("ids"), list) \
            or not 1 <= len(probe["ids"]) <= tiny.PROBE_SENTENCES:
        return "probe"
    n = len(probe["ids"])
    if not all(isinstance(row, list) and ids(row) and len(row) <= corpus.MAX_LEN + 1 for row in probe["ids"]):
        return "probe.ids"
    if not (ids(probe.get("good"), n) and ids(probe.get("bad"), n) and numbers(probe.get("verb_at"), n, whole=True)
            and all(1 <= v < len(row) for v, row in zip(probe["verb_at"], probe["ids"]))):
        return "probe"
    heads = meta.get("ablation")
    if not (isinstance(heads, list) and len(heads) == cfg.n_layer * cfg.n_head and all(
            isinstance(h, dict) and number(h.get("layer"), True) and 1 <= h["layer"] <= cfg.n_layer
            and number(h.get("head"), True) and 0 <= h["head"] < cfg.n_head
            and all(number(h.get(k)) for k in ("attention", "change", "lost")) for h in heads)):
        return "ablation"
    return None


def forget_yours() -> None:
    """Drop the learner's weights and what was computed from them."""
    _TRAINED.pop(YOURS, None)
    for forget in _FORGET:
        forget()


_FORGET: list = []  # what each module that keeps results of a run clears when the learner's weights change


def _tiny_run(sentence: str, head_mask=None, run: str = "seed0"):
    from .. import corpus
    w, cfg, _ = _trained(run)
    words = sentence.split()
    ids = corpus.encode([corpus.Sentence(tuple(words), 0.0, 0, None, None)])[:, : len(words) + 1]
    keep = {}
    if head_mask is not None:
        w = llama.silence_heads(w, head_mask, cfg.n_head)
    logits = llama.forward(w, ids, cfg.n_head, keep=keep)
    return w, cfg, ["<bos>"] + words, logits[0], keep


def _softmax_row(z):
    e = np.exp(z - z.max())
    return e / e.sum()


def _tiny_next(sentence, run):
    from .. import corpus
    w, cfg, words, logits, keep = _tiny_run(sentence, run=run)
    probs = _softmax_row(logits[-1])
    top = np.argsort(-probs, kind="stable")[:5]
    lens, leads = [], []
    for i, x in enumerate(keep["residual"]):  # the logit lens: read each layer's x with the final norm and head
        p = _softmax_row((ops.rms_norm(x[0, -1], w["norm_f"]) @ w["head"]).astype(np.float64))
        best = np.argsort(-p, kind="stable")[:3]
        stage = Tr("embedding", "词嵌入") if i == 0 else Tr(f"after layer {i}", f"第 {i} 层之后")
        lens.append((stage, *[f"{corpus.VOCAB[j]} {p[j]:.2f}" for j in best]))
        where = Tr("the embedding", "词嵌入") if i == 0 else Tr(f"layer {i}", f"第 {i} 层")
        leads += [Fact(f"lens_word_{i}", Tr(f"the top word read at {where.en}", f"{where.zh}读出的第一名"),
                       corpus.VOCAB[best[0]]),
                  Fact(f"lens_p_{i}", Tr(f"its p at {where.en}", f"它在{where.zh}的 p"), float(p[best[0]]), ".2f")]
    return Result("tiny-next", dict(sentence=sentence, run=run), (
        Table("next", Tr(f'After "{sentence}": the trained model\'s next token',
                         f"「{sentence}」之后：训练好的模型预测的下一个词元"),
              (col("rank", "rank", "名次"), col("token", "token", "词元"), col("p", "probability", "概率", ".3f")),
              tuple((i + 1, corpus.VOCAB[t], float(probs[t])) for i, t in enumerate(top))),
        Table("lens", Tr("Logit lens: the last position read after each layer", "logit 透镜：逐层读取最后一个位置"),
              (col("stage", "read at", "读取位置"), col("first", "1st", "第一"), col("second", "2nd", "第二"),
               col("third", "3rd", "第三")), tuple(lens)),
    ), (Fact("top", Tr("most likely next", "最可能的下一个词元"), corpus.VOCAB[top[0]]),
        Fact("top_p", Tr("its probability", "它的概率"), float(probs[top[0]]), ".3f"),
        Fact("p_singular", Tr("on singular verb forms (sits, sees...)", "单数动词形式（sits、sees……）的概率"),
             float(sum(probs[corpus.INDEX[p[0]]] for p in corpus.INTRANSITIVE + corpus.TRANSITIVE)), ".3f"),
        Fact("p_plural", Tr("on plural verb forms (sit, see...)", "复数动词形式（sit、see……）的概率"),
             float(sum(probs[corpus.INDEX[p[1]]] for p in corpus.INTRANSITIVE + corpus.TRANSITIVE)), ".3f"),
        *leads))


def _short(word: str) -> str:
    return word if len(word) <= 6 else word[:5] + "."


def _tiny_attention(sentence, layer, run):
    w, cfg, words, logits, keep = _tiny_run(sentence, run=run)
    if layer > cfg.n_layer:
        raise ParamError(f"layer must be from 1 to {cfg.n_layer}", f"layer 必须在 1 到 {cfg.n_layer} 之间")
    p = keep["attn"][layer - 1][0]  # [H, T, T]
    labels = tuple(Tr(_short(x), _short(x)) for x in words)
    tables = []
    for h in range(cfg.n_head):
        cols = (Column("token", Tr("query", "查询")),) + tuple(
            Column(f"k{j}", lab, ".2f") for j, lab in enumerate(labels))
        tables.append(Table(f"head{h}", Tr(f"Layer {layer}, head {h}", f"第 {layer} 层 {h} 号头"), cols,
                            tuple((lab,) + tuple(float(v) for v in row) for lab, row in zip(labels, p[h])),
                            heat="weights"))
    return Result("tiny-attention", dict(sentence=sentence, layer=layer, run=run), tuple(tables),
                  _verb_look(words, keep, cfg)[1])


def _tiny_verb(sentence, run):
    w, cfg, words, logits, keep = _tiny_run(sentence, run=run)
    table, facts = _verb_look(words, keep, cfg)
    if table is None:
        raise ParamError(f"{sentence!r} has no verb after its subject", f"「{sentence}」的主语后面没有动词")
    return Result("tiny-verb", dict(sentence=sentence, run=run), (table,), facts)


def _verb_look(words, keep, cfg):
    """Where the first verb looks in every head of every layer, and the head that looks hardest at the
    subject; (None, ()) for a sentence without a verb."""
    from .. import corpus
    verbs = [i for i, x in enumerate(words) if any(x in pair for pair in corpus.INTRANSITIVE + corpus.TRANSITIVE)
             or x in corpus.PAST]
    if not verbs or len(words) <= 2:
        return None, ()
    v, subj = verbs[0], _subject_position(words)
    labels = tuple(Tr(_short(x), _short(x)) for x in words[: v + 1])
    cols = (Column("head", Tr("layer.head", "层.头")),) + tuple(
        Column(f"k{j}", lab, ".2f") for j, lab in enumerate(labels))
    table = Table("verb", Tr(f'Where "{words[v]}" looks, in every head of every layer',
                             f"「{words[v]}」在每一层每个头里看向哪里"), cols,
                  tuple((f"{li + 1}.{h}", *map(float, keep["attn"][li][0, h, v, : v + 1]))
                        for li in range(cfg.n_layer) for h in range(cfg.n_head)), heat="weights")
    looks = [(keep["attn"][li][0, h, v, subj], li + 1, h) for li in range(cfg.n_layer) for h in range(cfg.n_head)]
    weight, best_layer, best_head = max(looks)
    facts = (Fact("verb", Tr("the verb", "动词"), words[v]),
             Fact("subject", Tr("its subject", "它的主语"), words[subj]),
             Fact("best_head", Tr("over both layers, the head attending most from the verb to its subject",
                                  "两层中从动词看向主语最集中的头"),
                  Tr(f"layer {best_layer} head {best_head}", f"第 {best_layer} 层 {best_head} 号头")),
             Fact("best_row", Tr("its row in the table", "它在表里的行"), f"{best_layer}.{best_head}"),
             Fact("best_weight", Tr("with weight", "权重"), float(weight), ".2f"))
    return table, facts


def _tiny_heads(run):
    _, cfg, meta = _trained(run)
    init, trained = meta["head_entropy_init"], meta["head_entropy_trained"]
    rows = tuple((layer + 1, h, init[layer][h], trained[layer][h], trained[layer][h] / init[layer][h])
                 for layer in range(cfg.n_layer) for h in range(cfg.n_head))
    return Result("tiny-heads", dict(run=run), (
        Table("heads", Tr("Mean attention entropy of each head, before and after training",
                          "每个头的平均注意力熵：训练前与训练后"),
              (col("layer", "layer", "层", "d"), col("head", "head", "头", "d"),
               col("init", "at init", "初始化时", ".3f"), col("trained", "trained", "训练后", ".3f"),
               col("ratio", "trained / init", "训练后 / 初始", ".2f")), rows,
              note=Tr("nats, averaged over the query positions after the first, on the same held-out sentences",
                      "单位奈特，对同一批未见过的句子、除第一个位置外的所有查询位置取平均")),
        _curve_table(meta),
    ), (Fact("spread_init", Tr("head-entropy spread at init (max / min)", "初始化时的熵之比（最大 / 最小）"),
             meta["entropy_spread_init"], ".2f"),
        Fact("spread_trained", Tr("head-entropy spread trained (max / min)", "训练后的熵之比（最大 / 最小）"),
             meta["entropy_spread_trained"], ".2f"),
        Fact("steps", Tr("training steps", "训练步数"), meta["steps"], ","),
        Fact("agreement", Tr("subject-verb agreement on unseen sentences", "未见过的句子上的主谓一致率"),
             meta["agreement"], "pct"),
        Fact("floor", Tr("the grammar's entropy: the lowest loss any model can reach",
                         "语法本身的熵：任何模型的损失都不可能更低"), meta["floor"], ".3f"),
        Fact("first_loss", Tr("training loss over the first steps", "最初几步的训练损失"),
             meta["curve"]["loss"][0], ".2f"),
        *_near_floor(meta),
        Fact("loss", Tr("loss, trained, on fresh sentences", "训练后在新句子上的损失"), meta["loss"], ".3f")),
            _curve_charts(meta))


def _curve_table(meta) -> Table:
    """The curves' numbers at every spread reading: each step's loss is the loss chart's point there (None at
    step 0, before any step), its spread the spread chart's."""
    c = meta["curve"]
    loss = dict(zip(c["loss_step"], c["loss"]))
    every, n = c["loss_every"], c["spread_sentences"]
    return Table("curve", Tr(f"Training as it went, every {c['spread_every']} steps",
                             f"训练过程，每 {c['spread_every']} 步一行"),
                 (col("step", "step", "步数", ","), col("loss", "training loss", "训练损失", ".4f"),
                  col("spread", "head spread", "头熵之比", ".2f")),
                 tuple((step, loss.get(step), value) for step, value in zip(c["spread_step"], c["spread"])),
                 note=Tr(f"loss: the mean over the {every} steps up to this one (the chart also draws the windows "
                         f"between); spread: max / min of the heads' entropies on the first {n} held-out sentences",
                         f"损失：到这一步为止 {every} 步的平均（图里还画出了中间各段）；熵之比：在前 {n} 个"
                         "未见过的句子上，各头平均熵的最大值除以最小值"))


NEAR_FLOOR = 0.03  # nats above the floor at which the loss counts as there


def _near_floor(meta) -> tuple[Fact, ...]:
    """When the training loss first comes within NEAR_FLOOR of the floor, and the head spread at the last reading
    by then: the heads go on pulling apart after the loss has all but stopped falling."""
    c = meta["curve"]
    step = next((s for s, v in zip(c["loss_step"], c["loss"]) if v - meta["floor"] < NEAR_FLOOR), c["loss_step"][-1])
    spread = [v for s, v in zip(c["spread_step"], c["spread"]) if s <= step][-1]
    return (Fact("near", Tr("nats above the floor that count as there", "离下限多少奈特以内算到了"), NEAR_FLOOR, ".2f"),
            Fact("near_step", Tr(f"the first step with the loss within {NEAR_FLOOR} of the floor",
                                 f"损失离下限不到 {NEAR_FLOOR} 的第一步"), step, ","),
            Fact("near_spread", Tr("the head spread by then", "那时的熵之比"), spread, ".2f"),
            Fact("kept_growing", Tr("the spread grew by a tenth or more after that", "此后熵之比又涨了一成以上"),
                 c["spread"][-1] >= 1.1 * spread))


def _curve_charts(meta) -> tuple[Chart, ...]:
    """The run's training curves from its manifest (tiny.train records them): the loss against the floor, on a
    log scale of steps (linear, the fall fills the first few columns); the head-entropy spread from 1, where
    every head would be alike."""
    c = meta["curve"]
    loss = Chart("loss", Tr(f"Training loss, mean of every {c['loss_every']} steps; steps on a log scale",
                            f"训练损失（每 {c['loss_every']} 步取平均；步数按对数刻度）"), "line",
                 (Series(Tr("training loss", "训练损失"), tuple(c["loss"])),
                  Series(Tr("floor", "熵下限"), (meta["floor"],) * len(c["loss"]))),
                 x=tuple(float(x) for x in c["loss_step"]), x_label=Tr("step, log scale", "训练步数，对数刻度"),
                 y_label=Tr("nats per token", "奈特/词元"), log_x=True)  # the floor: in the legend and the prose
    n = c["spread_sentences"]
    spread = Chart("spread", Tr(f"Head-entropy spread (max / min), every {c['spread_every']} steps on {n} held-out "
                                "sentences",
                                f"各头的熵之比（最大 / 最小），每 {c['spread_every']} 步在 {n} 个未见过的句子上测一次"),
                   "line", (Series(Tr("head spread", "头熵之比"), tuple(c["spread"])),),
                   x=tuple(float(x) for x in c["spread_step"]), x_label=Tr("step", "训练步数"),
                   y_range=(1.0, max(c["spread"])))
    return loss, spread


def _subject_position(words) -> int:
    """Where the subject noun sits in <bos> the [adjective] noun ...: index 2, or 3 after an adjective."""
    from .. import corpus
    return 3 if words[2] in corpus.ADJECTIVES else 2


_RUN = Param("run", "choice", "seed0", Tr("which training run: a shipped one, or yours (--weights)",
                                         "哪一次训练：随附的，或你自己的（--weights）"),
             choices=("seed0", "seed1", YOURS))
YOUR_VIEWS = ("tiny-next", "tiny-attention", "tiny-verb", "tiny-heads", "tiny-sample", "sample-agreement",
              "tiny-head", "tiny-loss")  # the trained-model views that take run; tiny-ablation sets the two shipped
#                                          runs side by side




def _wrapped_words(label, words, width=50):
    """Rows of (label, words) no wider than width, the label on the first row only."""
    lines, line = [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    return [(label if i == 0 else "", text) for i, text in enumerate(lines)]


def _tiny_vocab():
    from .. import corpus
    groups = ((Tr("subjects and objects", "主语和宾语"), [w for pair in corpus.NOUNS for w in pair]),
              (Tr("verbs that agree", "需要一致的动词"),
               [w for pair in corpus.INTRANSITIVE + corpus.TRANSITIVE for w in pair]),
              (Tr("past verbs", "过去式动词"), list(corpus.PAST)),
              (Tr("other words", "其他词"), [corpus.THE, corpus.DOT, *corpus.ADJECTIVES, *corpus.DISTRACTOR_PREPS,
                                             *corpus.PLACE_PREPS, *corpus.PLACES]))
    h, length, floor = corpus.entropy_floor()
    return Result("tiny-vocab", {}, (
        Table("words", Tr("The tiny grammar's words", "小语法的词表"),
              (col("group", "group", "类别"), col("words", "words", "词")),
              tuple(row for g, ws in groups for row in _wrapped_words(g, ws))),
    ), (Fact("floor", Tr("entropy floor, nats per token", "熵下限（每词元奈特）"), floor, ".4f"),
        Fact("length", Tr("tokens per sentence, on average", "平均每句词元数"), length, ".2f")))


register(View("tiny-vocab", Tr("The tiny grammar", "小语法"), (), _tiny_vocab, (lazy_source("corpus", "sample"),)))

register(View("tiny-next", Tr("The trained tiny Llama: next token and logit lens",
                              "训练好的小 Llama：下一个词元与逻辑透镜"),
     (Param("sentence", "sentence", "the cat near the dogs", Tr("words so far", "已有的词")), _RUN),
     _tiny_next, llama.CODE))

register(View("tiny-attention", Tr("The trained tiny Llama: every head's attention",
                                   "训练好的小 Llama：每个头的注意力"),
     (Param("sentence", "sentence", "the cat sat on the mat .", Tr("the sentence", "句子")),
      Param("layer", "int", 1, Tr("which layer", "哪一层"), 1, 2), _RUN),  # the shipped runs have 2 layers
     _tiny_attention, llama.CODE))

register(View("tiny-verb", Tr("The trained tiny Llama: where the verb looks", "训练好的小 Llama：动词看向哪里"),
     (Param("sentence", "sentence", "the cat sat on the mat .", Tr("the sentence", "句子")), _RUN),
     _tiny_verb, llama.CODE))

register(View("tiny-heads", Tr("The trained tiny Llama: heads pulled apart", "训练好的小 Llama：被拉开的各个头"),
     (_RUN,), _tiny_heads, (lazy_source("tiny", "evaluate"), lazy_source("tiny", "head_entropies"))))
