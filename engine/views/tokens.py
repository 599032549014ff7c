"""Lesson 10: tokens in, probabilities out. A byte-level BPE trained on the tour's own prose, what the
vocabulary costs in parameters, the final norm and LM head of the trained tiny Llama, and the
next-token loss at each position of a sentence."""

import math
import tomllib
import unicodedata
from pathlib import Path

import numpy as np

from .. import bpe, llama, ops, sizing
from .core import Fact, Param, Result, Table, Tr, View, col, register
from .tiny import _RUN, _softmax_row, _tiny_run, _trained

# --- from text to ids -------------------------------------------------------------------------

LESSONS = Path(__file__).resolve().parents[2] / "lessons"  # the shipped lesson files: the tokenizer's training text
MAX_MERGES = 1000
_TRAIN_SIZES = (500, MAX_MERGES)  # train once to the first size that covers the request; 500 covers the lesson
PAIRS = {  # one sentence in both languages, the same meaning: what each costs in tokens
    "model": ("The model predicts the next token.", "模型预测下一个词元。"),
    "heads": ("Each head computes its own attention weights.", "每个头各自算出自己的注意力权重。"),
    "fox": ("The fox jumps over the lazy dog.", "狐狸跳过了那只懒狗。"),  # words the tour's prose rarely uses
}


def tour_text() -> tuple[str, str]:
    """The prose of the shipped lessons, (English, Chinese): every `text` of every step, experiment and
    pitfall, files in name order; read once per process. It changes whenever the lessons do, and so do
    the merges."""
    if not _TEXT:
        _TEXT.extend(_read_lessons())
    return _TEXT[0], _TEXT[1]


_TEXT: list = []


def _read_lessons():
    en, zh = [], []
    for path in sorted(LESSONS.glob("*.toml")):
        try:  # the loader reports a broken lesson; here it only adds no text
            lesson = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        for part in ("steps", "experiments", "pitfalls"):
            for item in lesson.get(part, []) if isinstance(lesson.get(part), list) else []:
                text = item.get("text") if isinstance(item, dict) else None
                if isinstance(text, dict):
                    en.append(str(text.get("en", "")))
                    zh.append(str(text.get("zh", "")))
    return "\n".join(en), "\n".join(zh)


def tour_merges(n_merges: int) -> list:
    """The first n_merges merges learned from the tour's prose in both languages: from SHIPPED when it was
    learned from these very lesson files, else trained once per process (about half a second)."""
    if n_merges == 0:
        return []  # bytes alone: nothing to train
    shipped = _shipped()
    if shipped is not None and n_merges <= len(shipped["merges"]):
        return [tuple(pair) for pair in shipped["merges"][:n_merges]]
    size = next(s for s in _TRAIN_SIZES if s >= n_merges)
    if size not in _MERGES:
        en, zh = tour_text()
        _MERGES[size] = bpe.train(en + "\n" + zh, size)
    return _MERGES[size][:n_merges]


_MERGES: dict = {}

# The merges learned from the shipped lessons, kept with the lesson files' fingerprint: BPE's training is
# deterministic, so a start that finds the same files reads the merges instead of learning them again, as
# a tokenizer ships its merges. tests/test_tokens.py retrains and compares; after editing a lesson, rewrite
# it with `.venv/bin/python -m engine.views.tokens`. Until then the merges are learned at first use.
SHIPPED = Path(__file__).resolve().parents[1] / "data" / "bpe-merges.json"


