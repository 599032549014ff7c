"""Lessons 6 and 7: parameter counts, memory and the KV cache of real model configs."""

from .. import sizing
from .core import Chart, Column, Fact, Param, Result, Series, Table, Tr, View, col, register

DTYPES = tuple(sizing.BYTES_PER_PARAM)


_PART_NAMES = {
    "embedding": Tr("token embedding", "词嵌入"),
    "attention/q": Tr("attention W_q", "注意力 W_q"), "attention/k": Tr("attention W_k", "注意力 W_k"),
    "attention/v": Tr("attention W_v", "注意力 W_v"), "attention/o": Tr("attention W_o", "注意力 W_o"),
    "ffn/gate": Tr("FFN gate", "前馈 gate"), "ffn/up": Tr("FFN up", "前馈 up"), "ffn/down": Tr("FFN down", "前馈 down"),
    "norm/attention": Tr("RMSNorm before attention", "注意力前的 RMSNorm"),
    "norm/ffn": Tr("RMSNorm before FFN", "前馈前的 RMSNorm"),
    "norm/final": Tr("final RMSNorm", "最终 RMSNorm"),
    "output": Tr("output head", "输出投影"),
}
_GROUP_NAMES = {"attention": Tr("attention", "注意力"), "ffn": Tr("FFN", "前馈"),
                "embeddings": Tr("embeddings + output", "词嵌入 + 输出"), "norms": Tr("norms", "归一化")}
# The split chart's parts: param_count's items grouped by the word before the slash
_SPLIT_PARTS = {"embedding": Tr("embedding", "词嵌入"), "attention": Tr("attention", "注意力"),
                "ffn": Tr("FFN", "前馈"), "norm": Tr("norms", "归一化"), "output": Tr("output head", "输出投影")}
_SHORT_NAMES = {"mistral-7b": "Mistral 7B", "mistral-nemo-12b": "NeMo 12B"}  # a chart legend holds 14 cells


def formulas(cfg: sizing.ModelConfig) -> dict[str, str]:
    """How each item of param_count is computed, in ASCII."""
    d, L, v, f = cfg.d_model, cfg.n_layer, cfg.n_vocab, cfg.d_ff
    qw, kvw = cfg.n_head * cfg.d_head, cfg.n_kv_head * cfg.d_head
    out = "tied: 0" if cfg.tied_embeddings else f"{v} x {d}"
    return {"embedding": f"{v} x {d}", "attention/q": f"{L} x {d} x {qw}", "attention/k": f"{L} x {d} x {kvw}",
            "attention/v": f"{L} x {d} x {kvw}", "attention/o": f"{L} x {qw} x {d}",
            "ffn/gate": f"{L} x {d} x {f}", "ffn/up": f"{L} x {d} x {f}", "ffn/down": f"{L} x {f} x {d}",
            "norm/attention": f"{L} x {d}", "norm/ffn": f"{L} x {d}", "norm/final": f"{d}", "output": out}


def config_from(preset, layers, hidden, heads, kv_heads, head_dim, ffn, vocab, tied) -> sizing.ModelConfig:
    """A preset with any of its fields overridden; None keeps the preset's value."""
    base = sizing.preset(preset)
    changes = dict(n_layer=layers, d_model=hidden, n_head=heads, n_kv_head=kv_heads, head_dim=head_dim,
                   d_ff=ffn, n_vocab=vocab, tied_embeddings=tied)
    changes = {k: v for k, v in changes.items() if v is not None}
    if "head_dim" not in changes and ("d_model" in changes or "n_head" in changes):
        changes["head_dim"] = None  # derive it again from the new width or head count
    return base.with_(**changes)


