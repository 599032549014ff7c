"""The real-model lesson: SmolLM2-135M (or any Llama GGUF the learner names), run by llama.forward.

Every view here reads one model, loaded once per process from the file real_llama.find_model picks (--model,
which the command line puts in XF_TOUR_MODEL; else the copy `xf-tour model get` fetched into the state folder),
and tokenized by its own vocabulary. Without a file each view refuses in one line that says how to get one. A
prompt's forward pass is kept for the last few prompts, so the attention, stream and lens views of one prompt run
it once.
"""

import functools
import math
import os
import time
import unicodedata
from collections import OrderedDict

import numpy as np

from .. import ops, sampling
from ..errors import ParamError
from ..real_tokenizer import SPACE_MARK
from .core import Column, Fact, Param, Result, Table, Tr, View, lazy_source, register

PROMPT = "The capital of France is"
MAX_TOKENS = 96  # a prompt's tokens: its attention maps, 30 layers of 9 heads, stay under 10 MB each
KEPT = 2  # prompts whose forward pass is kept
TOP = 20  # tokens real-next lists
SINK = 0.5  # a head whose queries put more than this on token 0, on average, is a sink head
TOKENS_SHOWN = 8  # tokens real-tokens lists, from the first
PIECE = 20  # cells a token's piece takes at most in a table or the prose
SHOWN = 10  # positions a map or the stream's table shows, from the first: each column holds a token's piece

_STATE = {"path": None, "model": None, "tokenizer": None, "runs": OrderedDict(), "written": OrderedDict()}


def model_and_tokenizer():
    """The model and its tokenizer, loaded on first use (again if the file found is another), its weights mapped
    from the float32 copy the account's tours share (engine/weights_cache.py); real_llama.NoModel, in one line,
    when there is none."""
    from .. import real_llama, real_tokenizer, weights_cache
    path = str(real_llama.find_model())
    if _STATE["path"] != path:
        model = weights_cache.load(path)
        tokenizer = real_tokenizer.Tokenizer.from_metadata(model.file.metadata)
        _STATE.update(path=path, model=model, tokenizer=tokenizer, runs=OrderedDict(), written=OrderedDict())
    return _STATE["model"], _STATE["tokenizer"]


def encode(prompt: str) -> list[int]:
    _, tokenizer = model_and_tokenizer()
    ids = tokenizer.encode(prompt)
    if not ids:
        raise ParamError("the prompt gives no tokens", "这个提示切不出任何词元")
    if len(ids) > MAX_TOKENS:
        raise ParamError(f"the prompt is {len(ids)} tokens; the lesson takes up to {MAX_TOKENS}",
                         f"提示有 {len(ids)} 个词元；本课最多 {MAX_TOKENS} 个")
    return ids


def run(prompt: str):  # -> ids, logits [T, V], keep (residual, attn, x_out)
    """The prompt's forward pass, kept for the last KEPT prompts."""
    runs = _STATE["runs"]
    if prompt not in runs:
        model, _ = model_and_tokenizer()
        ids = encode(prompt)
        keep = {}
        logits = model.forward(np.array(ids), keep=keep)
        runs[prompt] = (ids, logits, keep)
        while len(runs) > KEPT:
            runs.popitem(last=False)
    runs.move_to_end(prompt)
    return runs[prompt]


def cut(text: str, cells: int, end: str = ".") -> str:
    """text cut to `cells` terminal cells, `end` ending a cut (a wide character takes two)."""
    width = lambda ch: 2 if unicodedata.east_asian_width(ch) in "WF" else 1  # noqa: E731
    if sum(map(width, text)) <= cells:
        return text
    out, used = "", 0
    for ch in text:
        if used + width(ch) > cells - len(end):
            break
        out, used = out + ch, used + width(ch)
    return out + end


def short(piece: str, cells: int = 6) -> str:
    """A piece cut to `cells` cells for a column's head, "." ending one that was cut."""
    return cut(piece, cells)


