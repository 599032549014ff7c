"""Sizing a Llama-style model: its exact parameter count, its weights and its KV cache.

Every count is a Python int, so nothing overflows however large the model.
"""

from .errors import ParamError, pick
from .records import fields, not_compared, record, replace

BYTES_PER_PARAM = {"fp32": 4, "bf16": 2, "fp16": 2, "int8": 1, "int4": 0.5}
MAX_DIM = 2**20  # no field of a config may pass this: far above any published model
MAX_CONTEXT = 10**9  # tokens; the cache arithmetic is exact at any size, this only keeps typos out


@record
class ModelConfig:
    """The numbers on a model card; head_dim defaults to d_model // n_head."""

    d_model: int = 4096         # width of the residual stream (hidden_size)
    n_layer: int = 32           # transformer blocks
    n_head: int = 32            # query heads
    n_kv_head: int = 32         # key/value heads: n_head for MHA, fewer for GQA, 1 for MQA
    head_dim: int | None = None  # width of one head; None means d_model // n_head
    d_ff: int = 11008           # SwiGLU hidden width (intermediate_size)
    n_vocab: int = 32000        # vocabulary size
    tied_embeddings: bool = False  # True when the output head reuses the embedding matrix
    # sliding-window attention: a token attends to at most this many keys, itself included, and the cache keeps
    # that many tokens; None: every earlier one. Not compared, so a config typed from a card (the workbench's)
    # still finds its preset
    window: int | None = not_compared(None)
    name: str = not_compared("")  # a preset's name: a config equals a preset whatever its name

    def __post_init__(self):
        for name in fields(self):
            value = getattr(self, name)
            if name in ("name", "tied_embeddings") or (name in ("head_dim", "window") and value is None):
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise ParamError(f"{name} must be a whole number, got {value!r}",
                                 f"{name} 必须是整数，收到 {value!r}")
            if not 1 <= value <= MAX_DIM:
                raise ParamError(f"{name} must be between 1 and {MAX_DIM:,}, got {value:,}",
                                 f"{name} 必须在 1 到 {MAX_DIM:,} 之间，收到 {value:,}")
        if self.head_dim is None and self.d_model % self.n_head:
            raise ParamError(
                f"heads={self.n_head} does not divide d_model={self.d_model}; "
                "choose a divisor or give head_dim",
                f"heads={self.n_head} 不能整除 d_model={self.d_model}；请选一个因数，或给出 head_dim",
            )
        if self.n_head % self.n_kv_head:
            raise ParamError(
                f"kv_heads={self.n_kv_head} must divide heads={self.n_head}",
                f"kv_heads={self.n_kv_head} 必须能整除 heads={self.n_head}",
            )

    @property
    def d_head(self) -> int:
        """The width of one head."""
        return self.head_dim if self.head_dim is not None else self.d_model // self.n_head

    def with_(self, **changes) -> "ModelConfig":
        """A copy with some fields changed, checked again."""
        return replace(self, **changes)