def _config_params(default_preset="llama2-7b"):
    def field_param(name, en, zh, hi=sizing.MAX_DIM):
        return Param(name, "int", None, Tr(en, zh), 1, hi, optional=True)
    return (
        Param("preset", "choice", default_preset, Tr("model to start from", "基础预设"), choices=tuple(sizing.PRESETS)),
        field_param("layers", "number of layers", "层数"),
        field_param("hidden", "d_model, the width of x", "隐藏维度 d_model"),
        field_param("heads", "query heads", "查询头数"),
        field_param("kv_heads", "key/value heads", "键值头数"),
        field_param("head_dim", "width of one head", "每头维度"),
        field_param("ffn", "FFN hidden width", "前馈中间维度"),
        field_param("vocab", "vocabulary size", "词表大小"),
        Param("tied", "bool", None, Tr("output head shares the embedding", "输出投影与词嵌入共享"), optional=True),
        Param("context", "int", 4096, Tr("tokens in the context", "上下文词元数"), 1, sizing.MAX_CONTEXT),
    )


def _params(preset, layers, hidden, heads, kv_heads, head_dim, ffn, vocab, tied, context):
    cfg = config_from(preset, layers, hidden, heads, kv_heads, head_dim, ffn, vocab, tied)
    published = sizing.PUBLISHED.get(preset)
    base = sizing.preset(preset)
    return params_result(cfg, context, published, params_settings(cfg, preset, context),
                         name=_changed_name(base, cfg), published_name=base.name)


def _changed_name(base: sizing.ModelConfig, cfg: sizing.ModelConfig) -> Tr | None:
    """A preset with some fields changed is no longer that model: the titles say what changed."""
    if cfg == base:
        return None
    changes = [(cfg.n_layer != base.n_layer, f"{cfg.n_layer} layers", f"{cfg.n_layer} 层"),
               (cfg.d_model != base.d_model, f"d_model {cfg.d_model}", f"d_model {cfg.d_model}"),
               (cfg.n_head != base.n_head, f"{cfg.n_head} heads", f"{cfg.n_head} 个头"),
               (cfg.n_kv_head != base.n_kv_head, f"kv_heads {cfg.n_kv_head}", f"kv_heads {cfg.n_kv_head}"),
               (cfg.d_ff != base.d_ff, f"ffn {cfg.d_ff}", f"ffn {cfg.d_ff}"),
               (cfg.n_vocab != base.n_vocab, f"vocab {cfg.n_vocab}", f"vocab {cfg.n_vocab}")]
    changes = [(en, zh) for changed, en, zh in changes if changed]
    if not changes or len(changes) > 2:  # head_dim, tied, or many fields: say only that it changed
        return Tr(f"{base.name}, changed", f"{base.name}（已改动）")
    return Tr(f"{base.name} with " + " and ".join(en for en, _ in changes),
              f"{base.name}（改为 " + "、".join(zh for _, zh in changes) + "）")


def params_settings(cfg: sizing.ModelConfig, preset: str, context: int) -> dict:
    """The params view's settings line for a config, every field resolved."""
    return dict(preset=preset, layers=cfg.n_layer, hidden=cfg.d_model, heads=cfg.n_head, kv_heads=cfg.n_kv_head,
                head_dim=cfg.d_head, ffn=cfg.d_ff, vocab=cfg.n_vocab, tied=cfg.tied_embeddings, context=context)


def _model_name(cfg: sizing.ModelConfig, name: Tr | None) -> Tr:
    return name or Tr(cfg.name or "this model", cfg.name or "当前模型")


def _zh_then(name: str, words: str) -> str:
    """A model's name then Chinese words: a space after a Latin name, none after a closing bracket."""
    return name + words if name.endswith("）") else f"{name} {words}"