def cell(tokenizer, i: int) -> str:
    """Token i for a table cell or the prose: its piece, cut to PIECE cells ("." ending a cut), so that a token
    of many bytes ("<e0><b8><a3>...") never breaks a table's line."""
    return short(tokenizer.piece(i), PIECE)


def first_of(n: int) -> Tr | None:
    """The note of a table that shows the first SHOWN positions of n, when it does."""
    if n <= SHOWN:
        return None
    return Tr(f"the first {SHOWN} of the prompt's {n} tokens", f"提示共 {n} 个词元，这里是前 {SHOWN} 个")


def col(key, en, zh, fmt="text"):
    return Column(key, Tr(en, zh), fmt)


def file_label(path: str, most: int = 36) -> str:
    """A model file's name for the prose: its base name without .gguf, printable characters only (a file name
    is the learner's, and may hold anything), cut to `most` characters."""
    name = os.path.basename(path).removesuffix(".gguf")
    name = "".join(ch for ch in name if ch.isprintable())
    return name if len(name) <= most else name[:most - 3] + "..."


# --- real-params ----------------------------------------------------------------------------------------------

def _real_params():
    from .. import real_llama
    model, _ = model_and_tokenizer()
    counts = real_llama.param_counts(model.file)
    kinds: dict[str, list] = {}
    for name, info in model.file.tensors.items():
        kind = ".".join("N" if part.isdigit() else part for part in name.split("."))
        shape = "x".join(map(str, info.shape))  # as numpy holds it: a matrix is [out, in]
        entry = kinds.setdefault(kind, [kind, shape, counts[name], 0, 0])
        entry[3] += 1
        entry[4] += counts[name]
    total, formula = sum(counts.values()), real_llama.formula_total(model)
    cfg = model.cfg
    tensors = tuple((name, "x".join(map(str, info.shape)), info.type_name, counts[name])
                    for name, info in model.file.tensors.items())
    return Result("real-params", {}, (
        Table("kinds", Tr("The model's tensors, by kind (N: the layer)", "模型的张量，按种类（N：层号）"),
              (col("kind", "tensor", "张量"), col("shape", "shape", "形状"), col("each", "each", "每个", ","),
               col("count", "how many", "个数", "d"), col("params", "parameters", "参数", ",")),
              tuple(tuple(k) for k in kinds.values())),
        Table("tensors", Tr("Every tensor in the file", "文件里的每个张量"),
              (col("name", "tensor", "张量"), col("shape", "shape", "形状"), col("type", "stored as", "存储格式"),
               col("params", "parameters", "参数", ",")), tensors),
    ), (Fact("model", Tr("the model's file", "模型文件"), file_label(model.file.path)),
        Fact("params_tensors", Tr("parameters, counted tensor by tensor", "逐个张量数出的参数"), total, ","),
        Fact("params_formula", Tr("parameters by the params lesson's formula", "参数课公式给出的参数"), formula, ","),
        Fact("params_equal", Tr("the two counts agree", "两种数法一致"), total == formula),
        Fact("n_tensors", Tr("tensors in the file", "文件里的张量"), len(tensors), "d"),
        Fact("n_layer", Tr("layers", "层数"), cfg.n_layer, "d"),
        Fact("d_model", Tr("d_model", "d_model"), cfg.d_model, "d"),
        Fact("n_head", Tr("query heads", "查询头"), cfg.n_head, "d"),
        Fact("n_kv_head", Tr("key/value heads", "键/值头"), cfg.n_kv_head, "d"),
        Fact("d_head", Tr("numbers per head", "每个头的维数"), cfg.d_head, "d"),
        Fact("d_ff", Tr("FFN width", "FFN 宽度"), cfg.d_ff, "d"),
        Fact("n_vocab", Tr("tokens in the vocabulary", "词表大小"), cfg.n_vocab, ","),
        Fact("tied", Tr("the LM head is the embedding's transpose", "输出头就是嵌入矩阵的转置"),
             bool(cfg.tied_embeddings)),
        Fact("embed_share", Tr("share of the parameters in the embedding", "嵌入矩阵占参数的比例"),
             cfg.n_vocab * cfg.d_model / total, "pct")))


