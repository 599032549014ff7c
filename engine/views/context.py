"""Lesson 8: the cost of context: prefill work, the cache, and the decode ceiling."""

from .. import sizing
from .core import Chart, Fact, Param, Result, Series, Table, Tr, View, col, register
from .sizing import DTYPES, trained_mark

_BANDWIDTHS = (50e9, 100e9, 400e9, 1000e9, 3350e9)  # bytes/s: dual-channel DDR5 up to an H100's HBM3
_PROMPTS = (1024, 4096, 16384, 65536, 131072)
# One data-centre GPU for the batch table, from NVIDIA's H100 SXM datasheet: 3.35 TB/s of HBM3, and 989 TFLOP/s
# of dense bf16 matrix arithmetic (the 1,979 printed beside it assumes 2:4 sparsity)
_GPU_BANDWIDTH, _GPU_FLOPS = 3350e9, 989e12
_BATCHES = (1, 4, 16, 64, 256, 1024)


def _context(preset, prompt, dtype, batch):
    cfg = sizing.preset(preset)
    trained = sizing.TRAINED_CONTEXT[preset]
    prefill = []
    for n in sorted(set(_PROMPTS) | {prompt}):
        linear, attn = sizing.prefill_flops(cfg, n)
        prefill.append((n, sizing.causal_pairs(n, cfg.window), (linear + attn) / 1e12, attn / (linear + attn),
                        sizing.kv_cache_bytes(cfg, n), trained_mark(n, trained)))
    weights, cache = sizing.decode_weight_bytes(cfg, dtype), sizing.kv_cache_bytes(cfg, prompt)
    stored = sizing.stored_weight_bytes(cfg, dtype)
    decode = tuple((f"{bw / 1e9:,.0f} GB/s", sizing.decode_tokens_per_second(cfg, bw, dtype),
                    sizing.decode_tokens_per_second(cfg, bw, dtype, prompt)) for bw in _BANDWIDTHS)
    chosen_linear, chosen_attn = sizing.prefill_flops(cfg, prompt)
    scales = Tr(f"; {dtype} with one fp16 scale per {sizing.QUANT_BLOCK} weights" if dtype in sizing.QUANTISED else "",
                f"；{dtype} 每 {sizing.QUANT_BLOCK} 个权重带一个 fp16 缩放系数" if dtype in sizing.QUANTISED else "")
    prefill = Table("prefill", Tr(f"Reading the prompt: {cfg.name}", f"读入提示词：{cfg.name}"),
                    (col("n", "prompt", "提示词", ","), col("scores", "scores/head", "每头打分数", ","),
                     col("tflops", "TFLOP", "万亿次运算", ",.1f"), col("share", "attention", "其中注意力", "pct"),
                     col("cache", "KV cache", "KV 缓存", "bytes"),
                     col("trained", f"trained ctx {trained:,}", f"训练长度 {trained:,}")),
                    tuple(prefill), note=_prefill_note(cfg))
    return Result("context", dict(preset=preset, prompt=prompt, dtype=dtype, batch=batch), (
        prefill,
        Table("decode", Tr(f"Generating, one sequence: at most this many tokens/s with {dtype} weights",
                           f"生成，单条序列：{dtype} 权重下每秒最多这么多词元"),
              (col("bandwidth", "memory bandwidth", "内存带宽"),
               col("tps_weights", "weights only", "只算权重", ",.1f"),
               col("tps", f"+ cache at {prompt:,}", f"含 {prompt:,} 词元缓存", ",.1f")), decode,
              note=Tr("a new token reads the weights and the cache so far: "
                      "tokens/s <= bandwidth / (weights + cache)" + scales.en,
                      "每个新词元都要读一遍权重和已有的缓存："
                      "词元/秒 <= 带宽 / (权重 + 缓存)" + scales.zh)),
        _batch_table(cfg, prompt, dtype, batch),
        _flops_table(cfg, prompt),
    ), (Fact("weights", Tr(f"weights one new token reads, {dtype}", f"每个新词元要读的 {dtype} 权重"),
             weights, "bytes"),
        Fact("stored", Tr(f"all the weights in {dtype}", f"全部 {dtype} 权重"), stored, "bytes"),
        Fact("embedding_unread", Tr("the embedding rows a new token does not read",
                                    "新词元用不到、不必读的词嵌入行"), stored - weights, "bytes"),
        Fact("tied", Tr("the output head is the embedding matrix", "输出投影就是词嵌入矩阵"), cfg.tied_embeddings),
        Fact("cache", Tr("fp16 KV cache at the chosen length", "选的长度下的 fp16 KV 缓存"), cache, "bytes"),
        Fact("read", Tr("bytes one new token reads there", "在这个长度每生成一个词元要读的字节"),
             sizing.decode_bytes(cfg, prompt, dtype), "bytes"),
        *_batch_facts(cfg, prompt, dtype, batch),
        *_flops_facts(cfg),
        Fact("windowed", Tr("attention through a sliding window", "注意力用滑动窗口"), cfg.window is not None),
        Fact("window", Tr("keys a token attends to, at most", "一个词元最多关注的键数"),
             cfg.window or prompt, ","),
        Fact("reach", Tr("window x layers: how far information can travel", "窗口 x 层数：信息最远能传多远"),
             (cfg.window or prompt) * cfg.n_layer, ","),
        Fact("prompt_pairs", Tr("scores per head at the chosen length", "选的长度下每头的打分数"),
             sizing.causal_pairs(prompt, cfg.window), ","),
        Fact("prompt_full_pairs", Tr("the same without a window, n(n+1)/2", "没有窗口时的 n(n+1)/2"),
             sizing.causal_pairs(prompt), ","),
        Fact("prompt_cut", Tr("the window cuts the chosen length's scores", "窗口减少了选的长度下的打分"),
             sizing.causal_pairs(prompt, cfg.window) < sizing.causal_pairs(prompt)),
        Fact("model", Tr("model", "模型"), cfg.name),
        Fact("heads", Tr("query heads per layer", "每层的查询头数"), cfg.n_head, ","),
        Fact("kv_heads", Tr("key/value heads per layer", "每层的键值头数"), cfg.n_kv_head, ","),
        Fact("gqa", Tr("query heads share key/value heads", "查询头共用键值头"), cfg.n_kv_head < cfg.n_head),
        Fact("trained", Tr(f"context {cfg.name} was trained for", f"{cfg.name} 训练时的上下文长度"), trained, ","),
        Fact("prompt_beyond", Tr("the chosen length is beyond it", "选的长度超出了它"), prompt > trained),
        Fact("prompt_share", Tr("attention share", "注意力占比"),
             chosen_attn / (chosen_linear + chosen_attn), "pct"),
        Fact("prompt_cache", Tr("at the chosen length, the KV cache", "选的长度下的 KV 缓存"), cache, "bytes")),
        (_share_chart(cfg, prefill),))