def _summary_table(cfg: sizing.ModelConfig, rep: dict, name: Tr | None = None) -> Table:
    """The count laid out as the reference documents lay it out, norms last, so the gap shows."""
    items, L = rep["items"], cfg.n_layer
    group = {g: sum(n for k, n in items.items() if k.startswith(g + "/")) for g in ("attention", "ffn", "norm")}
    attn, ffn = group["attention"] // L, group["ffn"] // L
    matrices = L * (attn + ffn) + items["embedding"] + items["output"]
    rows = (
        (Tr("attention W_q, W_k, W_v, W_o", "注意力 W_q、W_k、W_v、W_o"), attn),
        (Tr("FFN gate, up, down", "前馈 gate、up、down"), ffn),
        (Tr("one layer, matrices", "一层（矩阵）"), attn + ffn),
        (Tr(f"{L} layers", f"{L} 层"), L * (attn + ffn)),
        (Tr("token embedding", "词嵌入"), items["embedding"]),
        (Tr("output head" + (" (tied: shared)" if cfg.tied_embeddings else ""),
            "输出投影" + ("（与词嵌入共享）" if cfg.tied_embeddings else "")), items["output"]),
        (Tr("total without norms", "不含归一化的合计"), matrices),
        (Tr("RMSNorm weights, 2 per layer", "RMSNorm 权重，每层 2 个"), group["norm"] - items["norm/final"]),
        (Tr("final RMSNorm", "最终 RMSNorm"), items["norm/final"]),
        (Tr("total", "总计"), rep["total"]),
    )
    name = _model_name(cfg, name)
    en = name.en[:1].upper() + name.en[1:]
    return Table("summary", Tr(f"{en}, counted", _zh_then(name.zh, "逐项计数")),
                 (col("part", "part", "部件"), col("count", "count", "参数量", ","),
                  col("short", "short", "约合", "short")), tuple((name, n, n) for name, n in rows))


def _shares_table(cfg: sizing.ModelConfig, rep: dict, name: Tr | None = None) -> Table:
    total, name = rep["total"], _model_name(cfg, name)
    return Table("shares", Tr(f"Where the parameters of {name.en} live", _zh_then(name.zh, "的参数分布")),
                 (col("group", "group", "部分"), col("count", "count", "参数量", ","),
                  col("share", "share", "占比", "pct")),
                 tuple((_GROUP_NAMES[g], n, n / total) for g, n in sizing.group_counts(cfg).items()))


def split_counts(cfg: sizing.ModelConfig) -> dict[str, int]:
    """param_count summed into embedding, attention, FFN, norms and output head; adds up to the total."""
    counts = dict.fromkeys(_SPLIT_PARTS, 0)
    for item, n in sizing.param_count(cfg).items():
        counts[item.split("/")[0]] += n
    return counts


def legend_name(preset: str) -> Tr:
    """A preset's name, short enough for a chart's legend."""
    name = _SHORT_NAMES.get(preset, sizing.preset(preset).name)
    return Tr(name, name)


def split_chart(models: list[tuple[Tr, sizing.ModelConfig]]) -> Chart:
    """One stacked bar per model: its parameters split into embedding, attention, FFN, norms, output head."""
    tied = [label for label, cfg in models if cfg.tied_embeddings]
    names = Tr(", ".join(dict.fromkeys(t.en for t in tied)), "、".join(dict.fromkeys(t.zh for t in tied)))
    note = Tr(f"{names.en}: the output head is the embedding matrix, counted once, as embedding",
              f"{names.zh}：输出投影就是词嵌入矩阵，只计一次，算在词嵌入里") if tied else None
    return Chart("split", Tr("Where the parameters live", "参数都在哪里"), "stack",
                 tuple(Series(label, tuple(split_counts(cfg).values())) for label, cfg in models),
                 parts=tuple(_SPLIT_PARTS.values()), note=note)


def _split_models(cfg: sizing.ModelConfig) -> list[tuple[Tr, sizing.ModelConfig]]:
    """The model shown, named for its preset or "custom", and one to set beside it: Llama 2 7B, or Llama 3 8B
    when the model shown is Llama 2 7B."""
    preset = next((p for p, c in sizing.PRESETS.items() if c == cfg), None)  # equality ignores the name
    other = "llama3-8b" if preset == "llama2-7b" else "llama2-7b"
    shown = legend_name(preset) if preset else Tr("custom", "自定义")
    return [(shown, cfg), (legend_name(other), sizing.preset(other))]