# Presets. Each comment gives the published total the preset reproduces, and where it is published;
# tests/test_sizing.py checks every one. Hugging Face's Llama 2 figures run 64 per layer higher:
# those checkpoints also store RoPE's inv_freq buffers, which are not weights.
PRESETS = {
    # Llama 2 (Touvron et al. 2023; keras-hub llama2 presets, llama.cpp n_params)
    "llama2-7b": ModelConfig(4096, 32, 32, 32, None, 11008, 32000, name="Llama 2 7B"),        # 6,738,415,616
    "llama2-13b": ModelConfig(5120, 40, 40, 40, None, 13824, 32000, name="Llama 2 13B"),      # 13,015,864,320
    "llama2-70b": ModelConfig(8192, 80, 64, 8, None, 28672, 32000, name="Llama 2 70B"),       # 68,976,648,192
    # Llama 3 / 3.1 (Meta model cards; keras-hub llama3 presets; HF safetensors counts)
    "llama3-8b": ModelConfig(4096, 32, 32, 8, None, 14336, 128256, name="Llama 3 8B"),        # 8,030,261,248
    "llama3-70b": ModelConfig(8192, 80, 64, 8, None, 28672, 128256, name="Llama 3.1 70B"),    # 70,553,706,496
    # Llama 3.2: tied embeddings
    "llama3.2-1b": ModelConfig(2048, 16, 32, 8, 64, 8192, 128256, True, name="Llama 3.2 1B"),  # 1,235,814,400
    "llama3.2-3b": ModelConfig(3072, 28, 24, 8, 128, 8192, 128256, True, name="Llama 3.2 3B"),  # 3,212,749,824
    # Mistral (keras-hub mistral presets; Mistral-Nemo-Base-2407 safetensors): NeMo's head_dim 128 is not 5120 / 32.
    # Mistral 7B v0.1 attends through a sliding window of 4,096 tokens in every layer, with a rolling cache of
    # that size (Jiang et al. 2023, section 2; its params.json: "sliding_window": 4096, n_kv_heads 8, head_dim 128)
    "mistral-7b": ModelConfig(4096, 32, 32, 8, None, 14336, 32000, window=4096,
                              name="Mistral 7B v0.1"),  # 7,241,732,096
    "mistral-nemo-12b": ModelConfig(5120, 40, 32, 8, 128, 14336, 131072, name="Mistral NeMo 12B"),  # 12,247,782,400
    # Gemma 1 (keras-hub gemma presets): GeGLU has SwiGLU's three matrices; tied; 7B's head_dim 256 is not 3072 / 16
    "gemma-2b": ModelConfig(2048, 18, 8, 1, 256, 16384, 256000, True, name="Gemma 2B"),       # 2,506,172,416
    "gemma-7b": ModelConfig(3072, 28, 16, 16, 256, 24576, 256000, True, name="Gemma 7B"),     # 8,537,680,896
    # TinyLlama (llama.cpp n_params; its safetensors metadata)
    "tinyllama-1.1b": ModelConfig(2048, 22, 32, 4, None, 5632, 32000, name="TinyLlama 1.1B"),  # 1,100,048,384
}
SOURCES = {  # where each published total comes from, for the screens that name it
    "llama2-7b": "Touvron et al. 2023 (Llama 2); keras-hub; llama.cpp",
    "llama2-13b": "Touvron et al. 2023 (Llama 2); llama.cpp",
    "llama2-70b": "Touvron et al. 2023 (Llama 2); llama.cpp",
    "llama3-8b": "Meta Llama 3 model card; keras-hub",
    "llama3-70b": "Meta Llama 3.1 70B model card (same shape as Llama 3 70B)",
    "llama3.2-1b": "Meta Llama 3.2 model card",
    "llama3.2-3b": "Meta Llama 3.2 model card",
    "mistral-7b": "Mistral 7B v0.1 release; keras-hub",
    "mistral-nemo-12b": "Mistral-Nemo-Base-2407 checkpoint",
    "gemma-2b": "Gemma release (checkpoint vocabulary 256,000); keras-hub",
    "gemma-7b": "Gemma release (checkpoint vocabulary 256,000); keras-hub",
    "tinyllama-1.1b": "TinyLlama 1.1B checkpoint; llama.cpp",
}
PUBLISHED = {  # the same totals as data, for the tests and for the screens that compare against them
    "llama2-7b": 6_738_415_616,
    "llama2-13b": 13_015_864_320,
    "llama2-70b": 68_976_648_192,
    "llama3-8b": 8_030_261_248,
    "llama3-70b": 70_553_706_496,
    "llama3.2-1b": 1_235_814_400,
    "llama3.2-3b": 3_212_749_824,
    "mistral-7b": 7_241_732_096,
    "mistral-nemo-12b": 12_247_782_400,
    "gemma-2b": 2_506_172_416,
    "gemma-7b": 8_537_680_896,
    "tinyllama-1.1b": 1_100_048_384,
}


# The context length each model was trained for, in tokens. Past it a model still runs and its cache
# still costs bytes, but nothing in training taught it to read that far.
TRAINED_CONTEXT = {
    "llama2-7b": 4_096,          # Touvron et al. 2023, Table 1: context length 4k for every Llama 2 size
    "llama2-13b": 4_096,
    "llama2-70b": 4_096,
    "llama3-8b": 8_192,          # Meta Llama 3 model card: 8k context (Llama 3.1 raised it to 128k)
    "llama3-70b": 131_072,       # Meta Llama 3.1 model card: 128k; config.json max_position_embeddings
    "llama3.2-1b": 131_072,      # Meta Llama 3.2 model card: 128k
    "llama3.2-3b": 131_072,
    "mistral-7b": 8_192,         # Jiang et al. 2023 (Mistral 7B), Table 1: context_len 8192
    "mistral-nemo-12b": 131_072,  # Mistral NeMo release notes: a context window of 128k tokens
    "gemma-2b": 8_192,           # Gemma Team 2024, Table 1: context length 8192
    "gemma-7b": 8_192,
    "tinyllama-1.1b": 2_048,     # Zhang et al. 2024 (TinyLlama): sequences of 2,048 tokens
}