# --- real-tokens ----------------------------------------------------------------------------------------------

def _real_tokens(prompt):
    _, tokenizer = model_and_tokenizer()
    ids = encode(prompt)
    n_bytes = len(prompt.encode("utf-8"))
    split = sum(1 for i in ids if in_bytes(tokenizer, i))
    bos = tokenizer.add_bos and tokenizer.bos_id is not None
    return Result("real-tokens", dict(prompt=prompt), (
        Table("tokens", Tr("The prompt as the model reads it", "模型读到的提示"),
              (col("n", "#", "#", "d"), col("id", "id", "id", "d"), col("piece", "piece", "片段")),
              tuple((i + 1, int(t), cell(tokenizer, t)) for i, t in enumerate(ids[:TOKENS_SHOWN])),
              note=Tr("␣ is a space; <e4> a byte, not a whole character"
                      + (f"; the first {TOKENS_SHOWN} of {len(ids)}" if len(ids) > TOKENS_SHOWN else ""),
                      "␣ 是空格；<e4> 是一个字节，不是整个字符"
                      + (f"；共 {len(ids)} 个，这里是前 {TOKENS_SHOWN} 个" if len(ids) > TOKENS_SHOWN else ""))),
    ), (Fact("n_tokens", Tr("tokens", "词元数"), len(ids), "d"),
        Fact("n_chars", Tr("characters", "字符数"), len(prompt), "d"),
        Fact("n_bytes", Tr("UTF-8 bytes", "UTF-8 字节数"), n_bytes, "d"),
        Fact("bytes_per_token", Tr("bytes per token of text", "文字平均每个词元的字节数"),
             n_bytes / max(len(ids) - bos, 1), ".2f"),
        Fact("byte_pieces", Tr("tokens shown as bytes", "以字节显示的词元"), split, "d"),
        Fact("has_bytes", Tr("some tokens are shown as bytes", "有词元显示为字节"), split > 0),
        Fact("first_piece", Tr("the first token", "第一个词元"), cell(tokenizer, ids[0])),
        Fact("bos", Tr("a BOS token is put first", "开头加 BOS 词元"), bos),
        *habits(tokenizer)))


DIGITS, CHINESE = "1234567", "法国的首都是"  # what habits() tokenizes


def in_bytes(tokenizer, i: int) -> bool:
    """Whether token i is shown as bytes ("<e4>"): its bytes are not whole printable characters. A special
    token ("<s>") is text, shown as itself."""
    return tokenizer.piece(i) != tokenizer.token_bytes(i).decode("utf-8", "replace").replace(" ", SPACE_MARK)


def habits(tokenizer) -> tuple[Fact, ...]:
    """How the model's vocabulary cuts digits and Chinese, whatever the prompt: the lesson's prose says what holds
    for the model loaded (SmolLM2 cuts every digit and has few Chinese tokens; Llama 3 groups digits by three)."""
    digits = [i for i in tokenizer.encode(DIGITS) if any(ch.isdigit() for ch in tokenizer.piece(i))]
    chinese = [i for i in tokenizer.encode(CHINESE) if i != tokenizer.bos_id]
    split = sum(1 for i in chinese if in_bytes(tokenizer, i))
    return (Fact("digits_alone", Tr("each digit is a token of its own", "每个数字单独成一个词元"),
                 all(sum(ch.isdigit() for ch in tokenizer.piece(i)) == 1 for i in digits)),
            Fact("digit_tokens", Tr(f"tokens for {DIGITS}", f"{DIGITS} 的词元数"), len(digits), "d"),
            Fact("zh_in_bytes", Tr(f"most of {CHINESE}'s tokens are bytes", f"「{CHINESE}」的词元大多是字节"),
                 split > len(chinese) / 2))


# --- real-next ------------------------------------------------------------------------------------------------