def params_result(cfg: sizing.ModelConfig, context: int = 4096, published: int | None = None,
                  settings: dict | None = None, name: Tr | None = None, published_name: str | None = None) -> Result:
    """The sizing tables of one config: the itemised count, the shares, weight memory and the KV cache.

    `name` titles the tables when it is not cfg.name (a preset with fields changed); `published_name`
    is the model whose published count `published` is."""
    rep = sizing.report(cfg, context, published)
    total, form = rep["total"], formulas(cfg)
    rows = tuple((_PART_NAMES[k], form[k], n, n / total) for k, n in rep["items"].items())
    rows += ((Tr("total", "总计"), "", total, 1.0),)
    facts = [Fact("total", Tr("total parameters", "参数总量"), total, ","),
             Fact("total_short", Tr("in short", "约合"), total, "short"),
             Fact("total_billions", Tr("total, in billions", "参数总量（十亿）"), total / 1e9, ".2f"),
             Fact("per_layer", Tr("one layer with its two norms", "一层（含两个归一化）"), rep["per_layer"], ","),
             Fact("norms", Tr("all RMSNorm weights", "全部 RMSNorm 权重"),
                  sum(n for k, n in rep["items"].items() if k.startswith("norm/")), ","),
             Fact("attention_mha", Tr("one layer's attention if K and V had every head (MHA)",
                                      "若 K、V 每个头都有（MHA），一层注意力的参数量"),
                  sum(n for k, n in sizing.layer_params(cfg.with_(n_kv_head=cfg.n_head)).items()
                      if k.startswith("attention/")), ",")]
    if published is not None:  # the preset's, even when fields were changed: the screen says which
        published_name = published_name or cfg.name
        facts.append(Fact("published", Tr(f"count of the released {published_name} checkpoint",
                                          f"发布的 {published_name} 权重文件的参数量"),
                          published, ","))
        facts.append(Fact("matches", Tr("this count equals it", "本次计数与之相等"), total == published))
    facts += [Fact("int4_bare", Tr("int4 weights without their scales", "不算缩放系数的 int4 权重"),
                   rep["weight_bytes"]["int4"], "bytes"),
              Fact("int4_scales", Tr("int4's fp16 scales, one per block", "int4 的 fp16 缩放系数，每块一个"),
                   sizing.scale_bytes(cfg, "int4"), "bytes"),
              Fact("block", Tr("weights per quantisation block", "每个量化块的权重数"), sizing.QUANT_BLOCK, "d")]
    kv = rep["kv_cache"]
    return Result("params", settings or {}, (
        _summary_table(cfg, rep, name),
        Table("items", Tr("Every parameter, by part", "逐项参数量"),
              (col("part", "part", "部件"), col("formula", "formula", "算式"), col("count", "count", "参数量", ","),
               col("share", "share", "占比", "pct")), rows),
        _shares_table(cfg, rep, name),
        Table("memory", Tr("Memory: the weights, and full fine-tuning", "内存：权重，以及全量微调"),
              (col("dtype", "dtype", "精度"), col("bits", "bits/weight", "每权重位数", "g"),
               col("bytes", "bytes", "字节", ","), col("size", "size", "大小", "bytes")),
              tuple((dtype, sizing.bits_per_weight(dtype), b, b) for dtype, b in rep["stored_bytes"].items())
              + ((Tr("fine-tune", "全量微调"), 8 * sizing.FINETUNE_BYTES_PER_PARAM, rep["finetune_bytes"],
                  rep["finetune_bytes"]),),
              note=Tr(f"int8, int4: one fp16 scale per {sizing.QUANT_BLOCK} weights (GGUF Q8_0, Q4_0); "
                      "fine-tune: Adam",
                      f"int8、int4：每 {sizing.QUANT_BLOCK} 个权重一个 fp16 缩放系数（GGUF Q8_0、Q4_0）；"
                      "全量微调：Adam")),
        Table("kv", Tr("KV cache in fp16", "fp16 的 KV 缓存"),
              (col("what", "what", "项目"), col("bytes", "bytes", "字节", ","), col("size", "size", "大小", "bytes")),
              ((Tr("per token", "每个词元"), kv["per_token"], kv["per_token"]),
               (Tr(f"one sequence of {context:,} tokens", f"一条 {context:,} 个词元的序列"),
                kv["per_sequence"], kv["per_sequence"]))),
    ), tuple(facts), (split_chart(_split_models(cfg)),))