def _prefill_note(cfg) -> Tr:
    if cfg.window is None:
        return Tr("causal: each head of each layer scores n(n+1)/2 pairs; fp16 cache",
                  "因果掩码：每层每个头给 n(n+1)/2 对词元打分；缓存按 fp16 计")
    w = f"{cfg.window:,}"
    return Tr(f"window {w}: at most {w} keys a token, {w} tokens cached; fp16",
              f"窗口 {w}：每个词元最多 {w} 个键，缓存最多 {w} 个词元；fp16")


def _step(cfg, prompt, dtype, batch):
    return sizing.decode_step(cfg, prompt, batch, _GPU_BANDWIDTH, _GPU_FLOPS, dtype)


def _batch_table(cfg, prompt, dtype, batch) -> Table:
    """Decode on one GPU as the batch grows: the weights are read once a step, each sequence's cache once each."""
    rows = []
    for b in sorted(set(_BATCHES) | {batch}):
        seconds, compute = _step(cfg, prompt, dtype, b)
        read = sizing.decode_weight_bytes(cfg, dtype, b) + sizing.kv_cache_bytes(cfg, prompt, b)
        rows.append((b, read, 1 / seconds, b / seconds,
                     Tr("compute", "算力") if compute else Tr("memory", "内存")))
    return Table("batch", Tr(f"Decoding a batch on one H100, {prompt:,} tokens each",
                             f"在一块 H100 上批量生成，每条 {prompt:,} 个词元"),
                 (col("batch", "batch", "批大小", ","), col("read", "read per step", "每步读取", "bytes"),
                  col("tps_seq", "tok/s each", "每条 词元/秒", ",.1f"),
                  col("tps_all", "tok/s in all", "合计 词元/秒", ",.0f"),
                  col("bound", "bound by", "瓶颈")), tuple(rows),
                 note=Tr("3.35 TB/s, 989 TFLOP/s dense bf16: the slower of bytes and FLOPs sets each step",
                         "3.35 TB/s、989 TFLOP/s（稠密 bf16）：字节和运算哪个更慢，就由哪个决定每一步"))