def _real_next(prompt, temperature, top_k, top_p):
    _check_top_p(top_p)
    _, tokenizer = model_and_tokenizer()
    ids, logits, _ = run(prompt)
    z = logits[-1].astype(np.float64)  # [V]
    order = sampling.ranking(z)
    st = sampling.filtered(z, temperature, top_k, top_p, order)
    p, p_raw = st["p"], sampling.apply_temperature(z, 1.0, order)
    top = order[:TOP]
    return Result("real-next", dict(prompt=prompt, temperature=temperature, top_k=top_k, top_p=top_p), (
        Table("dist", Tr(f"The {TOP} most likely next tokens", f"最可能的 {TOP} 个下一个词元"),
              (col("token", "token", "词元"), col("id", "id", "id", "d"), col("logit", "logit", "logit", "+.2f"),
               col("p", "p", "p", ".3f")),
              tuple((cell(tokenizer, t), int(t), float(z[t]), float(p[t])) for t in top),
              note=Tr("p: softmax(logit / T), then top-k and top-p, renormalised, as in the sampling lesson",
                      "p：softmax(logit / T)，再 top-k、top-p，重新归一化，与采样课相同")),
    ), (Fact("top", Tr("most likely next token", "最可能的下一个词元"), cell(tokenizer, order[0])),
        Fact("top_p_raw", Tr("its p at T=1", "它在 T=1 时的 p"), float(p_raw[order[0]]), ".3f"),
        Fact("top_final", Tr("its p after the settings", "按当前设置它的 p"), float(p[order[0]]), ".3f"),
        Fact("second", Tr("the runner-up", "第二名"), cell(tokenizer, order[1])),
        Fact("second_p", Tr("its p at T=1", "它在 T=1 时的 p"), float(p_raw[order[1]]), ".3f"),
        Fact("left", Tr("tokens left to draw from", "剩下可抽的词元"), int(st["keep"].sum()), ","),
        Fact("n_vocab", Tr("tokens in the vocabulary", "词表大小"), len(z), ","),
        Fact("entropy", Tr("entropy of the final distribution, nats", "最终分布的熵（奈特）"),
             float(ops.entropy(p)), ".2f"),
        Fact("n_tokens", Tr("prompt tokens", "提示的词元数"), len(ids), "d")))


def _check_top_p(top_p):
    if top_p <= 0:
        raise ParamError("top_p must be above 0", "top_p 必须大于 0")


# --- real-attention -------------------------------------------------------------------------------------------

def head_habits(attn):  # [L] of [H, T, T] -> [L, H] on token 0, [L, H] on the previous token
    """Each head's mean weight, over the queries after the first, on token 0 and on the token just before."""
    first, previous = [], []
    for p in attn:
        T = p.shape[-1]
        if T < 2:
            raise ParamError("the prompt needs two tokens or more", "提示至少要两个词元")
        rows = np.arange(1, T)
        first.append(p[:, 1:, 0].mean(-1))
        previous.append(p[:, rows, rows - 1].mean(-1))
    return np.array(first), np.array(previous)