def preset(name: str) -> ModelConfig:
    """The preset called `name`, or a ParamError listing the names there are."""
    return pick(PRESETS, name, "preset", "预设")


def layer_params(cfg: ModelConfig) -> dict[str, int]:
    """The parameters of one block, by matrix and norm."""
    d, q_width, kv_width = cfg.d_model, cfg.n_head * cfg.d_head, cfg.n_kv_head * cfg.d_head
    return {
        "attention/q": d * q_width,
        "attention/k": d * kv_width,
        "attention/v": d * kv_width,
        "attention/o": q_width * d,
        "ffn/gate": d * cfg.d_ff,
        "ffn/up": d * cfg.d_ff,
        "ffn/down": cfg.d_ff * d,
        "norm/attention": d,  # RMSNorm before attention: one weight per dim
        "norm/ffn": d,        # RMSNorm before the FFN
    }


def param_count(cfg: ModelConfig) -> dict[str, int]:
    """Every parameter of the model by component, summed over layers; the values add up to the total."""
    items = {"embedding": cfg.n_vocab * cfg.d_model}
    items.update({name: cfg.n_layer * n for name, n in layer_params(cfg).items()})
    items["norm/final"] = cfg.d_model
    items["output"] = 0 if cfg.tied_embeddings else cfg.n_vocab * cfg.d_model
    return items


def total_params(cfg: ModelConfig) -> int:
    """The model's parameter count."""
    return sum(param_count(cfg).values())


def group_counts(cfg: ModelConfig) -> dict[str, int]:
    """Parameters in attention, FFN, embeddings + output, and norms; they add up to the total."""
    groups = {"attention": 0, "ffn": 0, "embeddings": 0, "norms": 0}
    for name, n in param_count(cfg).items():
        group = name.split("/")[0]
        groups[{"embedding": "embeddings", "output": "embeddings", "norm": "norms"}.get(group, group)] += n
    return groups


def group_shares(cfg: ModelConfig) -> dict[str, float]:
    """Fraction of the total in attention, FFN, embeddings + output, and norms."""
    total = total_params(cfg)
    return {g: n / total for g, n in group_counts(cfg).items()}


def weight_bytes(cfg: ModelConfig, dtype: str = "fp16") -> int:
    """Bytes of the weights themselves in `dtype` (int4 packs two per byte); no quantisation scales."""
    return _bytes(total_params(cfg), dtype)


# A quantised file stores its integers in blocks, each with its own scale to turn them back into
# numbers. The tour follows GGUF's plainest formats, Q8_0 and Q4_0 (ggml's block_q8_0 and block_q4_0):
# 32 weights and one fp16 scale per block, so int8 costs 34 bytes per 32 weights (8.5 bits a weight)
# and int4 18 bytes (4.5 bits). Every weight is counted this way; real files keep the norms, and often
# the output head, at higher precision, so they come out a little larger.
QUANT_BLOCK = 32       # weights per block
QUANT_SCALE_BYTES = 2  # one fp16 scale per block
QUANTISED = ("int8", "int4")