def lessons_fingerprint() -> str:
    """sha256 over the shipped lesson files' names and bytes, in name order."""
    import hashlib
    h = hashlib.sha256()
    for path in sorted(LESSONS.glob("*.toml")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _shipped():
    """SHIPPED's content if it was learned from the lesson files as they are now, else None."""
    if "data" not in _SHIPPED:
        import json
        try:
            data = json.loads(SHIPPED.read_text(encoding="utf-8"))
            _SHIPPED["data"] = data if data.get("lessons") == lessons_fingerprint() else None
        except (OSError, ValueError, AttributeError):
            _SHIPPED["data"] = None
    return _SHIPPED["data"]


_SHIPPED: dict = {}


def text_sizes() -> tuple[int, int, int]:
    """The training text's English characters, Chinese characters and bytes."""
    shipped = _shipped()
    if shipped is not None:
        return shipped["train_en"], shipped["train_zh"], shipped["train_bytes"]
    en, zh = tour_text()
    return len(en), len(zh), len((en + "\n" + zh).encode("utf-8"))


def write_shipped() -> None:
    """Learn MAX_MERGES merges from the lessons as they are and write SHIPPED (atomically)."""
    import json
    import os
    en, zh = tour_text()
    data = {"lessons": lessons_fingerprint(), "train_en": len(en), "train_zh": len(zh),
            "train_bytes": len((en + "\n" + zh).encode("utf-8")),
            "merges": [list(pair) for pair in bpe.train(en + "\n" + zh, MAX_MERGES)]}
    tmp = SHIPPED.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    os.replace(tmp, SHIPPED)


def _shown(piece: bytes) -> str:
    """A token as a table cell (bpe.shown), and | as <7c>: it parts the tokens."""
    return bpe.shown(piece).replace("|", "<7c>")


def _cells(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _wrap(label, pieces, width=62, most=4):
    """Rows of (label, pieces joined by |) no wider than width cells, the label on the first row only; past
    `most` rows, the last one ends with how many tokens are left out (a long typed text). Rows are lists of
    pieces until they are joined: a piece may itself hold a |."""
    rows, row = [], []
    for p in pieces:
        if row and _cells("|".join(row)) + 1 + _cells(p) > width:
            rows.append(row)
            row = [p]
        else:
            row.append(p)
    rows.append(row)
    if len(rows) > most:
        rows, left = rows[:most], sum(len(r) for r in rows[most:])
        last = rows[-1]
        while last and _cells("|".join(last)) + len(f"|... +{left + 1:,}") > width:  # room for the count
            last.pop()
            left += 1
        rows[-1] = last + [f"... +{left:,}"]
    lines = [text + "|" for text in map("|".join, rows[:-1])] + ["|".join(rows[-1])]
    return [(label if i == 0 else "", text) for i, text in enumerate(lines)]


def side_of(text: str) -> str:
    """Which sentence of a pair a learner's text stands in for: "zh" when most of its non-space characters
    are wide (CJK), else "en"."""
    chars = [c for c in text if not c.isspace()]
    wide = sum(unicodedata.east_asian_width(c) in "WF" for c in chars)
    return "zh" if 2 * wide > len(chars) else "en"


def split_chars(text: str, ids, table) -> list[str]:
    """The characters of text that no token holds whole: a token boundary falls inside their UTF-8 bytes."""
    ends, at = set(), 0
    for i in ids:  # byte offsets where a token ends
        at += len(table[i])
        ends.add(at)
    out, at = [], 0
    for c in text:
        n = len(c.encode("utf-8"))
        if any(at + k in ends for k in range(1, n)):
            out.append(c)
        at += n
    return out


def _listed(chars, most=6) -> str:
    """Distinct characters in order of first appearance, at most `most` of them shown."""
    distinct = list(dict.fromkeys(chars))
    return "".join(distinct[:most]) + ("..." if len(distinct) > most else "")


def _bpe(merges, pair, text=None):
    merges_ = tour_merges(merges)
    sentences = dict(zip(("en", "zh"), PAIRS[pair]))
    if text is not None:  # the learner's own text, in place of the sentence of its script
        sentences[side_of(text)] = text
    table = bpe.vocab(merges_)
    train_en, train_zh, train_bytes = text_sizes()
    rows, pieces, facts = [], [], []
    for lang, label in (("en", Tr("English", "英文")), ("zh", Tr("Chinese", "中文"))):
        sentence = sentences[lang]
        ids = bpe.encode(sentence, merges_)
        n_bytes = len(sentence.encode("utf-8"))
        row = Tr("Yours", "你的") if text is not None and side_of(text) == lang else label  # the typed one
        rows.append((row, len(sentence), n_bytes, len(ids), len(ids) / len(sentence)))
        pieces += _wrap(row, [_shown(table[i]) for i in ids])
        facts += [Fact(f"{lang}_words", Tr(f"{label.en} words", f"{label.zh}词数"), len(sentence.split()), "d"),
                  Fact(f"{lang}_tokens", Tr(f"{label.en} tokens", f"{label.zh}词元数"), len(ids), "d"),
                  Fact(f"{lang}_chars", Tr(f"{label.en} characters", f"{label.zh}字符数"), len(sentence), "d"),
                  Fact(f"{lang}_bytes", Tr(f"{label.en} bytes", f"{label.zh}字节数"), n_bytes, "d"),
                  Fact(f"{lang}_per_char", Tr(f"{label.en} tokens per character", f"{label.zh}每个字符的词元数"),
                       len(ids) / len(sentence), ".2f")]
    quoted = lambda i: f"'{_shown(table[i])}'"  # noqa: E731  quotes show a token's spaces
    learned = [(i + 1, quoted(a), quoted(b), quoted(bpe.N_BYTES + i))
               for i, (a, b) in enumerate(merges_) if i < 4 or i >= len(merges_) - 3]
    en_n, zh_n = rows[0][3], rows[1][3]
    split = split_chars(sentences["zh"], bpe.encode(sentences["zh"], merges_), table)
    seen = max((tour_text()[1].count(c) for c in set(split)), default=0)
    return Result("bpe", dict(merges=merges, pair=pair, text=text), (
        Table("cost", Tr("One sentence in two languages, and what it costs", "同一句话的两种语言，各要几个词元"),
              (col("lang", "sentence", "句子"), col("chars", "characters", "字符", "d"),
               col("bytes", "bytes", "字节", "d"), col("tokens", "tokens", "词元", "d"),
               col("per_char", "tokens/char", "词元/字符", ".2f")), tuple(rows)),
        Table("pieces", Tr(f"The tokens after {merges} merges", f"{merges} 次合并之后的词元"),
              (col("lang", "sentence", "句子"), col("tokens", "tokens, split by |", "词元（用 | 隔开）")),
              tuple(pieces), note=Tr("<e4>: one byte of a character split across tokens",
                                     "<e4>：一个字被拆开后，其中的一个字节")),
        Table("learned", Tr("Merges learned from the tour's prose: the first and the latest",
                            "从导览正文学到的合并：最早的几次和最近的几次"),
              (col("n", "merge", "第几次", "d"), col("left", "left", "左"), col("right", "right", "右"),
               col("token", "new token", "新词元")),
              tuple(learned) or ((0, "-", "-", Tr("none yet: every byte is a token",
                                                  "还没有：每个字节就是一个词元")),)),
    ), (Fact("merges", Tr("merges", "合并次数"), merges, ","),
        Fact("bytes_only", Tr("no merges: every byte is a token", "没有合并：每个字节是一个词元"), merges == 0),
        Fact("n_vocab", Tr("vocabulary: 256 bytes + merges", "词表：256 个字节 + 合并"), len(table), ","),
        Fact("train_en", Tr("training text, English characters", "训练文本中的英文字符数"), train_en, ","),
        Fact("train_zh", Tr("training text, Chinese characters", "训练文本中的中文字符数"), train_zh, ","),
        Fact("train_bytes", Tr("training text, bytes", "训练文本字节数"), train_bytes, ","),
        *facts,
        Fact("zh_fewer", Tr("the Chinese sentence takes fewer tokens", "中文句子用的词元更少"), zh_n < en_n),
        Fact("zh_same", Tr("both take as many tokens", "两句的词元一样多"), zh_n == en_n),
        Fact("zh_denser", Tr("Chinese takes more tokens per character", "中文每个字符用的词元更多"),
             rows[1][4] > rows[0][4]),
        Fact("zh_split", Tr("Chinese characters no token holds whole", "没有被一个词元整个装下的汉字"),
             len(split), "d"),
        Fact("zh_split_any", Tr("some Chinese character stays split into bytes", "有汉字仍被拆成字节"), bool(split)),
        Fact("zh_split_chars", Tr("those characters", "这些字"), _listed(split) or "-"),
        Fact("zh_split_seen", Tr("the most times one of them occurs in the training text",
                                 "它们在训练文本中出现次数的最大值"), seen, ","),
        Fact("ratio", Tr("English tokens over Chinese tokens", "英文词元数 / 中文词元数"), en_n / zh_n, ".2f")))


register(View("bpe", Tr("From text to token ids: byte-level BPE", "从文本到词元 id：字节级 BPE"),
     (Param("merges", "int", 500, Tr("how many learned merges to use", "用前几次学到的合并"), 0, MAX_MERGES),
      Param("pair", "choice", "model", Tr("which sentence, in both languages", "哪一句（中英各一）"),
            choices=tuple(PAIRS)),
      Param("text", "text", None, Tr("your own text, in place of the sentence of its script (auto: the pair's)",
                                     "你自己的文本，替换同一文字的那一句（auto：用这组句子）"), optional=True)),
     _bpe, (bpe.train, bpe.encode, bpe.merge)))


# --- what the vocabulary costs ------------------------------------------------------------------

TOKENIZERS = {"llama2-7b": "SentencePiece", "llama3-8b": "tiktoken"}  # Llama 2 paper; Llama 3 model card


def _vocab_cost(vocab):
    models = [(Tr(sizing.PRESETS[n].name, sizing.PRESETS[n].name), sizing.PRESETS[n], TOKENIZERS[n])
              for n in TOKENIZERS]
    base = sizing.PRESETS["llama2-7b"]
    models.append((Tr(f"{base.name} body", f"{base.name} 主体"),
                   base.with_(n_vocab=vocab), "-"))
    rows = []
    for label, cfg, tokenizer in models:
        items = sizing.param_count(cfg)
        rows.append((label, cfg.n_vocab, tokenizer, items["embedding"], items["output"],
                     sizing.group_shares(cfg)["embeddings"], sizing.total_params(cfg)))
    (l2, l3, yours) = rows
    grew = l3[6] - l2[6]
    return Result("vocab-cost", dict(vocab=vocab), (
        Table("cost", Tr("What the vocabulary costs: one row of d_model numbers per token, twice",
                         "词表的代价：每个词元一行 d_model 个数，输入输出各一份"),
              (col("model", "model", "模型"), col("vocab", "vocab", "词表", ","),
               col("tokenizer", "tokenizer", "分词器"),
               col("embedding", "embedding", "嵌入", ","), col("head", "LM head", "输出头", ","),
               col("share", "share", "占比", "pct")), tuple(r[:6] for r in rows),
              note=Tr("share: embedding + LM head, of all parameters", "占比：嵌入加输出头，占全部参数的比例")),
    ), (Fact("l2_vocab", Tr("Llama 2 vocabulary", "Llama 2 词表"), l2[1], ","),
        Fact("l3_vocab", Tr("Llama 3 vocabulary", "Llama 3 词表"), l3[1], ","),
        Fact("l2_share", Tr("Llama 2 7B, embedding + head share", "Llama 2 7B 嵌入加输出头的占比"), l2[5], "pct"),
        Fact("l3_share", Tr("Llama 3 8B, embedding + head share", "Llama 3 8B 嵌入加输出头的占比"), l3[5], "pct"),
        Fact("l2_both", Tr("Llama 2 7B, embedding + head", "Llama 2 7B 嵌入加输出头"), l2[3] + l2[4], "short"),
        Fact("l3_both", Tr("Llama 3 8B, embedding + head", "Llama 3 8B 嵌入加输出头"), l3[3] + l3[4], "short"),
        Fact("grew", Tr("parameters Llama 3 8B has beyond Llama 2 7B", "Llama 3 8B 比 Llama 2 7B 多出的参数"),
             grew, "short"),
        Fact("grew_vocab", Tr("of which embedding + head", "其中嵌入加输出头"),
             (l3[3] + l3[4]) - (l2[3] + l2[4]), "short"),
        Fact("yours_share", Tr("your row's share", "自定义那一行的占比"), yours[5], "pct"),
        Fact("yours_total", Tr("your row's total", "自定义那一行的总参数"), yours[6], "short"),
        Fact("yours_head_forgotten", Tr("your row's total with the LM head forgotten",
                                        "自定义那一行漏算输出头时的总数"),
             yours[6] - yours[4], "short")))


register(View("vocab-cost", Tr("What the vocabulary costs", "词表的参数代价"),
     (Param("vocab", "int", 128256, Tr("vocabulary for Llama 2 7B's third row", "第三行给 Llama 2 7B 换的词表大小"),
            1, sizing.MAX_DIM),),
     _vocab_cost, (sizing.param_count, sizing.group_shares)))


# --- the final norm and the LM head ---------------------------------------------------------------

def _few(v, n=4):
    return " ".join(f"{x:+.2f}" for x in v[:n]) + (" ..." if len(v) > n else "")


def _tiny_head(prompt, run):
    from .. import corpus
    w, cfg, words, logits, keep = _tiny_run(prompt, run=run)
    x = keep["x_out"][0, -1].astype(np.float64)                 # [d_model] the last position after the last layer
    xf = ops.rms_norm(x, w["norm_f"].astype(np.float64))        # [d_model]
    z = xf @ w["head"].astype(np.float64)                       # [d_model] @ [d_model, n_vocab] -> [n_vocab] logits
    p = _softmax_row(z)                                          # [n_vocab]
    ids = [corpus.INDEX[t] for t in words]
    d, v = w["head"].shape
    rms = lambda a: float(np.sqrt(np.mean(a * a)))  # noqa: E731
    path = (
        (Tr("token ids, <bos> first", "词元 id，<bos> 在最前"), f"[{len(ids)}]",
         " ".join(map(str, ids[:8])) + (" ..." if len(ids) > 8 else "")),
        (Tr(f"x, last position, after layer {cfg.n_layer}", f"x：最后一个位置，第 {cfg.n_layer} 层之后"),
         f"[{d}]", _few(x)),
        (Tr("final RMSNorm: rms_norm(x) * g", "最终 RMSNorm：rms_norm(x) * g"), f"[{d}]", _few(xf)),
        (Tr(f"LM head: x @ W_head [{d}, {v}]", f"输出头：x @ W_head [{d}, {v}]"), f"[{v}]",
         Tr(f"max {z.max():+.2f}, min {z.min():+.2f}", f"最大 {z.max():+.2f}，最小 {z.min():+.2f}")),
        (Tr("softmax: probabilities", "softmax：概率"), f"[{v}]",
         Tr(f"max {p.max():.3f}, sum {p.sum():.3f}", f"最大 {p.max():.3f}，总和 {p.sum():.3f}")),
    )
    top = np.argsort(-p, kind="stable")[:5]
    ended = words[-1] == corpus.DOT
    return Result("tiny-head", dict(prompt=prompt, run=run), (
        Table("path", Tr("The last x becomes one logit per vocabulary token", "最后的 x 变成每个词元一个 logit"),
              (col("stage", "stage", "步骤"), col("shape", "shape", "形状"), col("values", "first values", "前几个数")),
              path),
        Table("top", Tr("After the prompt: the most likely next tokens", "提示之后最可能的下一个词元"),
              (col("rank", "rank", "名次", "d"), col("token", "token", "词元"), col("id", "id", "id", "d"),
               col("logit", "logit", "logit 值", "+.2f"), col("p", "probability", "概率", ".3f")),
              tuple((i + 1, corpus.VOCAB[t], int(t), float(z[t]), float(p[t])) for i, t in enumerate(top)),
              note=Tr("after the final '.', training scored nothing: these numbers mean nothing",
                      "句号之后的位置在训练中从不计分：这些数没有意义") if ended else None),
    ), (Fact("d_model", Tr("d_model", "d_model"), d, "d"),
        Fact("n_vocab", Tr("vocabulary", "词表大小"), v, "d"),
        Fact("n_seq", Tr("positions, <bos> included", "位置数（含 <bos>）"), len(ids), "d"),
        Fact("bos_id", Tr("<bos> id", "<bos> 的 id"), corpus.INDEX[corpus.BOS], "d"),
        Fact("rms_x", Tr("rms of x before the norm", "归一化之前 x 的均方根"), rms(x), ".2f"),
        Fact("rms_xf", Tr("rms after the norm", "归一化之后的均方根"), rms(xf), ".2f"),
        Fact("top", Tr("most likely next", "最可能的下一个词元"), corpus.VOCAB[top[0]]),
        Fact("top_p", Tr("its probability", "它的概率"), float(p[top[0]]), ".3f"),
        Fact("top_logit", Tr("its logit", "它的 logit"), float(z[top[0]]), "+.2f"),
        Fact("ended", Tr("the prompt ends with '.'", "提示以句号结尾"), ended)))


register(View("tiny-head", Tr("The trained tiny Llama: final norm and LM head", "训练好的小 Llama：最终归一化与输出头"),
     (Param("prompt", "sentence", "the cat near the dogs", Tr("words so far", "已有的词")), _RUN),
     _tiny_head, (ops.rms_norm, *llama.CODE)))


# --- the training objective -----------------------------------------------------------------------

def _shown_difference(a: float, b: float, spec: str) -> float:
    """a - b computed from the two as printed with spec: the difference a reader can check from the screen."""
    return float(format(a, spec)) - float(format(b, spec))


def _tiny_loss(sentence, run):
    from .. import corpus
    w, cfg, words, logits, _ = _tiny_run(sentence, run=run)
    logp = ops.log_softmax(logits.astype(np.float64))  # [n_seq, n_vocab]
    targets = [corpus.INDEX[t] for t in words[1:]]  # teacher forcing: position i reads the true words up to i
    loss = np.array([-logp[i, t] for i, t in enumerate(targets)])  # [n_seq - 1] nats
    rows = tuple((i, words[i], words[i + 1], float(math.exp(-loss[i])), float(loss[i])) for i in range(len(targets)))
    worst = int(np.argmax(loss))
    _, _, floor = corpus.entropy_floor()
    meta = _trained(run)[2]
    mean, unseen = float(loss.mean()), float(meta["loss_unseen"])
    units = tuple((label, nats, nats / math.log(2), math.exp(nats)) for label, nats in (
        (Tr("grammar's entropy (floor)", "语法的熵（下限）"), floor),
        (Tr("tiny Llama, unseen sentences", "小 Llama，未见过的句子"), unseen),
        (Tr("tiny Llama, this sentence", "小 Llama，这一句"), mean)))
    return Result("tiny-loss", dict(sentence=sentence, run=run), (
        Table("loss", Tr("Next-token loss at each position of the sentence", "句子每个位置的下一词元损失"),
              (col("pos", "pos", "位置", "d"), col("input", "input", "输入"), col("next", "true next", "真正的下一个"),
               col("p", "p(true next)", "p(真正的下一个)", ".3f"), col("loss", "loss = -ln p", "损失 = -ln p", ".3f")),
              rows, note=Tr("nats; every position is scored in one pass", "单位奈特；一次前向就给每个位置打分")),
        Table("units", Tr("One mean loss in three units", "同一个平均损失的三种单位"),
              (col("what", "mean loss per token", "每词元平均损失"), col("nats", "nats", "奈特", ".3f"),
               col("bits", "bits (nats/ln 2)", "比特（奈特/ln 2）", ".2f"),
               col("ppl", "perplexity (e^nats)", "困惑度（e^奈特）", ".2f")), units,
              note=Tr("perplexity: on average as unsure as a fair pick among that many tokens",
                      "困惑度：平均而言，相当于在这么多个词元里等概率地猜")),
    ), (Fact("mean", Tr("mean loss, this sentence", "这句话的平均损失"), mean, ".3f"),
        Fact("total", Tr("total, nats", "总损失（奈特）"), float(loss.sum()), ".2f"),
        Fact("n", Tr("positions scored", "计分的位置数"), len(targets), "d"),
        Fact("floor", Tr("the grammar's entropy floor, nats per token", "语法的熵下限（每词元奈特）"), floor, ".3f"),
        Fact("unseen", Tr("the model's mean loss on unseen sentences", "模型在未见过句子上的平均损失"),
             unseen, ".3f"),
        Fact("above_floor", Tr("unseen loss above the floor, from the two figures as shown",
                               "未见句子损失高于下限多少（按显示的两个数相减）"),
             _shown_difference(unseen, floor, ".3f"), ".3f"),
        Fact("floor_bits", Tr("the floor in bits", "下限（比特）"), floor / math.log(2), ".2f"),
        Fact("floor_ppl", Tr("the floor as a perplexity", "下限对应的困惑度"), math.exp(floor), ".2f"),
        Fact("unseen_bits", Tr("unseen loss in bits", "未见句子损失（比特）"), unseen / math.log(2), ".2f"),
        Fact("unseen_ppl", Tr("unseen loss as a perplexity", "未见句子损失对应的困惑度"), math.exp(unseen), ".2f"),
        Fact("mean_ppl", Tr("this sentence's perplexity", "这句话的困惑度"), math.exp(mean), ".2f"),
        Fact("below", Tr("this sentence's mean is below the floor", "这句话的平均损失低于下限"), mean < floor),
        Fact("first_sure", Tr("the first word is predicted with p > 0.99", "第一个词的预测概率超过 0.99"),
             bool(loss[0] < -math.log(0.99))),
        Fact("worst_pos", Tr("the costliest position", "损失最大的位置"), worst, "d"),
        Fact("worst_next", Tr("its true next token", "它真正的下一个词元"), words[worst + 1]),
        Fact("worst_loss", Tr("its loss", "它的损失"), float(loss[worst]), ".3f"),
        Fact("worst_p", Tr("its p", "它的概率"), float(math.exp(-loss[worst])), ".3f")))


register(View("tiny-loss", Tr("The trained tiny Llama: the loss at each position", "训练好的小 Llama：每个位置的损失"),
     (Param("sentence", "sentence", "the cat near the dogs sits .", Tr("the sentence", "句子")), _RUN),
     _tiny_loss, (ops.log_softmax, *llama.CODE)))


if __name__ == "__main__":  # python -m engine.views.tokens: rewrite the shipped merges after editing a lesson
    from engine.views import tokens  # the module as imported, whose views are the registered ones

    tokens.write_shipped()
    print(f"{tokens.SHIPPED}: {tokens.MAX_MERGES} merges from lessons {tokens.lessons_fingerprint()[:12]}")