def _real_attention(prompt, layer, head):
    model, tokenizer = model_and_tokenizer()
    cfg = model.cfg
    if layer < 0:  # counted from the end, as Python counts: -1 is the last layer, whatever the model's depth
        layer += cfg.n_layer + 1
    if not 1 <= layer <= cfg.n_layer or head >= cfg.n_head:
        raise ParamError(f"layer must be 1 to {cfg.n_layer} (or -1 to -{cfg.n_layer}, from the end) and head 0 to "
                         f"{cfg.n_head - 1}", f"layer 必须在 1 到 {cfg.n_layer} 之间（或 -1 到 -{cfg.n_layer}，"
                         f"从最后一层倒数），head 在 0 到 {cfg.n_head - 1} 之间")
    ids, _, keep = run(prompt)
    p = keep["attn"][layer - 1][head][:SHOWN, :SHOWN]  # [T, T], its first SHOWN rows and columns
    labels = tuple(short(tokenizer.piece(t)) for t in ids[:SHOWN])
    first, previous = head_habits(keep["attn"])  # [L, H]
    group = cfg.n_head // cfg.n_kv_head
    sinks = first[2:] > SINK  # from layer 3 on
    best = np.unravel_index(np.argmax(previous), previous.shape)
    cols = (col("query", "query", "查询"),) + tuple(Column(f"k{j}", Tr(x, x), ".2f") for j, x in enumerate(labels))
    return Result("real-attention", dict(prompt=prompt, layer=layer, head=head), (
        Table("map", Tr(f"Layer {layer}, head {head}: each row's weights", f"第 {layer} 层 {head} 号头：每一行的权重"),
              cols, tuple((x, *map(float, row)) for x, row in zip(labels, p)), heat="weights",
              note=first_of(len(ids))),
        Table("heads", Tr(f"Layer {layer}: where each head looks", f"第 {layer} 层：每个头看向哪里"),
              (col("head", "head", "头", "d"), col("kv", "K/V head", "K/V 头", "d"),
               col("first", "on token 0", "看 0 号词元", ".2f"), col("previous", "on the previous", "看前一个", ".2f")),
              tuple((h, h // group, float(first[layer - 1, h]), float(previous[layer - 1, h]))
                    for h in range(cfg.n_head)),
              heat="weights", heat_cols=("first", "previous"),
              note=Tr("mean over the queries after the first", "对第一个之后的查询取平均")),
    ), (Fact("group", Tr("query heads per K/V head", "每个 K/V 头服务的查询头"), group, "d"),
        Fact("n_head", Tr("query heads in a layer", "每层的查询头"), cfg.n_head, "d"),
        Fact("layer_sinks", Tr("heads of this layer with over half their weight on token 0",
                               "这一层一半以上权重落在 0 号词元的头"), int((first[layer - 1] > SINK).sum()), "d"),
        Fact("kv_head", Tr("the K/V head this head reads", "这个头读的 K/V 头"), head // group, "d"),
        Fact("on_first", Tr("this head's weight on token 0", "这个头在 0 号词元上的权重"),
             float(first[layer - 1, head]), ".2f"),
        Fact("on_previous", Tr("this head's weight on the previous token", "这个头在前一个词元上的权重"),
             float(previous[layer - 1, head]), ".2f"),
        Fact("sink_share", Tr("heads from layer 3 on with over half their weight on token 0",
                              "第 3 层起，一半以上权重落在 0 号词元的头"), float(sinks.mean()), "pct"),
        Fact("sink_heads", Tr("how many", "个数"), int(sinks.sum()), "d"),
        Fact("sinks_most", Tr("most heads from layer 3 on are sink heads", "第 3 层起多数头是汇头"),
             bool(sinks.mean() > 0.5)),
        Fact("heads_counted", Tr("heads from layer 3 on", "第 3 层起的头"), int(sinks.size), "d"),
        Fact("previous_layer", Tr("the layer of the head most on the previous token", "最看前一个词元的头所在的层"),
             int(best[0]) + 1, "d"),
        Fact("previous_head", Tr("that head, in its layer", "那个头在层里的编号"), int(best[1]), "d"),
        Fact("previous_best_weight", Tr("its weight there", "它在那里的权重"), float(previous[best]), ".2f"),
        Fact("n_tokens", Tr("prompt tokens", "提示的词元数"), len(ids), "d")))


# --- real-stream ----------------------------------------------------------------------------------------------

def _real_stream(prompt):
    _, tokenizer = model_and_tokenizer()
    ids, _, keep = run(prompt)
    norms = np.array([np.linalg.norm(x.astype(np.float64), axis=-1) for x in keep["residual"]])  # [L + 1, T]
    labels = tuple(short(tokenizer.piece(t)) for t in ids[:SHOWN])
    rest = norms[:, 1:].max(1) if norms.shape[1] > 1 else np.zeros(len(norms))
    jump = int(np.argmax(np.diff(norms[:, 0]))) + 1
    some = first_of(len(ids))
    columns = (col("layer", "layer", "层", "d"),) + tuple(Column(f"t{j}", Tr(x, x), ",.0f")
                                                         for j, x in enumerate(labels))
    every = tuple((i, *map(float, row[:SHOWN])) for i, row in enumerate(norms))
    note = Tr("layer 0: the embedding" + (f"; {some.en}" if some else ""),
              "第 0 层：嵌入" + (f"；{some.zh}" if some else ""))
    L = len(norms) - 1  # the embedding, then L layers: the rows around the jump, position 0's largest, the ends
    picked = sorted({0, 1, jump - 1, jump, jump + 1, int(np.argmax(norms[:, 0])), L} & set(range(L + 1)))
    return Result("real-stream", dict(prompt=prompt), (
        Table("jump", Tr("The residual stream's norm around position 0's jump, at each position",
                         "0 号位置范数跃升前后，每个位置上残差流的范数"), columns, tuple(every[i] for i in picked),
              note=note),
        Table("norms", Tr("The residual stream's norm after each layer, at each position",
                          "每一层之后，每个位置上残差流的范数"), columns, every, note=note),
    ), (Fact("first_max", Tr("position 0's largest norm", "0 号位置的最大范数"), float(norms[:, 0].max()), ",.0f"),
        Fact("rest_max", Tr("the largest norm anywhere else", "其他位置的最大范数"), float(rest.max()), ",.0f"),
        Fact("ratio", Tr("how many times larger", "大了多少倍"), float(norms[:, 0].max() / max(rest.max(), 1e-9)),
             ".0f"),
        Fact("jump_layer", Tr("the layer where position 0's norm grows most", "0 号位置范数增长最多的层"), jump, "d"),
        Fact("n_tokens", Tr("prompt tokens", "提示的词元数"), len(ids), "d")))


# --- real-lens ------------------------------------------------------------------------------------------------

def _real_lens(prompt):
    model, tokenizer = model_and_tokenizer()
    ids, logits, keep = run(prompt)
    w = model.weights
    final = int(np.argmax(logits[-1]))
    rows, tops = [], []
    for i, x in enumerate(keep["residual"][1:], start=1):  # after each layer
        z = ops.rms_norm(x[-1], w["norm_f"], model.rms_eps) @ w["head"]  # [V]: the last position, read early
        p = ops.softmax(z.astype(np.float64))
        top = int(np.argmax(z))
        rows.append((i, cell(tokenizer, top), float(p[top]), float(p[final])))
        tops.append(top)
    first = tops.index(final) if final in tops else None
    L = len(rows)
    picked = sorted({0, L // 3, 2 * L // 3} | set(range(L - 4, L))  # a third of the way, two thirds, the end
                    | ({first - 1, first} if first is not None else set()))
    columns = (col("layer", "layer", "层", "d"), col("top", "top token", "排第一的词元"),
               col("p", "its p", "它的 p", ".3f"),
               col("final", f"p of {cell(tokenizer, final)}", f"{cell(tokenizer, final)} 的 p", ".3f"))
    return Result("real-lens", dict(prompt=prompt), (
        Table("rise", Tr("The last position read through the final norm and head, at some layers",
                         "在几个层之后，把最后一个位置直接送进最终归一化和输出头"), columns,
              tuple(rows[i] for i in picked if 0 <= i < L)),
        Table("lens", Tr("The last position read through the final norm and head after each layer",
                         "每一层之后，把最后一个位置直接送进最终归一化和输出头"), columns, tuple(rows)),
    ), (Fact("final", Tr("the model's answer", "模型的答案"), cell(tokenizer, final)),
        Fact("first_layer", Tr("the first layer where it is on top", "它第一次排第一的层"),
             None if first is None else rows[first][0], "d"),
        Fact("layers", Tr("layers", "层数"), len(rows), "d"),
        Fact("final_p", Tr("its p at the end", "最后它的 p"), rows[-1][3], ".3f")))


# --- real-generate --------------------------------------------------------------------------------------------

@functools.cache
def bandwidth_gbs(n_bytes: int = 1 << 26, repeats: int = 3) -> float:
    """This machine's memory bandwidth as numpy sees it, GB/s: the best of a few copies of a 64 MiB array (read
    once, written once; far past any cache, and 128 MiB at once beside the model's weights), measured once a run."""
    a = np.ones(n_bytes // 8)
    b = np.empty_like(a)
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - start)
    return 2 * n_bytes / best / 1e9


def one_line(text: str, most: int = 44) -> str:
    """A text the model wrote, for a line of prose: each line break shown as "/", any other control or format
    character as "?", cut to `most` cells ("..." ending a cut; a wide character takes two)."""
    flat = " / ".join(part.strip() for part in text.strip().splitlines() if part.strip())
    flat = "".join("?" if unicodedata.category(ch)[0] == "C" else ch for ch in flat)
    return cut(flat, most, "...")


def generate(model, ids, eos, temperature, top_k, top_p, seed, tokens):  # -> new ids, seconds, cache bytes
    """Up to `tokens` new tokens after ids, each drawn from final_probs with u = default_rng(seed).random(), one
    forward pass of one position each with the KV cache; it stops after eos. The seconds count the new tokens."""
    rng = np.random.default_rng(seed)
    cache = {}
    logits = model.forward(np.array(ids), cache=cache)[-1]
    out, start = [], time.perf_counter()
    for _ in range(tokens):
        t = sampling.draw(sampling.final_probs(logits.astype(np.float64), temperature, top_k, top_p), rng.random())
        out.append(int(t))
        if t == eos:
            break
        logits = model.forward(np.array([t]), cache=cache)[-1]
    seconds = time.perf_counter() - start
    return out, seconds, sum(c["k"].nbytes + c["v"].nbytes for c in cache.values())


def _real_generate(prompt, temperature, top_k, top_p, seed, tokens):
    _check_top_p(top_p)
    model, tokenizer = model_and_tokenizer()
    key = (_STATE["path"], prompt, temperature, top_k, top_p, seed, tokens)
    if key not in _STATE["written"]:  # a continuation is written once: its speed is the one measured then
        _STATE["written"][key] = generate(model, encode(prompt), tokenizer.eos_id, temperature, top_k, top_p, seed,
                                          tokens)
        while len(_STATE["written"]) > 32:
            _STATE["written"].popitem(last=False)
    out, seconds, cache_bytes = _STATE["written"][key]
    tied = model.cfg.tied_embeddings  # the head is a view of the embedding: read once
    weights_bytes = sum(a.nbytes for name, a in model.weights.items() if name != "head" or not tied)
    gbs = bandwidth_gbs()
    ceiling = gbs * 1e9 / (weights_bytes + cache_bytes)
    rate = len(out) / seconds if seconds > 0 else math.inf
    text = tokenizer.decode(out)
    return Result("real-generate", dict(prompt=prompt, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed,
                                        tokens=tokens), (
        Table("tokens", Tr("The continuation, token by token", "续写，逐个词元"),
              (col("n", "#", "#", "d"), col("id", "id", "id", "d"), col("piece", "piece", "片段")),
              tuple((i + 1, t, cell(tokenizer, t)) for i, t in enumerate(out))),
        Table("speed", Tr("Decoding speed on this machine", "本机的解码速度"),
              (col("what", "measure", "度量"), col("value", "value", "数值", ",.1f")),
              ((Tr("tokens per second, measured", "实测每秒词元"), rate),
               (Tr("memory bandwidth, GB/s (a numpy copy)", "内存带宽 GB/s（numpy 复制测得）"), gbs),
               (Tr("MB read per token (weights + cache)", "每个词元读取的 MB（权重 + 缓存）"),
                (weights_bytes + cache_bytes) / 1e6),
               (Tr("ceiling, tokens per second", "上限，每秒词元"), ceiling)),
              note=Tr("ceiling = bandwidth / bytes read per token, as in the context lesson",
                      "上限 = 带宽 / 每个词元要读的字节，与上下文课相同")),
    ), (Fact("text", Tr("the continuation", "续写"), text),
        Fact("shown", Tr("the continuation, on one line", "续写，排成一行"), one_line(text)),
        Fact("bandwidth", Tr("memory bandwidth, GB/s", "内存带宽 GB/s"), gbs, ".1f"),
        Fact("generated", Tr("tokens generated", "生成的词元"), len(out), "d"),
        Fact("rate", Tr("tokens per second", "每秒词元"), rate, ".1f"),
        Fact("ceiling", Tr("the bandwidth ceiling, tokens per second", "带宽上限，每秒词元"), ceiling, ".1f"),
        Fact("share", Tr("measured over the ceiling", "实测占上限的比例"), rate / ceiling, "pct"),
        Fact("stopped", Tr("it stopped at the end-of-text token", "它在结束词元处停下"),
             bool(out and out[-1] == tokenizer.eos_id))))


# --- the views ------------------------------------------------------------------------------------------------

_PROMPT = Param("prompt", "text", PROMPT, Tr("the text the model reads", "模型读的文本"))
_TEMPERATURE = Param("temperature", "float", 1.0, Tr("the logits are divided by it; 0 is greedy",
                                                     "logit 除以它；0 为贪心"), 0.0, 5.0)
_TOP_K = Param("top_k", "int", 0, Tr("keep the k most likely tokens; 0 is off", "只留最可能的 k 个词元；0 为不筛"),
               0, 50000)
_TOP_P = Param("top_p", "float", 1.0, Tr("keep the fewest top tokens holding this much p; 1 is off",
                                         "只留累计 p 达到它的最少几个词元；1 为不筛"), 0.0, 1.0)
_CODE = (lazy_source("llama", "forward"), lazy_source("llama", "block"), lazy_source("llama", "grouped_attention"),
         lazy_source("llama", "rope"))

register(View("real-params", Tr("A real model: its tensors, counted", "真实模型：逐个数它的张量"), (),
              _real_params, (lazy_source("real_llama", "param_counts"), lazy_source("sizing", "total_params")),
              model=True))
register(View("real-tokens", Tr("A real model: the prompt's tokens", "真实模型：提示的词元"), (_PROMPT,),
              _real_tokens, (lazy_source("real_tokenizer", "pre_tokenize"), lazy_source("real_tokenizer", "bpe_merge")),
              model=True))
register(View("real-next", Tr("A real model: the next token", "真实模型：下一个词元"),
              (_PROMPT, _TEMPERATURE, _TOP_K, _TOP_P), _real_next, _CODE, model=True))
register(View("real-attention", Tr("A real model: one head's attention", "真实模型：一个头的注意力"),
              (_PROMPT, Param("layer", "int", 3, Tr("which layer, from 1; -1 is the last",
                                                    "第几层，从 1 起；-1 是最后一层"), -1000, 1000),
               Param("head", "int", 0, Tr("which query head, from 0", "第几个查询头，从 0 起"), 0, 1000)),
              _real_attention, _CODE, model=True))
register(View("real-stream", Tr("A real model: the residual stream's size", "真实模型：残差流的大小"), (_PROMPT,),
              _real_stream, _CODE, model=True))
register(View("real-lens", Tr("A real model: reading the stream early", "真实模型：提前读残差流"), (_PROMPT,),
              _real_lens, _CODE, model=True))
register(View("real-generate", Tr("A real model: writing on", "真实模型：接着写"),
              (_PROMPT, _TEMPERATURE, _TOP_K, _TOP_P,
               Param("seed", "int", 0, Tr("random draw of the tokens", "抽词元的随机种子"), 0, 2**32 - 1),
               Param("tokens", "int", 16, Tr("how many tokens to write at most", "最多写几个词元"), 1, 64)),
              _real_generate, _CODE, model=True))