def block_scale_bytes(n_values: int, dtype: str) -> int:
    """Bytes of the fp16 scales beside n_values int8 or int4 numbers, one per block; 0 for a float dtype."""
    return -(-n_values // QUANT_BLOCK) * QUANT_SCALE_BYTES if dtype in QUANTISED else 0


def stored_bytes(n_values: int, dtype: str) -> int:
    """Bytes n_values numbers take in `dtype`, with their block scales when quantised: one rule for
    weights and for the KV cache."""
    return _bytes(n_values, dtype) + block_scale_bytes(n_values, dtype)


def scale_bytes(cfg: ModelConfig, dtype: str = "fp16") -> int:
    """Bytes of the per-block fp16 scales stored beside int8 or int4 weights; 0 for a float dtype."""
    return block_scale_bytes(total_params(cfg), dtype)


def stored_weight_bytes(cfg: ModelConfig, dtype: str = "fp16") -> int:
    """Bytes a checkpoint in `dtype` needs: the weights, plus the block scales when quantised."""
    return stored_bytes(total_params(cfg), dtype)


def bits_per_weight(dtype: str) -> float:
    """Bits per weight in `dtype`, counting a quantised block's scale."""
    bits = 8 * pick(BYTES_PER_PARAM, dtype, "dtype", "数据类型")
    return bits + 8 * QUANT_SCALE_BYTES / QUANT_BLOCK if dtype in QUANTISED else bits


# Full fine-tuning with Adam in mixed precision, per parameter: fp16 weights (2) and gradients (2),
# an fp32 master copy (4), and Adam's two fp32 moments (8). Activations come on top and are not counted.
FINETUNE_BYTES_PER_PARAM = 2 + 2 + 4 + 8


def finetune_bytes(cfg: ModelConfig) -> int:
    """Weights, gradients and Adam states for full fine-tuning in mixed precision (no activations)."""
    return FINETUNE_BYTES_PER_PARAM * total_params(cfg)


def kv_bytes_per_token(cfg: ModelConfig, dtype: str = "fp16") -> int:
    """Cache bytes one token costs: K and V, in every layer, for every KV head. Quantised, each head's
    vector of head_dim numbers is stored in blocks with their fp16 scales, as weights are."""
    return 2 * cfg.n_layer * cfg.n_kv_head * stored_bytes(cfg.d_head, dtype)


def cached_tokens(cfg: ModelConfig, n_ctx: int) -> int:
    """Tokens whose K and V the cache holds after n_ctx: all of them, or the last `window` with a sliding window."""
    return n_ctx if cfg.window is None else min(n_ctx, cfg.window)


def kv_cache_bytes(cfg: ModelConfig, n_ctx: int, batch: int = 1, dtype: str = "fp16") -> int:
    """Cache bytes for `batch` sequences of `n_ctx` tokens; a sliding window's rolling cache stops at the window."""
    return batch * cached_tokens(cfg, n_ctx) * kv_bytes_per_token(cfg, dtype)


def swiglu_widths(d_model: int, multiple_of: int, multiplier: float | None = None) -> tuple[int, int, int]:
    """Llama's FFN width, step by step: int(2/3 · 4·d_model), times the optional multiplier, rounded up."""
    two_thirds = int(2 * (4 * d_model) / 3)  # keeps gate + up + down near the parameters of a 4·d MLP
    scaled = two_thirds if multiplier is None else int(multiplier * two_thirds)
    return two_thirds, scaled, multiple_of * -(-scaled // multiple_of)


def swiglu_hidden(d_model: int, multiple_of: int, multiplier: float | None = None) -> int:
    """Llama's FFN width: 11008 for Llama 2 7B (256), 14336 for Llama 3 8B (1.3, 1024)."""
    return swiglu_widths(d_model, multiple_of, multiplier)[2]


def _bytes(n_values: int, dtype: str) -> int:
    half_bytes = int(pick(BYTES_PER_PARAM, dtype, "dtype", "数据类型") * 2)  # int4 is half a byte
    return -(-n_values * half_bytes // 2)


def report(cfg: ModelConfig, n_ctx: int = 4096, published: int | None = None) -> dict:
    """Everything the sizing screens show about one config, as plain numbers."""
    return {
        "config": {"d_model": cfg.d_model, "n_layer": cfg.n_layer, "n_head": cfg.n_head,
                   "n_kv_head": cfg.n_kv_head, "head_dim": cfg.d_head, "d_ff": cfg.d_ff,
                   "n_vocab": cfg.n_vocab, "tied_embeddings": cfg.tied_embeddings},
        "items": param_count(cfg),
        "per_layer": sum(layer_params(cfg).values()),
        "total": total_params(cfg),
        "published": published,
        "shares": group_shares(cfg),
        "weight_bytes": {dtype: weight_bytes(cfg, dtype) for dtype in ("fp32", "fp16", "int8", "int4")},
        "stored_bytes": {dtype: stored_weight_bytes(cfg, dtype) for dtype in ("fp32", "fp16", "int8", "int4")},
        "finetune_bytes": finetune_bytes(cfg),
        "kv_cache": {"dtype": "fp16", "per_token": kv_bytes_per_token(cfg), "context": n_ctx,
                     "per_sequence": kv_cache_bytes(cfg, n_ctx)},
    }


def causal_pairs(n_ctx: int, window: int | None = None) -> int:
    """Scores one head computes for a prompt under the causal mask: token i scores itself and the i before it,
    or with a sliding window at most `window` keys: the sum over i of min(i, window)."""
    if window is None or n_ctx <= window:
        return n_ctx * (n_ctx + 1) // 2
    return window * (window + 1) // 2 + (n_ctx - window) * window


def prefill_flops(cfg: ModelConfig, n_ctx: int) -> tuple[int, int]:
    """Rough FLOPs to read a prompt of n_ctx tokens: (weight matmuls, attention scores and sums).

    Weight matmuls cost 2 FLOPs per weight per token (the embedding is a lookup and the norms are
    left out), so they grow linearly with the prompt. Attention counts what a causal kernel computes:
    for each of the n(n+1)/2 (query, key) pairs of every head in every layer, q.k and the weighted
    sum over v cost 2 FLOPs per dim each. That grows with the square of the prompt, or, past a sliding
    window, linearly again.
    """
    return 2 * matmul_params(cfg) * n_ctx, 4 * causal_pairs(n_ctx, cfg.window) * cfg.n_head * cfg.d_head * cfg.n_layer


def matmul_params(cfg: ModelConfig) -> int:
    """The weights a token is multiplied by: every matrix but the embedding (a lookup), no norm."""
    items = param_count(cfg)
    return total_params(cfg) - items["embedding"] - sum(v for k, v in items.items() if k.startswith("norm/"))


# FLOPs per token, the rules of thumb: a forward pass multiplies each weight once and adds once, 2·P; training
# adds a backward pass that costs twice the forward (gradients for the activations and for the weights), 6·P.
FORWARD_FLOPS_PER_PARAM = 2
TRAIN_FLOPS_PER_PARAM = 6


def decode_weight_bytes(cfg: ModelConfig, dtype: str = "fp16", batch: int = 1) -> int:
    """Weight bytes one decode step reads (with their scales): every matrix once for the whole batch, but of an
    untied embedding only the rows of the tokens fed in. A tied matrix is read whole: it is the output head."""
    unread = 0 if cfg.tied_embeddings else (cfg.n_vocab - min(batch, cfg.n_vocab)) * cfg.d_model
    return stored_bytes(total_params(cfg) - unread, dtype)


def decode_bytes(cfg: ModelConfig, n_ctx: int, dtype: str = "fp16", cache_dtype: str = "fp16") -> int:
    """Bytes one new token reads after n_ctx tokens: the weights it uses (with their scales) and the KV cache."""
    return decode_weight_bytes(cfg, dtype) + kv_cache_bytes(cfg, n_ctx, 1, cache_dtype)


def decode_tokens_per_second(cfg: ModelConfig, bandwidth: float, dtype: str = "fp16", n_ctx: int = 0,
                             cache_dtype: str = "fp16") -> float:
    """An upper bound on generation speed for one sequence: each new token reads the weights once,
    and the KV cache of the n_ctx tokens before it."""
    return bandwidth / decode_bytes(cfg, n_ctx, dtype, cache_dtype)


def decode_token_flops(cfg: ModelConfig, n_ctx: int) -> int:
    """FLOPs of one new token after n_ctx: 2 per matrix weight, and q.k and the sum over v for each key it sees."""
    keys = n_ctx + 1 if cfg.window is None else min(n_ctx + 1, cfg.window)
    return 2 * matmul_params(cfg) + 4 * keys * cfg.n_head * cfg.d_head * cfg.n_layer


def decode_step(cfg: ModelConfig, n_ctx: int, batch: int, bandwidth: float, flops: float,
                dtype: str = "fp16", cache_dtype: str = "fp16") -> tuple[float, bool]:
    """Seconds for one decode step of `batch` sequences of n_ctx tokens, and whether compute (not memory) binds.

    The step reads the weights once for the whole batch and each sequence's own cache; it computes every
    sequence's token. Whichever takes longer, at `bandwidth` bytes/s and `flops` FLOP/s, sets the time."""
    read = decode_weight_bytes(cfg, dtype, batch) + kv_cache_bytes(cfg, n_ctx, batch, cache_dtype)
    memory, compute = read / bandwidth, batch * decode_token_flops(cfg, n_ctx) / flops
    return max(memory, compute), compute > memory


def compute_binds_from(cfg: ModelConfig, n_ctx: int, bandwidth: float, flops: float, dtype: str = "fp16",
                       cache_dtype: str = "fp16") -> int | None:
    """The smallest batch at which compute binds a decode step, or None when memory binds at every batch.

    Each added sequence brings its cache's bytes and its token's FLOPs; the shared weights only delay the turn.
    If a sequence's own FLOPs take less time than its own cache's bytes, compute never catches up."""
    def binds(batch):
        return decode_step(cfg, n_ctx, batch, bandwidth, flops, dtype, cache_dtype)[1]

    lo, hi = 1, 2**40  # far past any batch: if compute does not bind there, it never does
    if not binds(hi):
        return None
    while lo < hi:  # the verdict turns once, from memory to compute, as the batch grows
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if binds(mid) else (mid + 1, hi)
    return lo
