"""A real Llama from a GGUF file: its sizes and hyperparameters from the metadata, its tensors as the flat
float32 weight dict llama.forward reads, and the refusals that come before any tensor is read (another
architecture, a model too big for this machine's memory).

llama.cpp's names and layout, and llama.forward's (engine/llama.py):
    token_embd.weight  [V, d]  -> embed          output_norm.weight [d] -> norm_f
    output.weight      [V, d]  -> head [d, V], its transpose; without it (tied embeddings) embed's transpose
    blk.i.attn_norm    [d]     -> i.norm1        blk.i.ffn_norm [d]    -> i.norm2
    blk.i.attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down [out, in]
                               -> i.wq, i.wk, i.wv, i.wo, i.wg, i.wu, i.wd [in, out], each transposed
GGUF stores a matrix as rows of its outputs (ne = [in, out]); llama.forward multiplies x @ W, so each is
transposed into a C-ordered copy, which numpy's products read faster than a transposed view when x has few
rows (bench/README.md). The tied head stays a view of the embedding: a copy would cost 4 V d bytes more
(113 MB for SmolLM2) and its product was no faster.

llama.cpp's converter reorders the rows of attn_q and attn_k so that RoPE turns the pairs (2i, 2i+1), which
is what llama.rope turns (Hugging Face's checkpoints turn (i, i + hd/2)): the GGUF weights run as they are.
"""

import os
from pathlib import Path

import numpy as np

from . import llama
from .errors import FileError, NoModel, SizeError
from .files import state_dir
from .gguf_file import GGUFFile
from .records import not_compared, record
from .sizing import ModelConfig, total_params

ENV = "XF_TOUR_MODEL"  # a GGUF file to use instead of the fetched one
FOLDER = "models"  # in the state folder
NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"  # the file `xf-tour model get` fetches (tui/model_file.py)
ARCH = "llama"
GLOBAL = {"token_embd.weight": "embed", "output_norm.weight": "norm_f"}
PER_LAYER = {"attn_norm": "norm1", "attn_q": "wq", "attn_k": "wk", "attn_v": "wv", "attn_output": "wo",
             "ffn_norm": "norm2", "ffn_gate": "wg", "ffn_up": "wu", "ffn_down": "wd"}


@record
class RealLlama:
    """A Llama read from a GGUF file: its sizes (cfg), RoPE's base, RMSNorm's eps, the context it was trained
    for, and (once loaded) its float32 weights in llama.forward's names."""

    cfg: ModelConfig
    rope_base: float = 10000.0
    rms_eps: float = 1e-5
    context: int = 2048
    rope_factors: tuple[float, ...] | None = None  # [head_dim/2], each θ_i's divisor (Llama 3.1's rope_freqs)
    weights: dict | None = not_compared(None)
    file: GGUFFile | None = not_compared(None)

    def forward(self, ids, *, cache=None, keep=None):  # ids [..., T] -> logits [..., T, V] float32
        """llama.forward with this model's heads, RoPE base and factors, and eps; cache and keep as there."""
        return llama.forward(self.weights, ids, self.cfg.n_head, self.cfg.n_kv_head, base=self.rope_base,
                             eps=self.rms_eps, cache=cache, keep=keep, factors=self.rope_factors)

    @property
    def tokens(self):
        """The vocabulary's pieces, by id (tokenizer.ggml.tokens)."""
        return self.file.metadata["tokenizer.ggml.tokens"]


def default_path(root: Path | None = None) -> Path:
    """Where `model get` puts the model: models/NAME in the state folder (or in `root`)."""
    return (state_dir() if root is None else Path(root)) / FOLDER / NAME


