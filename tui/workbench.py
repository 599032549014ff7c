"""The sizing workbench's logic, with no UI: fields as typed, checked one by one, and what they size.

Every field keeps the text the learner typed. Each change re-checks all fields; when all are valid
the outputs are recomputed, otherwise the last valid outputs stay, marked stale, and each bad field
carries a message in both languages saying what is allowed. Every count is a Python int.
"""

from dataclasses import dataclass, field

from engine import sizing
from engine.errors import EngineError
from engine.records import record
from engine.views import Param, Tr

DTYPES = tuple(sizing.BYTES_PER_PARAM)
CHART_CONTEXTS = (1024, 4096, 16384, 32768, 65536, 131072)


@record
class Field:
    name: str
    label: Tr
    param: Param | None  # None for text-like fields checked by hand (preset, dtypes, tied)
    optional: bool = False


def _int(name, en, zh, lo=1, hi=sizing.MAX_DIM, optional=False):
    return Field(name, Tr(en, zh), Param(name, "int", None, Tr(en, zh), lo, hi), optional)


FIELDS = (
    Field("preset", Tr("preset", "预设"), None),
    _int("layers", "layers", "层数"),
    _int("d_model", "d_model", "隐藏维度"),
    _int("heads", "heads", "查询头数"),
    _int("kv_heads", "KV heads", "键值头数"),
    _int("head_dim", "head dim", "每头维度", optional=True),
    _int("d_ff", "d_ff", "前馈宽度"),
    Field("multiplier", Tr("d_ff mult", "前馈系数"),
          Param("multiplier", "float", None, Tr("", ""), 0.01, 100.0), optional=True),
    _int("multiple_of", "round to", "取整倍数", optional=True),
    _int("vocab", "vocab", "词表大小"),
    Field("tied", Tr("tied emb", "共享嵌入"), Param("tied", "bool", None, Tr("", ""))),
    _int("context", "context", "上下文", hi=sizing.MAX_CONTEXT),
    _int("batch", "batch", "批大小", hi=1_000_000),
    Field("weights", Tr("weights", "权重精度"), Param("weights", "choice", None, Tr("", ""), choices=DTYPES)),
    Field("cache", Tr("KV cache", "缓存精度"), Param("cache", "choice", None, Tr("", ""), choices=DTYPES)),
    Field("budget", Tr("GPU GiB", "显存 GiB"),
          Param("budget", "float", None, Tr("", ""), 0.01, 1e6), optional=True),
)


def preset_fields(name: str) -> dict[str, str]:
    """The model fields of a preset, as the text the workbench shows."""
    cfg = sizing.preset(name)
    return {"preset": name, "layers": str(cfg.n_layer), "d_model": str(cfg.d_model), "heads": str(cfg.n_head),
            "kv_heads": str(cfg.n_kv_head), "head_dim": "" if cfg.head_dim is None else str(cfg.head_dim),
            "d_ff": str(cfg.d_ff), "multiplier": "", "multiple_of": "", "vocab": str(cfg.n_vocab),
            "tied": "on" if cfg.tied_embeddings else "off"}


@dataclass
class Sizing:
    """Everything the outputs show, for one valid set of fields."""

    cfg: sizing.ModelConfig
    report: dict
    context: int
    batch: int
    weights_dtype: str
    cache_dtype: str
    budget: float | None
    published: int | None
    same: bool = True  # the preset's own model, unchanged
    preset: str = ""   # the preset these outputs were computed from

    @property
    def weight_bytes(self) -> int:  # int8 and int4 with one fp16 scale per block of 32 weights
        return sizing.stored_weight_bytes(self.cfg, self.weights_dtype)

    @property
    def kv_per_token(self) -> int:
        return sizing.kv_bytes_per_token(self.cfg, self.cache_dtype)

    @property
    def kv_bytes(self) -> int:
        return sizing.kv_cache_bytes(self.cfg, self.context, self.batch, self.cache_dtype)

    @property
    def inference_bytes(self) -> int:
        return self.weight_bytes + self.kv_bytes

    def chart(self) -> list[tuple[int, int, int, int]]:
        """KV cache at several context lengths: (context, MHA, this model, MQA), at this batch and dtype."""
        mha, mqa = self.cfg.with_(n_kv_head=self.cfg.n_head), self.cfg.with_(n_kv_head=1)
        return [(n, *(sizing.kv_cache_bytes(c, n, self.batch, self.cache_dtype) for c in (mha, self.cfg, mqa)))
                for n in CHART_CONTEXTS]


