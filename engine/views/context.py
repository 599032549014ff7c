"""Lesson 8: the cost of context: prefill work, the cache, and the decode ceiling."""

from .. import sizing
from .core import Chart, Fact, Param, Result, Series, Table, Tr, View, col, register
from .sizing import DTYPES, trained_mark

_BANDWIDTHS = (50e9, 100e9, 400e9, 1000e9, 3350e9)  # bytes/s: dual-channel DDR5 up to an H100's HBM3
_PROMPTS = (1024, 4096, 16384, 65536, 131072)


def _context(preset, prompt, dtype):
    cfg = sizing.preset(preset)
    trained = sizing.TRAINED_CONTEXT[preset]
    prefill = []
    for n in sorted(set(_PROMPTS) | {prompt}):
        linear, attn = sizing.prefill_flops(cfg, n)
        prefill.append((n, sizing.causal_pairs(n), (linear + attn) / 1e12, attn / (linear + attn),
                        sizing.kv_cache_bytes(cfg, n), trained_mark(n, trained)))
    weights, cache = sizing.stored_weight_bytes(cfg, dtype), sizing.kv_cache_bytes(cfg, prompt)
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
                    tuple(prefill), note=Tr("causal: each head of each layer scores n(n+1)/2 pairs; fp16 cache",
                                            "因果掩码：每层每个头给 n(n+1)/2 对词元打分；缓存按 fp16 计"))
    return Result("context", dict(preset=preset, prompt=prompt, dtype=dtype), (
        prefill,
        Table("decode", Tr(f"Generating: at most this many tokens/s with {dtype} weights",
                           f"生成：{dtype} 权重下每秒最多这么多词元"),
              (col("bandwidth", "memory bandwidth", "内存带宽"),
               col("tps_weights", "weights only", "只算权重", ",.1f"),
               col("tps", f"+ cache at {prompt:,}", f"含 {prompt:,} 词元缓存", ",.1f")), decode,
              note=Tr("a new token reads every weight and the cache so far: "
                      "tokens/s <= bandwidth / (weights + cache)" + scales.en,
                      "每个新词元都要读一遍全部权重和已有的缓存："
                      "词元/秒 <= 带宽 / (权重 + 缓存)" + scales.zh)),
    ), (Fact("weights", Tr(f"weights in {dtype}", f"{dtype} 权重"), weights, "bytes"),
        Fact("weights_gb", Tr(f"weights in {dtype}, GB (10^9 bytes, as bandwidth is quoted)",
                              f"{dtype} 权重，GB（10^9 字节，和带宽的单位一致）"), weights / 1e9, ",.2f"),
        Fact("cache_gb", Tr("fp16 KV cache at the chosen length, GB", "选的长度下的 fp16 KV 缓存，GB"),
             cache / 1e9, ",.2f"),
        Fact("read_gb", Tr("bytes one new token reads there, GB", "在这个长度每生成一个词元要读的字节，GB"),
             sizing.decode_bytes(cfg, prompt, dtype) / 1e9, ",.2f"),
        Fact("model", Tr("model", "模型"), cfg.name),
        Fact("heads", Tr("query heads per layer", "每层的查询头数"), cfg.n_head, ","),
        Fact("kv_heads", Tr("key/value heads per layer", "每层的键值头数"), cfg.n_kv_head, ","),
        Fact("gqa", Tr("query heads share key/value heads", "查询头共用键值头"), cfg.n_kv_head < cfg.n_head),
        Fact("trained", Tr(f"context {cfg.name} was trained for", f"{cfg.name} 训练时的上下文长度"), trained, ","),
        Fact("prompt_beyond", Tr("the chosen length is beyond it", "选的长度超出了它"), prompt > trained),
        Fact("prompt_share", Tr("attention's share at the chosen length", "选的长度下，注意力占预填充的比例"),
             chosen_attn / (chosen_linear + chosen_attn), "pct"),
        Fact("prompt_cache", Tr("at the chosen length, the KV cache", "选的长度下的 KV 缓存"), cache, "bytes")),
        (_share_chart(cfg, prefill),))


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
      Param("dtype", "choice", "fp16", Tr("weight precision", "权重精度"), choices=DTYPES)),
     _context, (sizing.prefill_flops, sizing.decode_tokens_per_second)))