def trained_mark(n_ctx: int, trained: int) -> Tr:
    """A table cell: is a context within the length the model was trained for, or beyond it?"""
    return Tr("beyond", "超出") if n_ctx > trained else Tr("within", "以内")


def _kvcache(preset, context, kv_heads, batch, dtype):
    cfg = config_from(preset, None, None, None, kv_heads, None, None, None, None)
    trained = sizing.TRAINED_CONTEXT[preset]
    variants = [(Tr(f"MHA, kv_heads={cfg.n_head}", f"MHA，kv_heads={cfg.n_head}"), cfg.with_(n_kv_head=cfg.n_head)),
                (Tr(f"this model, kv_heads={cfg.n_kv_head}", f"本模型，kv_heads={cfg.n_kv_head}"), cfg),
                (Tr("MQA, kv_heads=1", "MQA，kv_heads=1"), cfg.with_(n_kv_head=1))]
    weights = sizing.weight_bytes(cfg, "fp16")  # the weights stay fp16; dtype is the cache's precision
    caches = [sizing.kv_cache_bytes(c, context, batch, dtype) for _, c in variants]
    # each variant with its own weights: fewer KV heads also means narrower W_k and W_v
    own_weights = [sizing.weight_bytes(c, "fp16") for _, c in variants]
    cache_rows = tuple((name, sizing.kv_bytes_per_token(c, dtype), cache)
                       for (name, c), cache in zip(variants, caches))
    memory_rows = tuple((name, w, cache, w + cache) for (name, _), w, cache in zip(variants, own_weights, caches))
    sweep = tuple((n, sizing.kv_cache_bytes(cfg, n, batch, dtype), trained_mark(n, trained))
                  for n in (1024, 4096, 8192, 32768, 131072))
    where = Tr(f"{cfg.name} at {context:,} tokens, batch {batch}",
               f"{cfg.name} 在 {context:,} 个词元、批大小 {batch} 时")
    growth = _growth_chart(cfg, variants, context, batch, dtype, trained)
    return Result("kvcache", dict(preset=preset, context=context, kv_heads=cfg.n_kv_head, batch=batch, dtype=dtype), (
        Table("cache", Tr(f"KV cache of {where.en}", f"{where.zh}的 KV 缓存"),
              (col("variant", "attention", "注意力"), col("per_token", "per token", "每词元", "bytes"),
               col("cache", "cache", "缓存", "bytes")), cache_rows),
        Table("memory", Tr(f"Memory of {where.en}", f"{where.zh}的内存"),
              (col("variant", "attention", "注意力"), col("weights", "fp16 weights", "fp16 权重", "bytes"),
               col("cache", "cache", "缓存", "bytes"), col("total", "weights + cache", "权重 + 缓存", "bytes")),
              memory_rows, note=Tr("each row has its own weights: W_k and W_v are kv_heads x head_dim wide",
                                   "每一行用自己那一版权重：W_k 和 W_v 宽 kv_heads x head_dim")),
        Table("context", Tr(f"The cache stops at the window of {cfg.window:,} tokens",
                            f"缓存到 {cfg.window:,} 个词元的窗口就不再增长") if cfg.window
              else Tr("The cache grows with every token", "缓存随上下文长度线性增长"),
              (col("context", "context", "上下文", ","), col("cache", "cache", "缓存", "bytes"),
               col("trained", f"trained ctx {trained:,}", f"训练长度 {trained:,}")), sweep),
    ), (Fact("formula", Tr("bytes per token", "每词元字节"),
             f"2 x {cfg.n_layer} x {cfg.n_kv_head} x {cfg.d_head} x "
             f"{sizing.stored_bytes(cfg.d_head, dtype) / cfg.d_head:g}"),
        Fact("cache_bits", Tr(f"bits per cached number in {dtype}, block scales included",
                              f"{dtype} 下每个缓存数的位数，含分块缩放系数"),
             8 * sizing.stored_bytes(cfg.d_head, dtype) / cfg.d_head, "g"),
        Fact("block", Tr("numbers per quantisation block", "每个量化块的数字个数"), sizing.QUANT_BLOCK, ","),
        Fact("windowed", Tr("a sliding window caps the cache", "滑动窗口给缓存封顶"), cfg.window is not None),
        Fact("window", Tr("tokens the cache keeps, at most", "缓存最多保留的词元数"),
             cfg.window or context, ","),
        Fact("window_cache", Tr("the cache once it is full", "缓存装满时的大小"),
             sizing.kv_cache_bytes(cfg, cfg.window or context, batch, dtype), "bytes"),
        Fact("weights", Tr("weights in fp16", "fp16 权重"), weights, "bytes"),
        Fact("cache_gb", Tr("cache in GB (10^9 bytes)", "缓存，GB（10^9 字节）"),
             caches[1] / 1e9, "sig3"),
        Fact("cache_gib", Tr("cache in GiB (2^30 bytes)", "缓存，GiB（2^30 字节）"),
             caches[1] / 2**30, "sig3"),
        Fact("k_only_gb", Tr("the cache with K alone, V forgotten, GB", "只算 K、漏掉 V 的缓存，GB"),
             caches[1] // 2 / 1e9, "sig3"),
        Fact("group", Tr("query heads per KV head", "每个键值头对应的查询头"), cfg.n_head // cfg.n_kv_head, "d"),
        Fact("grouped", Tr("query heads share KV heads", "查询头共享键值头"), cfg.n_kv_head < cfg.n_head),
        Fact("mqa", Tr("one KV head for all", "所有查询头共用一个键值头"), cfg.n_kv_head == 1),
        Fact("changed", Tr(f"kv_heads differs from {cfg.name}'s own", f"kv_heads 与 {cfg.name} 原本的不同"),
             cfg.n_kv_head != sizing.preset(preset).n_kv_head),
        Fact("model", Tr("model", "模型"), cfg.name),
        Fact("trained", Tr(f"context {cfg.name} was trained for", f"{cfg.name} 训练时的上下文长度"), trained, ","),
        Fact("beyond", Tr("this context is beyond it", "当前上下文超出了它"), context > trained),
        Fact("saved_cache", Tr("MHA to MQA: cache saved", "从 MHA 到 MQA：省下的缓存"), caches[0] - caches[2], "bytes"),
        Fact("saved_weights", Tr("MHA to MQA: W_k and W_v weights saved", "从 MHA 到 MQA：W_k、W_v 省下的权重"),
             own_weights[0] - own_weights[2], "bytes")), (growth,))


GROWTH_CONTEXTS = tuple(2**k for k in range(10, 18))  # 1,024 .. 131,072 tokens


def _growth_chart(cfg, variants, context, batch, dtype, trained) -> Chart:
    """The cache in GiB against the context, one line for each row of the cache table: MHA, this model, MQA."""
    xs = sorted(set(GROWTH_CONTEXTS) | {context})
    legends = (Tr(f"MHA kv={cfg.n_head}", f"MHA kv={cfg.n_head}"),
               Tr(f"model kv={cfg.n_kv_head}", f"本模型 kv={cfg.n_kv_head}"), Tr("MQA kv=1", "MQA kv=1"))
    return Chart("growth", Tr(f"KV cache of {cfg.name}, batch {batch}, {dtype}",
                              f"{cfg.name} 的 KV 缓存，批大小 {batch}，{dtype}"),
                 "line", tuple(Series(legend, tuple(sizing.kv_cache_bytes(c, n, batch, dtype) / 2**30 for n in xs))
                               for legend, (_, c) in zip(legends, variants)),
                 x=tuple(float(n) for n in xs), x_label=Tr("context (tokens)", "上下文（词元）"),
                 y_label=Tr("GiB", "GiB"), log_x=True, log_y=True,
                 note=Tr(f"{cfg.name} was trained for {trained:,} tokens",
                         f"{cfg.name} 训练时的上下文长度是 {trained:,} 个词元"))


def _compare(a, b, context):
    cfgs = [sizing.preset(a), sizing.preset(b)]

    def per_layer(cfg, group):
        return sum(n for k, n in sizing.layer_params(cfg).items() if k.startswith(group + "/"))

    def emb_out(cfg):
        items = sizing.param_count(cfg)
        return items["embedding"] + items["output"]

    def mha_kv(cfg):
        return sizing.kv_bytes_per_token(cfg.with_(n_kv_head=cfg.n_head))

    rows = [
        (Tr("attention, one layer", "注意力（一层）"), ",", lambda c: per_layer(c, "attention")),
        (Tr("FFN, one layer", "前馈（一层）"), ",", lambda c: per_layer(c, "ffn")),
        (Tr("attention, all layers", "注意力（全部层）"), ",", lambda c: c.n_layer * per_layer(c, "attention")),
        (Tr("FFN, all layers", "前馈（全部层）"), ",", lambda c: c.n_layer * per_layer(c, "ffn")),
        (Tr("embedding + output", "词嵌入 + 输出"), ",", emb_out),
        (Tr("norms", "归一化"), ",", lambda c: sizing.group_counts(c)["norms"]),
        (Tr("total", "总计"), ",", sizing.total_params),
        (Tr("fp16 weights", "fp16 权重"), "bytes", sizing.weight_bytes),
        (Tr("KV cache per token, fp16", "每词元 KV 缓存（fp16）"), "bytes", sizing.kv_bytes_per_token),
        (Tr("the same with MHA", "若用 MHA"), "bytes", mha_kv),
        (Tr(f"KV cache at {context:,} tokens", f"{context:,} 个词元的 KV 缓存"), "bytes",
         lambda c: sizing.kv_cache_bytes(c, context)),
    ]
    def table(key, title, fmt):
        return Table(key, title, (col("part", "part", "部件"), Column("a", Tr(cfgs[0].name, cfgs[0].name), fmt),
                                  Column("b", Tr(cfgs[1].name, cfgs[1].name), fmt)),
                     tuple((label, f(cfgs[0]), f(cfgs[1])) for label, row_fmt, f in rows if row_fmt == fmt))

    return Result("compare", dict(a=a, b=b, context=context), (
        table("counts", Tr(f"Parameters: {cfgs[0].name} beside {cfgs[1].name}",
                           f"参数量：{cfgs[0].name} 与 {cfgs[1].name} 对照"), ","),
        table("memory", Tr("Memory", "内存"), "bytes"),
    ), charts=(split_chart([(legend_name(a), cfgs[0]), (legend_name(b), cfgs[1])]),))


register(View("params", Tr("Counting parameters", "参数量统计"), _config_params(), _params,
     (sizing.param_count, sizing.layer_params)))

register(View("kvcache", Tr("The KV cache", "KV 缓存"),
     (Param("preset", "choice", "llama2-7b", Tr("model", "模型"), choices=tuple(sizing.PRESETS)),
      Param("context", "int", 4096, Tr("tokens in the context", "上下文词元数"), 1, sizing.MAX_CONTEXT),
      Param("kv_heads", "int", None, Tr("key/value heads", "键值头数"), 1, 1024, optional=True),
      Param("batch", "int", 1, Tr("sequences at once", "批大小"), 1, 4096),
      Param("dtype", "choice", "fp16", Tr("cache precision", "缓存精度"), choices=DTYPES)),
     _kvcache, (sizing.kv_bytes_per_token, sizing.kv_cache_bytes)))

register(View("compare", Tr("Two models side by side", "两个模型对照"),
     (Param("a", "choice", "llama2-7b", Tr("first model", "第一个模型"), choices=tuple(sizing.PRESETS)),
      Param("b", "choice", "llama3-8b", Tr("second model", "第二个模型"), choices=tuple(sizing.PRESETS)),
      Param("context", "int", 8192, Tr("tokens for the cache row", "缓存一行的词元数"), 1, sizing.MAX_CONTEXT)),
     _compare, (sizing.param_count, sizing.kv_bytes_per_token)))