def _batch_facts(cfg, prompt, dtype, batch):
    seconds, compute = _step(cfg, prompt, dtype, batch)
    binds = sizing.compute_binds_from(cfg, prompt, _GPU_BANDWIDTH, _GPU_FLOPS, dtype)
    per_seq_flops = sizing.decode_token_flops(cfg, prompt)
    return (Fact("batch_tps", Tr("tokens/s of each sequence at the chosen batch", "选的批大小下每条序列的词元/秒"),
                 1 / seconds, ",.1f"),
            Fact("batch_total", Tr("tokens/s of the whole batch", "整批的词元/秒"), batch / seconds, ",.0f"),
            Fact("batch_compute", Tr("compute binds at the chosen batch", "选的批大小下瓶颈是算力"), compute),
            Fact("binds", Tr("compute binds at some batch", "批够大时瓶颈会变成算力"), binds is not None),
            Fact("binds_at", Tr("the smallest batch that compute binds", "瓶颈变成算力的最小批大小"), binds or 0, ","),
            Fact("gpu_balance", Tr("the GPU's FLOPs per byte read", "这块显卡每读一字节能做的运算"),
                 _GPU_FLOPS / _GPU_BANDWIDTH, ",.0f"),
            Fact("seq_intensity", Tr("FLOPs per byte of one sequence's own cache", "一条序列自己的缓存每字节的运算"),
                 per_seq_flops / sizing.kv_cache_bytes(cfg, prompt), ",.0f"))


def _flops_table(cfg, prompt) -> Table:
    """The rules of thumb, 2·P and 6·P FLOPs per token, beside the exact count they round."""
    p = sizing.total_params(cfg)
    attn = sizing.decode_token_flops(cfg, prompt) - 2 * sizing.matmul_params(cfg)
    rows = ((Tr("forward, rule: 2 x P", "前向，经验法则：2 x P"), sizing.FORWARD_FLOPS_PER_PARAM * p / 1e9),
            (Tr("forward, the matrices counted", "前向，逐个矩阵数"), 2 * sizing.matmul_params(cfg) / 1e9),
            (Tr(f"+ attention at {prompt:,} tokens", f"+ {prompt:,} 个词元时的注意力"), attn / 1e9),
            (Tr("training, rule: 6 x P", "训练，经验法则：6 x P"), sizing.TRAIN_FLOPS_PER_PARAM * p / 1e9))
    return Table("flops", Tr(f"FLOPs per token: {cfg.name}, P = {p:,}", f"每个词元的运算量：{cfg.name}，P = {p:,}"),
                 (col("what", "what", "项目"), col("gflop", "GFLOP", "十亿次运算", ",.1f")), rows)


def _flops_facts(cfg):
    p = sizing.total_params(cfg)
    return (Fact("forward_gflop", Tr("2 x P, GFLOP per token", "2 x P，每词元十亿次运算"), 2 * p / 1e9, ",.1f"),
            Fact("train_gflop", Tr("6 x P, GFLOP per token", "6 x P，每词元十亿次运算"), 6 * p / 1e9, ",.1f"),
            Fact("p_billions", Tr("P, in billions", "P，以十亿计"), p / 1e9, ",.2f"))


def _share_chart(cfg, prefill: Table) -> Chart:
    """The prefill table's attention share, in percent, against the prompt length: its rows, drawn."""
    n, share = (next(i for i, c in enumerate(prefill.columns) if c.key == key) for key in ("n", "share"))
    return Chart("share", Tr(f"Attention's share of the prefill work: {cfg.name}",
                             f"预填充运算中注意力的占比：{cfg.name}"),
                 "line", (Series(Tr("attention", "注意力"), tuple(100 * row[share] for row in prefill.rows)),),
                 x=tuple(float(row[n]) for row in prefill.rows), x_label=Tr("prompt (tokens)", "提示词（词元）"),
                 y_label=Tr("% of FLOPs", "占运算量 %"), log_x=True, y_range=(0.0, 100.0))


register(View("context", Tr("The cost of context", "上下文的代价"),
     (Param("preset", "choice", "llama2-7b", Tr("model", "模型"), choices=tuple(sizing.PRESETS)),
      Param("prompt", "int", 4096, Tr("a prompt length to add to the table", "加进表里的提示词长度"), 1,
            sizing.MAX_CONTEXT),
      Param("dtype", "choice", "fp16", Tr("weight precision", "权重精度"), choices=DTYPES),
      Param("batch", "int", 1, Tr("sequences decoded at once", "同时生成的序列数"), 1, 4096)),
     _context, (sizing.prefill_flops, sizing.decode_tokens_per_second, sizing.decode_step)))