@dataclass
class Workbench:
    """The fields as typed, their problems, and the last valid sizing."""

    values: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)  # field name -> Tr
    sizing: Sizing | None = None
    stale: bool = False
    pinned: Sizing | None = None

    @classmethod
    def start(cls, preset: str = "llama2-7b", **overrides) -> "Workbench":
        values = {"context": "4096", "batch": "1", "weights": "fp16", "cache": "fp16", "budget": "24"}
        values.update(preset_fields(preset))
        values.update({k: str(v) for k, v in overrides.items() if v is not None})
        bench = cls(values)
        bench.recompute()
        return bench

    def set(self, name: str, text: str) -> None:
        """A field changed; a valid new preset name fills in the model fields."""
        self.values[name] = text
        if name == "preset" and text.strip() in sizing.PRESETS:
            self.values.update(preset_fields(text.strip()))
        self.recompute()

    def derived_d_ff(self) -> bool:
        """Whether d_ff comes from the SwiGLU rule (multiple_of is filled) rather than from the field."""
        return bool(self.values.get("multiple_of", "").strip())

    def recompute(self) -> None:
        errors, typed = {}, {}
        for f in FIELDS:
            text = self.values.get(f.name, "").strip()
            if f.name == "preset":
                if text and text not in sizing.PRESETS:
                    names = ", ".join(sizing.PRESETS)
                    errors["preset"] = Tr(f"unknown preset; choose one of: {names}", f"没有这个预设；可选：{names}")
                typed["preset"] = text
                continue
            if f.name == "d_ff" and self.derived_d_ff():
                continue
            if not text:
                if f.optional:
                    typed[f.name] = None
                    continue
                errors[f.name] = Tr(f"{f.label.en}: needed", f"{f.label.zh}：不能为空")
                continue
            try:
                typed[f.name] = f.param.parse(text)
            except EngineError as err:
                errors[f.name] = Tr(f"{f.label.en}: {_allowed(err.en)}", f"{f.label.zh}：{_allowed(err.zh)}")
        if not errors:
            self._size(typed, errors)
        self.errors = errors
        self.stale = bool(errors) and self.sizing is not None

    def _size(self, typed, errors) -> None:
        if self.derived_d_ff():
            try:
                typed["d_ff"] = sizing.swiglu_hidden(typed["d_model"], typed["multiple_of"], typed["multiplier"])
            except (ValueError, OverflowError):
                typed["d_ff"] = 0
            self.values["d_ff"] = str(typed["d_ff"])
            if not 1 <= typed["d_ff"] <= sizing.MAX_DIM:
                errors["multiplier"] = Tr("the rule gives a d_ff outside 1 to 1,048,576",
                                          "按此规则得到的前馈宽度不在 1 到 1,048,576 之间")
                return
        try:
            cfg = sizing.ModelConfig(d_model=typed["d_model"], n_layer=typed["layers"], n_head=typed["heads"],
                                     n_kv_head=typed["kv_heads"], head_dim=typed["head_dim"], d_ff=typed["d_ff"],
                                     n_vocab=typed["vocab"], tied_embeddings=typed["tied"],
                                     name=_name(typed["preset"]), window=_window(typed["preset"]))
        except EngineError as err:
            which = "kv_heads" if "kv_heads" in err.en else "heads"
            errors[which] = Tr(err.en, err.zh)
            return
        preset = typed["preset"]
        same = preset in sizing.PRESETS and cfg == sizing.PRESETS[preset]
        self.sizing = Sizing(cfg, sizing.report(cfg, typed["context"]), typed["context"], typed["batch"],
                             typed["weights"], typed["cache"], typed["budget"],
                             sizing.PUBLISHED.get(preset) if same else None, same, preset)

    def pin(self) -> bool:
        """Pin the current sizing to compare against, or unpin; True when now pinned."""
        self.pinned = None if self.pinned is not None else self.sizing
        return self.pinned is not None


def _window(preset: str) -> int | None:
    """The sliding window of the preset a sizing starts from (Mistral 7B's 4,096), kept whatever sizes are typed
    over it: the window is how the model attends, not a size; None for a preset without one."""
    return sizing.PRESETS[preset].window if preset in sizing.PRESETS else None


def _name(preset: str) -> str:
    return sizing.PRESETS[preset].name if preset in sizing.PRESETS else ""


def _allowed(message: str) -> str:
    """An engine message without its echo of the field name, which the field label already gives."""
    head, _, rest = message.partition(" ")
    return rest if rest.startswith(("must", "必须")) else message