def find_model(given=None, environ=os.environ, root: Path | None = None) -> Path:
    """The model file to run: `given` (--model), else XF_TOUR_MODEL, else the state folder's copy. NoModel
    when the file named is not there, or when nothing names one and `model get` has not been run."""
    for path, where_en, where_zh in ((given, "--model", "--model"), (environ.get(ENV) or None, ENV, ENV)):
        if path is not None:
            if not Path(path).is_file():
                raise NoModel(f"{where_en} names {path}, which is not a file", f"{where_zh} 指向的 {path} 不是文件")
            return Path(path)
    path = default_path(root)
    if not path.is_file():
        raise NoModel(f"no model yet: run `xf-tour model get` (98 MB, once), or give --model FILE.gguf or "
                      f"set {ENV}", f"还没有模型：请运行 `xf-tour model get`（98 MB，只需一次），"
                      f"或用 --model FILE.gguf，或设置 {ENV}")
    return path


def has_model() -> bool:
    """Whether find_model finds a file: without one, the real model's views and steps are left out of what runs
    them all (print, check-lessons), which say so."""
    try:
        find_model()
    except NoModel:
        return False
    return True


def read_config(f: GGUFFile) -> RealLlama:
    """The model's sizes and hyperparameters, from the metadata; FileError for another architecture, a
    missing size, or a RoPE scaling llama.forward does not do (rope_factors)."""
    meta = f.metadata
    arch = meta.get("general.architecture")
    if arch != ARCH:
        raise FileError(f"{f.path} holds a {arch or 'model of no named'} architecture; the tour runs only "
                        f"{ARCH} models (Llama 2 and 3, TinyLlama, SmolLM and the like)",
                        f"{f.path} 里是 {arch or '未命名'} 架构的模型；导览只能运行 {ARCH} 架构的模型"
                        "（Llama 2 和 3、TinyLlama、SmolLM 等）")

    def need(key, default=None, kind=int):
        value = meta.get(f"{ARCH}.{key}", default)
        if value is None:
            raise FileError(f"{f.path} has no {ARCH}.{key} in its metadata", f"{f.path} 的元数据里没有 {ARCH}.{key}")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FileError(f"{f.path}: {ARCH}.{key} is {str(value)[:40]!r}, not a number",
                            f"{f.path}：{ARCH}.{key} 是 {str(value)[:40]!r}，不是一个数")
        return kind(value)

    d, n_head, embed = need("embedding_length"), need("attention.head_count"), f.tensors.get("token_embd.weight")
    if embed is None or not n_head:
        raise FileError(f"{f.path} has no tensor token_embd.weight, or no heads",
                        f"{f.path} 里没有张量 token_embd.weight，或者没有注意力头")
    head_dim = need("attention.key_length", d // n_head)
    turned = need("rope.dimension_count", head_dim)
    if turned != head_dim:  # RoPE on part of each head: not a Llama's
        raise FileError(f"{f.path} turns {turned} of each head's {head_dim} numbers with RoPE; the tour's forward "
                        "turns them all", f"{f.path} 的 RoPE 只转每个头 {head_dim} 个数中的 {turned} 个；"
                        "导览的前向计算会转全部")
    sizes = dict(d_model=d, n_layer=need("block_count"), n_head=n_head,
                 n_kv_head=need("attention.head_count_kv", n_head), d_ff=need("feed_forward_length"),
                 head_dim=None if head_dim * n_head == d else head_dim,
                 n_vocab=embed.shape[0], tied_embeddings="output.weight" not in f.tensors,
                 name=str(meta.get("general.name", os.path.basename(f.path))))
    try:
        cfg = ModelConfig(**sizes)
    except ValueError as err:  # ModelConfig's own refusal (a ParamError), said of the file
        raise FileError(f"{f.path}: {err}", f"{f.path}：{err}") from None
    return RealLlama(cfg, need("rope.freq_base", 10000.0, float), need("attention.layer_norm_rms_epsilon", 1e-5, float),
                     need("context_length", 2048), rope_factors(f, head_dim), file=f)


def rope_factors(f: GGUFFile, head_dim: int) -> tuple[float, ...] | None:
    """What divides each pair's RoPE frequency θ_i, [head_dim/2], or None when nothing does; FileError for a
    scaling llama.forward does not do (YaRN, LongRoPE).

    Two scalings reach a Llama GGUF, and llama.cpp runs both as θ_i -> θ_i / factor (ggml's rope_yarn with its
    extrapolation off): Llama 3.1 and 3.2 ship a tensor rope_freqs.weight, one factor per pair, which
    convert_hf_to_gguf.py computes as Hugging Face's "llama3" rope_type does (1 for the fast pairs, whose
    wavelength is under 2,048 positions; `factor`, 32 or 8, for the slow ones, past 8,192; a smooth blend
    between); a linear scaling (older long-context fine-tunes) divides every θ_i by rope.scaling.factor, which
    is dividing the positions by it. llama.cpp reads that factor whenever the type is linear or not given."""
    meta, key = f.metadata, f"{ARCH}.rope.scaling"
    kind = meta.get(f"{key}.type", "linear")
    if kind not in ("none", "linear"):
        raise FileError(f"{f.path} scales RoPE by {kind}, which the tour's forward does not do (it does Llama 3.1's "
                        "rope_freqs and linear scaling)", f"{f.path} 用 {kind} 方式缩放 RoPE，导览的前向计算不支持"
                        "（支持 Llama 3.1 的 rope_freqs 和线性缩放）")
    linear = 1.0
    if kind == "linear":  # 0 or absent: no scaling, as llama.cpp reads it
        linear = float(meta.get(f"{key}.factor") or meta.get(f"{ARCH}.rope.scale_linear") or 1.0)
    freqs = f.tensors.get("rope_freqs.weight")
    if freqs is not None and freqs.shape != (head_dim // 2,):
        raise FileError(f"{f.path}: tensor rope_freqs.weight is {list(freqs.shape)}; RoPE turns {head_dim // 2} "
                        "pairs", f"{f.path}：张量 rope_freqs.weight 的形状是 {list(freqs.shape)}；RoPE 转 "
                        f"{head_dim // 2} 对")
    if freqs is None and linear == 1.0:
        return None
    factors = f.array("rope_freqs.weight") if freqs is not None else np.ones(head_dim // 2, np.float32)
    return tuple(float(x) * linear for x in factors)


def expected_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor a Llama GGUF of these sizes holds, by GGUF name, with its numpy shape."""
    d, f, q, kv = cfg.d_model, cfg.d_ff, cfg.n_head * cfg.d_head, cfg.n_kv_head * cfg.d_head
    shapes = {"token_embd.weight": (cfg.n_vocab, d), "output_norm.weight": (d,)}
    if not cfg.tied_embeddings:
        shapes["output.weight"] = (cfg.n_vocab, d)
    layer = {"attn_norm": (d,), "attn_q": (q, d), "attn_k": (kv, d), "attn_v": (kv, d), "attn_output": (d, q),
             "ffn_norm": (d,), "ffn_gate": (f, d), "ffn_up": (f, d), "ffn_down": (d, f)}
    for i in range(cfg.n_layer):
        shapes.update({f"blk.{i}.{name}.weight": shape for name, shape in layer.items()})
    return shapes


def check_tensors(f: GGUFFile, cfg: ModelConfig) -> None:
    """FileError naming the first tensor missing or of another shape than the metadata's sizes make it."""
    for name, shape in expected_shapes(cfg).items():
        t = f.tensors.get(name)
        if t is None or t.shape != shape:
            found = "is missing" if t is None else f"is {list(t.shape)}"
            raise FileError(f"{f.path}: tensor {name} {found}; the metadata's sizes make it {list(shape)}",
                            f"{f.path}：张量 {name} {'缺失' if t is None else f'形状是 {list(t.shape)}'}；"
                            f"按元数据的尺寸应为 {list(shape)}")


def float32_bytes(f: GGUFFile) -> int:
    """The bytes the model's weights take dequantized to float32 (a tied head is a view: nothing more)."""
    return 4 * sum(t.size for t in f.tensors.values())


def available_bytes() -> int | None:
    """The memory this machine can give a new process without swapping: MemAvailable in /proc/meminfo
    (Linux), else the free pages sysconf reports; None where neither says."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_memory(f: GGUFFile, available: int | None = None) -> None:
    """SizeError, with both figures, when the float32 weights would take more than the memory available
    (`available` bytes, or what available_bytes() finds)."""
    need, have = float32_bytes(f), available_bytes() if available is None else available
    if have is not None and need > have:
        raise SizeError(f"{f.path} takes {need / 2**20:,.1f} MiB as float32, and this machine has "
                        f"{have / 2**20:,.1f} MiB available; choose a smaller model",
                        f"{f.path} 转成 float32 要占 {need / 2**20:,.1f} MiB，而本机只有 {have / 2**20:,.1f} MiB "
                        "可用；请换一个小一些的模型")


def our_name(name: str) -> str:
    """llama.forward's name for a GGUF tensor's: blk.3.attn_q.weight -> 3.wq; output.weight -> output (the head's
    transpose)."""
    if name.startswith("blk."):
        i, kind = name.split(".")[1:3]
        return f"{i}.{PER_LAYER[kind]}"
    return GLOBAL.get(name, "output")


def transposed(name: str, shape) -> bool:
    """Whether llama.forward reads this GGUF tensor transposed, as a C-ordered copy: a layer's matrices."""
    return len(shape) == 2 and name.startswith("blk.")


def tensors(f: GGUFFile, cfg: ModelConfig):  # -> (name, float32 array) for each tensor, in expected_shapes' order
    """Each tensor in llama.forward's names, float32, one at a time: a layer's matrices transposed to [in, out]
    C-ordered copies; an untied head as the file holds it, "output" [V, d], whose transpose is the head."""
    for name, shape in expected_shapes(cfg).items():
        a = f.array(name)
        yield our_name(name), np.ascontiguousarray(a.T) if transposed(name, shape) else a  # [out, in] -> [in, out]


def float32_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """The shape of each array tensors() yields, by its name, in its order."""
    return {our_name(name): shape[::-1] if transposed(name, shape) else shape
            for name, shape in expected_shapes(cfg).items()}


def with_head(w: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The weights with their head [d, V]: the transpose, a view, of "output" (which goes), or of the embedding when
    the two are tied."""
    w["head"] = w.pop("output", w["embed"]).T
    return w


def weights(f: GGUFFile, cfg: ModelConfig) -> dict[str, np.ndarray]:
    """The tensors in llama.forward's names, float32, matrices transposed to [in, out]; the head [d, V] a view, the
    transpose of the file's output matrix or, tied, of the embedding."""
    return with_head(dict(tensors(f, cfg)))


def load(path, available: int | None = None, read=weights) -> RealLlama:
    """The model in a GGUF file, ready to run: read_config's refusals, then check_tensors' and check_memory's,
    all before a tensor is read; then read(f, cfg) gives its weights (weights(): dequantized here;
    engine/weights_cache.py's: mapped from a float32 copy tours share). The file is closed after: its metadata and
    tensor infos stay readable."""
    f = GGUFFile(path)
    model = read_config(f)
    check_tensors(f, model.cfg)
    check_memory(f, available)
    w = read(f, model.cfg)
    f.close()  # every tensor is copied out: the metadata stays, the file's pages go
    return RealLlama(model.cfg, model.rope_base, model.rms_eps, model.context, model.rope_factors, w, f)


def param_counts(f: GGUFFile) -> dict[str, int]:
    """Each tensor's parameter count, by GGUF name, in the file's order."""
    return {name: t.size for name, t in f.tensors.items()}


def formula_total(model: RealLlama) -> int:
    """The parameter count sizing's formula gives for the model's sizes (the params lesson's)."""
    return total_params(model.cfg)
