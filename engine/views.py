"""Views: what each screen of the tour shows, computed by the engine and returned as plain tables.

A view has an id, typed parameters with defaults and limits, and a compute function that returns a
`Result`: tables of raw numbers plus the format each column is shown in. Labels carry both
languages (`Tr`). Nothing here prints; `tui/` renders a Result for a terminal, a pipe or JSON.
Table cells hold ASCII symbols and CJK text only, so no cell changes width with the terminal's
handling of East Asian ambiguous-width characters.
"""

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from . import demos, llama, ops, positions, sizing
from .errors import ParamError, check_bytes, pick


@dataclass(frozen=True)
class Tr:
    """One text in both languages."""

    en: str
    zh: str

    def __call__(self, lang: str) -> str:
        return self.zh if lang == "zh" else self.en


# --- parameters -------------------------------------------------------------------------

_TRUE, _FALSE = ("on", "true", "yes", "1"), ("off", "false", "no", "0")


@dataclass(frozen=True)
class Param:
    """One setting of a view: its type, default and the values it allows."""

    name: str
    kind: str  # "int", "float", "bool", "choice" or "sentence" (words of the tiny grammar)
    default: Any
    help: Tr
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()
    even: bool = False
    optional: bool = False  # None is allowed and means "take it from the preset"

    def allowed(self) -> Tr:
        """What values this parameter takes, in words."""
        if self.kind == "bool":
            return Tr("on or off", "on 或 off")
        if self.kind == "choice":
            names = ", ".join(self.choices)
            return Tr(f"one of: {names}", f"以下之一：{names}")
        if self.kind == "sentence":
            return Tr("up to 12 words of the tiny grammar's vocabulary (xf-tour print tiny-vocab)",
                      "不超过 12 个词，且都在小语法的词表里（xf-tour print tiny-vocab）")
        what = Tr("an even whole number", "偶数") if self.even else (
            Tr("a whole number", "整数") if self.kind == "int" else Tr("a number", "数"))
        lo, hi = (f"{int(v):,}" if float(v).is_integer() else f"{v:g}" for v in (self.lo, self.hi))
        return Tr(f"{what.en} from {lo} to {hi}", f"{lo} 到 {hi} 之间的{what.zh}")

    def parse(self, raw: Any) -> Any:
        """Turn a command-line or lesson value into the typed value, or raise ParamError."""
        if self.optional and raw in (None, "auto"):
            return None
        value = self._convert(raw)
        if value is None or not self._fits(value):
            allowed = self.allowed()
            raise ParamError(f"{self.name} must be {allowed.en}, got {raw!r}",
                             f"{self.name} 必须是 {allowed.zh}，收到 {raw!r}")
        return value

    def _convert(self, raw):
        if self.kind == "bool":
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            return True if text in _TRUE else False if text in _FALSE else None
        if self.kind == "choice":
            return raw if raw in self.choices else None
        if self.kind == "sentence":
            from .corpus import parse
            try:
                return " ".join(parse(str(raw)).tokens)
            except ValueError:
                return None
        return _number(raw, integer=self.kind == "int")

    def _fits(self, value) -> bool:
        if self.kind in ("bool", "choice", "sentence"):
            return True
        return self.lo <= value <= self.hi and not (self.even and value % 2)


_NUMBER = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _number(raw, integer: bool):
    """One grammar for every numeric setting: ASCII digits, an optional sign, decimals and exponent;
    an int setting takes only whole values. No commas, underscores or full-width digits."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        value = raw
    else:
        text = str(raw).strip()
        if not _NUMBER.fullmatch(text):
            return None
        value = int(text) if re.fullmatch(r"[+-]?[0-9]+", text) else float(text)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        if integer:
            return int(value) if value.is_integer() and abs(value) < 2**53 else None
    return value


def fmt_value(value) -> str:
    """A setting as the screen shows it: on/off, 10000 rather than 10000.0."""
    if value is None:
        return "auto"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# --- results ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Column:
    key: str
    label: Tr
    fmt: str = "text"  # "text", a format spec such as "+.3f" or ",", or one of: short, sig3, pct, bytes, mask


@dataclass(frozen=True)
class Table:
    key: str
    title: Tr
    columns: tuple[Column, ...]
    rows: tuple[tuple, ...]  # raw cells: str, Tr, int or float
    heat: bool = False       # numeric cells are attention weights in [0, 1]
    note: Tr | None = None


@dataclass(frozen=True)
class Fact:
    key: str
    label: Tr
    value: Any
    fmt: str = "text"


@dataclass(frozen=True)
class Result:
    view: str
    params: dict
    tables: tuple[Table, ...]
    facts: tuple[Fact, ...] = ()


@dataclass(frozen=True)
class View:
    id: str
    title: Tr
    params: tuple[Param, ...]
    compute: Callable[..., Result]
    sources: tuple[Callable, ...] = field(default=())  # the engine functions behind the tables

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        names = ", ".join(p.name for p in self.params) or "none"
        raise ParamError(f"view {self.id!r} has no parameter {name!r}; it takes: {names}",
                         f"视图 {self.id!r} 没有参数 {name!r}；可用参数：{names}")

    def resolve(self, settings: dict | None = None) -> dict:
        """Defaults overlaid with `settings`, each value checked and typed."""
        values = {p.name: p.default for p in self.params}
        for name, raw in (settings or {}).items():
            param = self.param(name)
            try:
                values[name] = param.parse(raw)
            except ParamError as err:  # say which view, since print --set may reach several
                raise ParamError(f"{err.en} (view {self.id!r})", f"{err.zh}（视图 {self.id!r}）") from None
        return values

    def run(self, settings: dict | None = None) -> Result:
        """Compute the view at these settings."""
        values = self.resolve(settings)
        return self.compute(**values)


# --- helpers for building tables --------------------------------------------------------

def _col(key, en, zh, fmt="text"):
    return Column(key, Tr(en, zh), fmt)


def _matrix_table(key, title, weights, labels, fmt=".3f", heat=True, row_title=None):
    cols = (Column("token", row_title or Tr("query", "查询")),) + tuple(
        Column(f"k{j}", lab if isinstance(lab, Tr) else Tr(lab, lab), fmt) for j, lab in enumerate(labels))
    rows = tuple((lab,) + tuple(float(v) for v in row) for lab, row in zip(labels, weights))
    return Table(key, title, cols, rows, heat=heat)


def _token_labels(n):
    return tuple(Tr(f"tok {i}", f"词 {i}") for i in range(n))


def _stats_table(raw: demos.WeightStats, scaled: demos.WeightStats, causal=False):
    note = Tr("with the causal mask, token 0 sees only itself; its row is left out",
              "加了因果掩码，词 0 只能看到自己，这一行不计入") if causal else None
    return Table("stats", Tr("Without and with the division by sqrt(d)", "除以 sqrt(d) 前后对比"),
                 (_col("variant", "weights", "权重"), _col("max_weight", "max weight", "最大权重", ".3f"),
                  _col("mean_entropy", "mean entropy (nats)", "平均熵（奈特）", ".3f")),
                 ((Tr("q.k (unscaled)", "q.k（未缩放）"), raw.max_weight, raw.mean_entropy),
                  (Tr("q.k / sqrt(d)", "q.k / sqrt(d)"), scaled.max_weight, scaled.mean_entropy)), note=note)


def _pick(n, keep=8):
    """Indices to show of n: all when few, else the first and last keep // 2."""
    return list(range(n)) if n <= keep else list(range(keep // 2)) + list(range(n - keep // 2, n))


# --- the views --------------------------------------------------------------------------

def _mask(n):
    m = ops.causal_mask(n)
    labels = _token_labels(n)
    return Result("mask", dict(n=n), (_matrix_table(
        "mask", Tr("Causal mask added to the scores", "加到打分上的因果掩码"), m, labels, fmt="mask",
        heat=False, row_title=Tr("query", "查询")),))


def _positional(n, d, base):
    check_bytes(n * d * 8 * 3, f"a {n} x {d} position table", f"{n} x {d} 的位置编码表")
    pe = positions.sinusoidal_positions(n, d, base)
    dims, positions_shown = _pick(d), _pick(n, 16)
    cols = (_col("pos", "pos", "位置"),) + tuple(Column(f"d{j}", Tr(f"d{j}", f"d{j}"), "+.3f") for j in dims)
    rows = tuple((i,) + tuple(float(pe[i, j]) for j in dims) for i in positions_shown)
    cut = [Tr(f"{d} dims: the first four and the last four", f"{d} 维中的前四维和后四维")] if d > 8 else []
    cut += [Tr(f"{n:,} positions: the first eight and the last eight", f"{n:,} 个位置中的前八个和后八个")] if n > 16 else []
    note = Tr("showing " + "; ".join(c.en for c in cut), "只显示" + "；".join(c.zh for c in cut)) if cut else None
    pairs = _pick(d // 2)
    freq, wave = positions.frequencies(d, base), positions.wavelengths(d, base)
    wave_rows = tuple((i, f"d{2 * i}, d{2 * i + 1}", float(freq[i]), float(wave[i])) for i in pairs)
    return Result("positional", dict(n=n, d=d, base=base), (
        Table("table", Tr("Sinusoidal positions: sin on even dims, cos on odd", "正弦位置编码：偶数维 sin，奇数维 cos"),
              cols, rows, note=note),
        Table("wavelengths", Tr("How fast each dim pair turns", "每对维度转得多快"),
              (_col("pair", "pair i", "第 i 对"), _col("dims", "dims", "维度"),
               _col("theta", "theta (rad/pos)", "theta（弧度/位）", ".4g"),
               _col("wavelength", "wavelength (pos)", "波长（位置数）", "sig3")), wave_rows),
    ), (Fact("fastest", Tr("fastest wavelength", "最快的波长"), float(wave[0]), "sig3"),
        Fact("slowest", Tr("slowest wavelength", "最慢的波长"), float(wave[-1]), "sig3")))


def _rope(d, base, seed):
    rows = demos.rope_demo(d, base, seed)
    return Result("rope", dict(d=d, base=base, seed=seed), (
        Table("scores", Tr("One q and one k at three places, the same distance apart",
                           "同一个 q 和 k 放在三处，间隔相同"),
              (_col("m", "q at m", "q 在 m", "d"), _col("n", "k at n", "k 在 n", "d"), _col("gap", "m - n", "m - n", "+d"),
               _col("rope", "score with RoPE", "RoPE 得分", "+.6f"),
               _col("added", "score, positions added", "加性位置编码得分", "+.6f")),
              tuple((r.m, r.n, r.m - r.n, r.rope_score, r.additive_score) for r in rows)),
    ), (Fact("rope_spread", Tr("largest gap between RoPE scores", "RoPE 得分之间的最大差"),
             max(r.rope_score for r in rows) - min(r.rope_score for r in rows), ".1e"),))


_PERM_WORDS = {"Alice": Tr("Alice", "甲"), "owes": Tr("owes", "欠"), "Bob": Tr("Bob", "乙")}


def _permutation(positions, seed, d):  # the name shadows the module, unused here
    r = demos.permutation_demo(seed, d, positions)
    a_words, b_words = [_PERM_WORDS[t] for t in r.tokens], [_PERM_WORDS[t] for t in r.shuffled]
    title_a = Tr(" ".join(w.en for w in a_words), "".join(w.zh for w in a_words))
    title_b = Tr(" ".join(w.en for w in b_words), "".join(w.zh for w in b_words))
    return Result("permutation", dict(positions=positions, seed=seed, d=d), (
        _matrix_table("original", Tr(f"A: weights for \"{title_a.en}\"", f"A：「{title_a.zh}」的权重"),
                      r.weights, a_words),
        _matrix_table("shuffled", Tr(f"A': weights for \"{title_b.en}\"", f"A'：「{title_b.zh}」的权重"),
                      r.weights_shuffled, b_words),
        _matrix_table("permuted", Tr("P A P^T: A with rows and columns moved", "P A P^T：把 A 的行列换位"),
                      r.permuted, b_words),
    ), (Fact("max_diff", Tr("max |A' - P A P^T|", "A' 与 P A P^T 的最大差"), r.max_diff, ".1e"),
        Fact("same", Tr("the shuffle only moved the weights", "打乱只是挪动了权重"), bool(r.max_diff < 1e-9))))


def _attention(d, seed, causal):
    r = demos.attention_demo(d, seed, causal)
    labels = _token_labels(3)
    top = int(np.argmax(r.scores[-1]))  # the last token sees every token, with the mask or without
    facts = (Fact("last_top", Tr("the last token scores highest", "最后一个词元打分最高的是"), labels[top]),
             Fact("last_top_score", Tr("its score", "它的得分"), float(r.scores[-1, top]), "+.2f"),
             Fact("last_top_weight", Tr("its weight, scaled", "它的权重（缩放后）"), float(r.weights_scaled[-1, top]),
                  ".3f"))
    return Result("attention", dict(d=d, seed=seed, causal=causal), (
        _matrix_table("scores", Tr("Scores q.k, before softmax", "得分 q.k（softmax 之前）"), r.scores, labels,
                      fmt="+.2f", heat=False),
        _matrix_table("raw", Tr("Weights, softmax(q.k)", "权重 softmax(q.k)"), r.weights_raw, labels),
        _matrix_table("scaled", Tr("Weights, softmax(q.k / sqrt(d))", "权重 softmax(q.k / sqrt(d))"),
                      r.weights_scaled, labels),
        _stats_table(r.raw, r.scaled, causal),
    ), facts)


def _dsweep(draws, seed):
    rows = demos.d_sweep(draws=draws, seed=seed)
    return Result("dsweep", dict(draws=draws, seed=seed), (
        Table("sweep", Tr(f"Averaged over {draws:,} random draws of q and k", f"对 q、k 随机抽取 {draws:,} 次取平均"),
              (_col("d", "d", "d", ","), _col("raw_max", "max, unscaled", "最大权重（未缩放）", ".3f"),
               _col("raw_entropy", "entropy, unscaled", "熵（未缩放）", ".3f"),
               _col("scaled_max", "max, scaled", "最大权重（缩放后）", ".3f"),
               _col("scaled_entropy", "entropy, scaled", "熵（缩放后）", ".3f")),
              tuple((r.d, r.raw.max_weight, r.raw.mean_entropy, r.scaled.max_weight, r.scaled.mean_entropy)
                    for r in rows),
              note=Tr("entropy in nats; the most a row of 3 can have is ln 3 = 1.099",
                      "熵的单位是奈特（nat）；3 个位置的一行最多 ln 3 = 1.099")),
    ))


def _heads(heads, seed, n):
    d_model = 32
    if d_model % heads:
        divisors = ", ".join(str(h) for h in range(1, d_model + 1) if d_model % h == 0)
        raise ParamError(f"heads={heads} does not divide d_model={d_model}; choose one of: {divisors}",
                         f"heads={heads} 不能整除 d_model={d_model}；可选：{divisors}")
    r = demos.multi_head_demo(heads, seed, n, d_model)
    labels = _token_labels(n)
    per_head = tuple(
        (h, d_model // heads, s.stats.max_weight, s.stats.mean_entropy,
         Tr(f"tok {s.sharpest[0]} -> tok {s.sharpest[1]}", f"词 {s.sharpest[0]} 最关注词 {s.sharpest[1]}"))
        for h, s in enumerate(r.heads))
    tables = [Table("heads", Tr(f"{heads} heads of d_model={d_model}", f"d_model={d_model} 切成 {heads} 个头"),
                    (_col("head", "head", "头"), _col("head_dim", "head_dim", "每头维度", "d"),
                     _col("max_weight", "max weight", "最大权重", ".3f"),
                     _col("mean_entropy", "mean entropy", "平均熵", ".3f"),
                     _col("sharpest", "sharpest row", "最集中的一行")), per_head)]
    tables += [_matrix_table(f"head{h}", Tr(f"Head {h}", f"{h} 号头"), w, labels) for h, w in enumerate(r.weights)]
    return Result("heads", dict(heads=heads, seed=seed, n=n), tuple(tables), (
        Fact("spread", Tr("entropy ratio between heads, max / min", "各头熵之比（最大 / 最小）"), r.entropy_spread, ".2f"),
        Fact("layer_params", Tr("parameters of W_q, W_k, W_v, W_o", "W_q、W_k、W_v、W_o 的参数量"),
             r.layer_params, ","),
    ))


def _cat(causal):
    weights = demos.cat_demo(causal)
    rows = tuple((tok, score, float(w), ill) for tok, score, w, ill in
                 zip(demos.CAT_TOKENS, demos.CAT_SCORES, weights, demos.CAT_ILLUSTRATION))
    return Result("cat", dict(causal=causal), (
        Table("sat", Tr('Where "sat" looks in "The cat sat on"', '「The cat sat on」里「sat」看向哪里'),
              (_col("token", "token", "词元"), _col("score", "q.k score", "打分 q.k", ".1f"),
               _col("weight", "softmax", "softmax", ".3f"),
               _col("illustration", "reference's illustration", "参考资料的示意值", ".2f")), rows,
              note=Tr("the reference's weights were written by hand to illustrate; the softmax column is "
                      "computed from the scores" + ("; the causal mask hides \"on\" from \"sat\"" if causal else ""),
                      "参考资料的权重是为了说明而手写的示意值；softmax 一列由打分算出"
                      + ("；因果掩码让「sat」看不到「on」" if causal else ""))),
    ), (Fact("sum", Tr("the weights add up to", "权重之和"), float(weights.sum()), ".3f"),))


def _residual(residual, seed, layers):
    cfg = llama.TinyConfig(n_layer=layers)
    runs = {on: llama.forward(llama.PROMPT, cfg, seed, residual=on) for on in (True, False)}

    def norm(x):
        return float(np.mean(np.linalg.norm(x, axis=-1)))

    def cos(x, x0):
        return float(np.mean(np.sum(x * x0, -1) / np.linalg.norm(x, axis=-1) / np.linalg.norm(x0, axis=-1)))

    x0 = runs[True].xs[0]
    stages = [Tr("embedding", "词嵌入")] + [Tr(f"layer {i}", f"第 {i} 层") for i in range(1, layers + 1)]
    rows = tuple((stage, "[{}, {}]".format(*on.shape), norm(on), cos(on, x0), norm(off), cos(off, x0))
                 for stage, on, off in zip(stages, runs[True].xs, runs[False].xs))
    probs = runs[residual].probs
    top = np.argsort(-probs, kind="stable")[:5]
    return Result("residual", dict(residual=residual, seed=seed, layers=layers), (
        Table("stream", Tr(f'x through {layers} layers for "{" ".join(llama.PROMPT[1:])}"',
                           f'「{" ".join(llama.PROMPT[1:])}」的 x 经过 {layers} 层'),
              (_col("stage", "after", "阶段"), _col("shape", "shape", "形状"),
               _col("norm_on", "|x| add", "|x| 残差", ".2f"), _col("cos_on", "cos add", "cos 残差", "+.2f"),
               _col("norm_off", "|x| replace", "|x| 无残差", ".2f"), _col("cos_off", "cos replace", "cos 无残差", "+.2f")),
              rows, note=Tr("|x|: mean length of a token's vector; cos: its cosine with the token's embedding, "
                            "how much of the embedding is still there",
                            "|x|：每个词元向量的平均长度；cos：它与该词元嵌入的余弦，即嵌入还剩多少")),
        Table("next", Tr("Top 5 next tokens (random weights: no knowledge)", "下一个词元前 5 名（随机权重，没有知识）"),
              (_col("rank", "rank", "名次"), _col("token", "token", "词元"), _col("p", "probability", "概率", ".3f")),
              tuple((i + 1, llama.VOCAB[t], float(probs[t])) for i, t in enumerate(top))),
    ))


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
    return params_result(cfg, context, published, params_settings(cfg, preset, context))


def params_settings(cfg: sizing.ModelConfig, preset: str, context: int) -> dict:
    """The params view's settings line for a config, every field resolved."""
    return dict(preset=preset, layers=cfg.n_layer, hidden=cfg.d_model, heads=cfg.n_head, kv_heads=cfg.n_kv_head,
                head_dim=cfg.d_head, ffn=cfg.d_ff, vocab=cfg.n_vocab, tied=cfg.tied_embeddings, context=context)


def _summary_table(cfg: sizing.ModelConfig, rep: dict) -> Table:
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
    return Table("summary", Tr(f"{cfg.name or 'This model'}, counted", f"{cfg.name or '当前模型'} 逐项计数"),
                 (_col("part", "part", "部件"), _col("count", "count", "参数量", ","),
                  _col("short", "short", "约合", "short")), tuple((name, n, n) for name, n in rows))


def _shares_table(cfg: sizing.ModelConfig, rep: dict) -> Table:
    total = rep["total"]
    return Table("shares", Tr(f"Where the parameters of {cfg.name or 'this model'} live",
                              f"{cfg.name or '当前模型'} 的参数分布"),
                 (_col("group", "group", "部分"), _col("count", "count", "参数量", ","),
                  _col("share", "share", "占比", "pct")),
                 tuple((_GROUP_NAMES[g], n, n / total) for g, n in sizing.group_counts(cfg).items()))


def params_result(cfg: sizing.ModelConfig, context: int = 4096, published: int | None = None,
                  settings: dict | None = None) -> Result:
    """The sizing tables of one config: the itemised count, the shares, weight memory and the KV cache."""
    rep = sizing.report(cfg, context, published)
    total, form = rep["total"], formulas(cfg)
    rows = tuple((_PART_NAMES[k], form[k], n, n / total) for k, n in rep["items"].items())
    rows += ((Tr("total", "总计"), "", total, 1.0),)
    facts = [Fact("total", Tr("total parameters", "参数总量"), total, ","),
             Fact("total_short", Tr("in short", "约合"), total, "short"),
             Fact("per_layer", Tr("one layer with its two norms", "一层（含两个归一化）"), rep["per_layer"], ","),
             Fact("norms", Tr("all RMSNorm weights", "全部 RMSNorm 权重"),
                  sum(n for k, n in rep["items"].items() if k.startswith("norm/")), ",")]
    if published is not None:  # the preset's, even when fields were changed: the screen says which
        facts.append(Fact("published", Tr(f"published count of {cfg.name}", f"{cfg.name} 公布的参数量"),
                          published, ","))
        facts.append(Fact("matches", Tr("this count equals it", "本次计数与之相等"), total == published))
    kv = rep["kv_cache"]
    return Result("params", settings or {}, (
        _summary_table(cfg, rep),
        Table("items", Tr("Every parameter, by part", "逐项参数量"),
              (_col("part", "part", "部件"), _col("formula", "formula", "算式"), _col("count", "count", "参数量", ","),
               _col("share", "share", "占比", "pct")), rows),
        _shares_table(cfg, rep),
        Table("memory", Tr("Memory: the weights, and full fine-tuning", "内存：权重，以及全量微调"),
              (_col("dtype", "dtype", "精度"), _col("bytes", "bytes", "字节", ","), _col("size", "size", "大小", "bytes")),
              tuple((dtype, b, b) for dtype, b in rep["weight_bytes"].items())
              + ((Tr("fine-tune", "全量微调"), rep["finetune_bytes"], rep["finetune_bytes"]),),
              note=Tr(f"fine-tune: Adam in mixed precision, {sizing.FINETUNE_BYTES_PER_PARAM} bytes per parameter "
                      "(fp16 weights and gradients, fp32 master copy and two moments), activations not counted",
                      f"全量微调：混合精度 Adam，每个参数 {sizing.FINETUNE_BYTES_PER_PARAM} 字节"
                      "（fp16 权重与梯度、fp32 主副本与两个动量），不含激活值")),
        Table("kv", Tr("KV cache in fp16", "fp16 的 KV 缓存"),
              (_col("what", "what", "项目"), _col("bytes", "bytes", "字节", ","), _col("size", "size", "大小", "bytes")),
              ((Tr("per token", "每个词元"), kv["per_token"], kv["per_token"]),
               (Tr(f"one sequence of {context:,} tokens", f"一条 {context:,} 个词元的序列"),
                kv["per_sequence"], kv["per_sequence"]))),
    ), tuple(facts))


def _kvcache(preset, context, kv_heads, batch, dtype):
    cfg = config_from(preset, None, None, None, kv_heads, None, None, None, None)
    variants = [(Tr(f"MHA, kv_heads={cfg.n_head}", f"MHA，kv_heads={cfg.n_head}"), cfg.with_(n_kv_head=cfg.n_head)),
                (Tr(f"this model, kv_heads={cfg.n_kv_head}", f"本模型，kv_heads={cfg.n_kv_head}"), cfg),
                (Tr("MQA, kv_heads=1", "MQA，kv_heads=1"), cfg.with_(n_kv_head=1))]
    weights = sizing.weight_bytes(cfg, "fp16")  # the weights stay fp16; dtype is the cache's precision
    rows = tuple((name, sizing.kv_bytes_per_token(c, dtype), sizing.kv_cache_bytes(c, context, batch, dtype),
                  sizing.weight_bytes(c, "fp16") + sizing.kv_cache_bytes(c, context, batch, dtype))
                 for name, c in variants)  # each variant with its own weights: fewer KV heads, smaller W_k, W_v
    sweep = tuple((n, sizing.kv_cache_bytes(cfg, n, batch, dtype)) for n in (1024, 4096, 8192, 32768, 131072))
    return Result("kvcache", dict(preset=preset, context=context, kv_heads=cfg.n_kv_head, batch=batch, dtype=dtype), (
        Table("cache", Tr(f"KV cache of {cfg.name} at {context:,} tokens, batch {batch}",
                          f"{cfg.name} 在 {context:,} 个词元、批大小 {batch} 时的 KV 缓存"),
              (_col("variant", "attention", "注意力"), _col("per_token", "per token", "每词元", "bytes"),
               _col("cache", "cache", "缓存", "bytes"), _col("total", "weights + cache", "权重 + 缓存", "bytes")), rows),
        Table("context", Tr("The cache grows with every token", "缓存随上下文长度线性增长"),
              (_col("context", "context", "上下文", ","), _col("cache", "cache", "缓存", "bytes")), sweep),
    ), (Fact("formula", Tr("bytes per token", "每词元字节"),
             f"2 x {cfg.n_layer} x {cfg.n_kv_head} x {cfg.d_head} x {sizing.BYTES_PER_PARAM[dtype]:g}"),
        Fact("weights", Tr("weights in fp16", "fp16 权重"), weights, "bytes"),
        Fact("group", Tr("query heads per KV head", "每个键值头对应的查询头"), cfg.n_head // cfg.n_kv_head, "d"),
        Fact("model", Tr("model", "模型"), cfg.name)))


_WIDTH_RULES = (("llama2-7b", None, 256), ("llama3-8b", 1.3, 1024), ("llama2-70b", 1.3, 4096))


def _ffn(d_model, multiplier, multiple_of, seed):
    mult = multiplier or None  # 0 means no multiplier, as in Llama 2 7B
    rules = [(Tr("yours", "自定义"), d_model, mult, multiple_of)]
    rules += [(Tr(sizing.PRESETS[name].name, sizing.PRESETS[name].name), sizing.PRESETS[name].d_model, m, mo)
              for name, m, mo in _WIDTH_RULES]
    if sizing.swiglu_widths(d_model, multiple_of, mult)[1] < 1:
        raise ParamError(f"multiplier={multiplier} leaves no FFN units; use 0 for none, or at least 0.1",
                         f"multiplier={multiplier} 会让前馈一个单元都不剩；不用请写 0，否则至少 0.1")
    width_rows = tuple((label, dm, *sizing.swiglu_widths(dm, mo, m)[:2], mo, sizing.swiglu_hidden(dm, mo, m))
                       for label, dm, m, mo in rules)
    share_rows = []
    for name in ("llama2-7b", "llama3-8b"):
        shares = sizing.group_shares(sizing.PRESETS[name])
        share_rows.append((sizing.PRESETS[name].name, shares["attention"], shares["ffn"], shares["embeddings"]))
    unit = demos.swiglu_demo(seed)
    opened, closed = int(np.argmax(unit[:, 1])), int(np.argmin(np.abs(unit[:, 1])))  # by what silu lets through
    gate_facts = (Fact("open_unit", Tr("the most open unit", "最开的单元"), opened, "d"),
                  Fact("open_gate", Tr("its gate", "它的门控"), float(unit[opened, 0]), "+.2f"),
                  Fact("open_silu", Tr("silu lets through", "silu 放行"), float(unit[opened, 1]), "+.2f"),
                  Fact("closed_unit", Tr("the most closed unit", "最关的单元"), closed, "d"),
                  Fact("closed_gate", Tr("its gate", "它的门控"), float(unit[closed, 0]), "+.2f"),
                  Fact("closed_silu", Tr("silu lets through", "silu 放行"), float(unit[closed, 1]), "+.2f"))
    return Result("ffn", dict(d_model=d_model, multiplier=multiplier, multiple_of=multiple_of, seed=seed), (
        Table("gate", Tr("One token through SwiGLU: the gate decides what passes",
                         "一个词元经过 SwiGLU：门控决定放行多少"),
              (_col("unit", "unit j", "单元 j"), _col("gate", "x.W_gate", "x.W_gate", "+.2f"),
               _col("silu", "silu(gate)", "silu(gate)", "+.2f"), _col("up", "x.W_up", "x.W_up", "+.2f"),
               _col("h", "product", "乘积", "+.2f")),
              tuple((j, *map(float, row)) for j, row in enumerate(unit))),
        Table("width", Tr("The FFN width rule: 2/3 of 4d, times a multiplier, rounded up",
                          "前馈宽度规则：4d 的 2/3，乘以系数，再向上取整"),
              (_col("model", "model", "模型"), _col("d", "d_model", "d_model", "d"),
               _col("two_thirds", "2/3 x 4d", "2/3 x 4d", "d"), _col("scaled", "x multiplier", "x 系数", "d"),
               _col("multiple_of", "multiple of", "取整到倍数", "d"), _col("d_ff", "d_ff", "d_ff", "d")), width_rows),
        Table("shares", Tr("Share of all parameters", "占全部参数的比例"),
              (_col("model", "model", "模型"), _col("attention", "attention", "注意力", "pct"),
               _col("ffn", "FFN", "前馈", "pct"), _col("embeddings", "embeddings + output", "词嵌入 + 输出", "pct")),
              tuple(share_rows)),
    ), gate_facts)


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
        return Table(key, title, (_col("part", "part", "部件"), Column("a", Tr(cfgs[0].name, cfgs[0].name), fmt),
                                  Column("b", Tr(cfgs[1].name, cfgs[1].name), fmt)),
                     tuple((label, f(cfgs[0]), f(cfgs[1])) for label, row_fmt, f in rows if row_fmt == fmt))

    return Result("compare", dict(a=a, b=b, context=context), (
        table("counts", Tr(f"Parameters: {cfgs[0].name} beside {cfgs[1].name}",
                           f"参数量：{cfgs[0].name} 与 {cfgs[1].name} 对照"), ","),
        table("memory", Tr("Memory", "内存"), "bytes"),
    ))


# --- the trained tiny Llama ---------------------------------------------------------------

def _trained(run: str = "seed0"):
    """A shipped run's weights, loaded once."""
    if run not in _TRAINED:
        from . import tiny
        _TRAINED[run] = tiny.load(tiny.RUNS[run])
    return _TRAINED[run]


_TRAINED: dict = {}


def _tiny_run(sentence: str, head_mask=None, run: str = "seed0"):
    from . import corpus, tiny
    w, cfg, _ = _trained(run)
    words = sentence.split()
    ids = corpus.encode([corpus.Sentence(tuple(words), 0.0, 0, None, None)])[:, : len(words) + 1]
    keep = {}
    logits = tiny.forward(w, cfg, ids, keep, head_mask)
    return w, cfg, ["<bos>"] + words, logits[0], keep


def _softmax_row(z):
    e = np.exp(z - z.max())
    return e / e.sum()


def _tiny_next(sentence):
    from . import corpus, tiny
    w, cfg, words, logits, keep = _tiny_run(sentence)
    probs = _softmax_row(logits[-1])
    top = np.argsort(-probs, kind="stable")[:5]
    lens = []
    for i, x in enumerate(keep["residual"]):  # the logit lens: read each layer's x with the final norm and head
        p = _softmax_row((tiny.rms(x[0, -1], w["norm_f"])[0] @ w["head"]).astype(np.float64))
        best = np.argsort(-p, kind="stable")[:3]
        stage = Tr("embedding", "词嵌入") if i == 0 else Tr(f"after layer {i}", f"第 {i} 层之后")
        lens.append((stage, *[f"{corpus.VOCAB[j]} {p[j]:.2f}" for j in best]))
    return Result("tiny-next", dict(sentence=sentence), (
        Table("next", Tr(f'After "{sentence}": the trained model\'s next token',
                         f"「{sentence}」之后：训练好的模型预测的下一个词元"),
              (_col("rank", "rank", "名次"), _col("token", "token", "词元"), _col("p", "probability", "概率", ".3f")),
              tuple((i + 1, corpus.VOCAB[t], float(probs[t])) for i, t in enumerate(top))),
        Table("lens", Tr("Logit lens: the last position read after each layer", "logit 透镜：逐层读取最后一个位置"),
              (_col("stage", "read at", "读取位置"), _col("first", "1st", "第一"), _col("second", "2nd", "第二"),
               _col("third", "3rd", "第三")), tuple(lens)),
    ), (Fact("top", Tr("most likely next", "最可能的下一个词元"), corpus.VOCAB[top[0]]),
        Fact("top_p", Tr("its probability", "它的概率"), float(probs[top[0]]), ".3f"),
        Fact("p_singular", Tr("on singular verb forms (sits, sees...)", "单数动词形式（sits、sees……）的概率"),
             float(sum(probs[corpus.INDEX[p[0]]] for p in corpus.INTRANSITIVE + corpus.TRANSITIVE)), ".3f"),
        Fact("p_plural", Tr("on plural verb forms (sit, see...)", "复数动词形式（sit、see……）的概率"),
             float(sum(probs[corpus.INDEX[p[1]]] for p in corpus.INTRANSITIVE + corpus.TRANSITIVE)), ".3f")))


def _short(word: str) -> str:
    return word if len(word) <= 6 else word[:5] + "."


def _tiny_attention(sentence, layer):
    from . import corpus
    w, cfg, words, logits, keep = _tiny_run(sentence)
    if layer > cfg.n_layer:
        raise ParamError(f"layer must be from 1 to {cfg.n_layer}", f"layer 必须在 1 到 {cfg.n_layer} 之间")
    p = keep["attn"][layer - 1][0]  # [H, T, T]
    labels = tuple(Tr(_short(x), _short(x)) for x in words)
    tables = []
    for h in range(cfg.n_head):
        cols = (Column("token", Tr("query", "查询")),) + tuple(Column(f"k{j}", lab, ".2f") for j, lab in enumerate(labels))
        tables.append(Table(f"head{h}", Tr(f"Layer {layer}, head {h}", f"{layer} 层 {h} 号头"), cols,
                            tuple((lab,) + tuple(float(v) for v in row) for lab, row in zip(labels, p[h])), heat=True))
    facts = ()
    verbs = [i for i, x in enumerate(words) if any(x in pair for pair in corpus.INTRANSITIVE + corpus.TRANSITIVE)
             or x in corpus.PAST]
    if verbs and len(words) > 2:
        v, subj = verbs[0], _subject_position(words)
        looks = [(keep["attn"][li][0, h, v, subj], li + 1, h) for li in range(cfg.n_layer) for h in range(cfg.n_head)]
        weight, best_layer, best_head = max(looks)
        facts = (Fact("verb", Tr("the verb", "动词"), words[v]), Fact("subject", Tr("its subject", "它的主语"), words[subj]),
                 Fact("best_head", Tr("over both layers, the head attending most from the verb to its subject",
                                      "两层中从动词看向主语最集中的头"),
                      Tr(f"layer {best_layer} head {best_head}", f"{best_layer} 层 {best_head} 号头")),
                 Fact("best_weight", Tr("with weight", "权重"), float(weight), ".2f"))
    return Result("tiny-attention", dict(sentence=sentence, layer=layer), tuple(tables), facts)


def _tiny_heads():
    _, cfg, meta = _trained()
    init, trained = meta["head_entropy_init"], meta["head_entropy_trained"]
    rows = tuple((layer + 1, h, init[layer][h], trained[layer][h], trained[layer][h] / init[layer][h])
                 for layer in range(cfg.n_layer) for h in range(cfg.n_head))
    return Result("tiny-heads", {}, (
        Table("heads", Tr("Mean attention entropy of each head, before and after training",
                          "每个头的平均注意力熵：训练前与训练后"),
              (_col("layer", "layer", "层", "d"), _col("head", "head", "头", "d"),
               _col("init", "at init", "初始化时", ".3f"), _col("trained", "trained", "训练后", ".3f"),
               _col("ratio", "trained / init", "训练后 / 初始", ".2f")), rows,
              note=Tr("nats, averaged over the query positions after the first, on the same held-out sentences",
                      "单位奈特，对同一批未见过的句子、除第一个位置外的所有查询位置取平均")),
    ), (Fact("spread_init", Tr("head-entropy spread at init (max / min)", "初始化时的熵之比（最大 / 最小）"),
             meta["entropy_spread_init"], ".2f"),
        Fact("spread_trained", Tr("head-entropy spread trained (max / min)", "训练后的熵之比（最大 / 最小）"),
             meta["entropy_spread_trained"], ".2f"),
        Fact("steps", Tr("training steps", "训练步数"), meta["steps"], ","),
        Fact("agreement", Tr("subject-verb agreement on unseen sentences", "未见过的句子上的主谓一致率"),
             meta["agreement"], "pct")))


def _subject_position(words) -> int:
    """Where the subject noun sits in <bos> the [adjective] noun ...: index 2, or 3 after an adjective."""
    from . import corpus
    return 3 if words[2] in corpus.ADJECTIVES else 2


def _tiny_ablation(sentence, run):
    from . import corpus
    w, cfg, words, logits, keep = _tiny_run(sentence, run=run)
    s = corpus.parse(sentence)
    if s.verb_at is None:
        raise ParamError("the sentence needs a verb that agrees with its subject, such as sits or sit",
                         "句子里需要一个与主语一致的动词，比如 sits 或 sit")
    good, bad = corpus.verb_pair(s)
    # the verb is predicted at the position before it; in <bos>-indexed terms that is verb_at
    pos, subj = s.verb_at, _subject_position(words)
    base = float(logits[pos, good] - logits[pos, bad])
    rows = []
    for layer in range(cfg.n_layer):
        for h in range(cfg.n_head):
            mask = np.ones((cfg.n_layer, cfg.n_head))
            mask[layer, h] = 0
            ab = _tiny_run(sentence, mask, run)[3]
            margin = float(ab[pos, good] - ab[pos, bad])
            rows.append((layer + 1, h, float(keep["attn"][layer][0, h, pos, subj]), margin, margin - base))
    most_attn = max(rows, key=lambda r: r[2])
    most_hurt = min(rows, key=lambda r: r[4])
    same = most_attn[:2] == most_hurt[:2]
    average = _ablation_average(run)
    avg_attn = max(average, key=lambda r: r[2])
    avg_hurt = min(average, key=lambda r: r[3])
    name = lambda r: Tr(f"layer {r[0]} head {r[1]}", f"{r[0]} 层 {r[1]} 号头")  # noqa: E731
    return Result("tiny-ablation", dict(sentence=sentence, run=run), (
        Table("heads", Tr(f'Which head carries agreement in "{sentence}"', f"「{sentence}」里谁在传递主谓一致"),
              (_col("layer", "layer", "层", "d"), _col("head", "head", "头", "d"),
               _col("attn", f'attention on "{words[subj]}"', f"对「{words[subj]}」的注意力", ".3f"),
               _col("margin", "margin without it", "去掉后的差值", "+.2f"),
               _col("change", "change", "变化", "+.2f")), tuple(rows),
              note=Tr(f'margin: logit of "{corpus.VOCAB[good]}" minus "{corpus.VOCAB[bad]}" where the verb is '
                      f"predicted; {base:+.2f} with every head", f"差值：预测动词处「{corpus.VOCAB[good]}」的 logit "
                      f"减去「{corpus.VOCAB[bad]}」；所有头都在时为 {base:+.2f}")),
        Table("average", Tr(f"Averaged over {ABLATION_SENTENCES} unseen sentences whose distractor has the "
                            "other number", f"对 {ABLATION_SENTENCES} 个未见过、且干扰名词单复数相反的句子取平均"),
              (_col("layer", "layer", "层", "d"), _col("head", "head", "头", "d"),
               _col("attn", "attention on subject", "对主语的注意力", ".3f"),
               _col("change", "margin change", "差值变化", "+.2f"),
               _col("flipped", "agreement lost", "一致出错比例", "pct")), average),
    ), (Fact("margin", Tr("margin with every head", "所有头都在时的差值"), base, "+.2f"),
        Fact("most_attention", Tr("looks hardest at the subject", "最关注主语的头"), name(most_attn)),
        Fact("most_needed", Tr("its removal hurts agreement most", "去掉后对一致伤害最大的头"), name(most_hurt)),
        Fact("same_head", Tr("the same head", "是同一个头"), same),
        Fact("avg_attention", Tr("on average, looks hardest at the subject", "平均而言最关注主语的头"), name(avg_attn)),
        Fact("avg_needed", Tr("on average, hurts agreement most when removed", "平均而言去掉后伤害最大的头"),
             name(avg_hurt)),
        Fact("avg_same", Tr("on average, the same head", "平均而言是同一个头"), avg_attn[:2] == avg_hurt[:2])))


ABLATION_SENTENCES = 300


def _ablation_average(run: str = "seed0"):
    """Per head: mean attention from the verb's position to the subject, and the mean change in the
    agreement margin when the head is silenced, over unseen sentences with a mismatched distractor."""
    if run not in _ABLATION:
        from . import corpus, tiny
        w, cfg, _ = _trained(run)
        sentences = [s for s in corpus.draw(ABLATION_SENTENCES * 8, 11, "held-out") if s.mismatch][:ABLATION_SENTENCES]
        ids = corpus.encode(sentences)
        pos = np.array([s.verb_at for s in sentences])
        subj = np.array([3 if s.tokens[1] in corpus.ADJECTIVES else 2 for s in sentences])
        pairs = np.array([corpus.verb_pair(s) for s in sentences])
        rows_ = np.arange(len(sentences))

        def margins(mask=None):
            keep = {}
            logits = tiny.forward(w, cfg, ids[:, :-1], keep, mask)
            at = logits[rows_, pos]
            return at[rows_, pairs[:, 0]] - at[rows_, pairs[:, 1]], keep

        base, keep = margins()
        out = []
        for layer in range(cfg.n_layer):
            for h in range(cfg.n_head):
                mask = np.ones((cfg.n_layer, cfg.n_head))
                mask[layer, h] = 0
                m, _ = margins(mask)
                attn = keep["attn"][layer][rows_, h, pos, subj]
                out.append((layer + 1, h, float(attn.mean()), float((m - base).mean()), float(np.mean(m <= 0))))
        _ABLATION[run] = tuple(out)
    return _ABLATION[run]


_ABLATION: dict = {}


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
    from . import corpus
    groups = ((Tr("subjects and objects", "主语和宾语"), [w for pair in corpus.NOUNS for w in pair]),
              (Tr("verbs that agree", "需要一致的动词"),
               [w for pair in corpus.INTRANSITIVE + corpus.TRANSITIVE for w in pair]),
              (Tr("past verbs", "过去式动词"), list(corpus.PAST)),
              (Tr("other words", "其他词"), [corpus.THE, corpus.DOT, *corpus.ADJECTIVES, *corpus.DISTRACTOR_PREPS,
                                             *corpus.PLACE_PREPS, *corpus.PLACES]))
    h, length, floor = corpus.entropy_floor()
    return Result("tiny-vocab", {}, (
        Table("words", Tr("The tiny grammar's words", "小语法的词表"),
              (_col("group", "group", "类别"), _col("words", "words", "词")),
              tuple(row for g, ws in groups for row in _wrapped_words(g, ws))),
    ), (Fact("floor", Tr("entropy floor, nats per token", "熵下限（每词元奈特）"), floor, ".4f"),
        Fact("length", Tr("tokens per sentence, on average", "平均每句词元数"), length, ".2f")))


_DTYPES = tuple(sizing.BYTES_PER_PARAM)
_BANDWIDTHS = (50e9, 100e9, 400e9, 1000e9, 3350e9)  # bytes/s: dual-channel DDR5 up to an H100's HBM3
_PROMPTS = (1024, 4096, 16384, 65536, 131072)


def _context(preset, prompt, dtype):
    cfg = sizing.preset(preset)
    prefill = []
    for n in sorted(set(_PROMPTS) | {prompt}):
        linear, attn = sizing.prefill_flops(cfg, n)
        prefill.append((n, n * n, (linear + attn) / 1e12, attn / (linear + attn), sizing.kv_cache_bytes(cfg, n)))
    decode = tuple((f"{bw / 1e9:,.0f} GB/s", sizing.decode_tokens_per_second(cfg, bw, dtype)) for bw in _BANDWIDTHS)
    return Result("context", dict(preset=preset, prompt=prompt, dtype=dtype), (
        Table("prefill", Tr(f"Reading the prompt: {cfg.name}", f"读入提示词：{cfg.name}"),
              (_col("n", "prompt", "提示词", ","), _col("scores", "scores per head", "每头打分数", ","),
               _col("tflops", "TFLOP", "万亿次运算", ",.1f"), _col("share", "of it attention", "其中注意力", "pct"),
               _col("cache", "KV cache", "KV 缓存", "bytes")),
              tuple(prefill), note=Tr("per layer, each head scores n x n pairs; fp16 cache",
                                      "每层每个头要给 n x n 对打分；缓存按 fp16 计")),
        Table("decode", Tr(f"Generating: at most this many tokens/s with {dtype} weights",
                           f"生成：{dtype} 权重下每秒最多这么多词元"),
              (_col("bandwidth", "memory bandwidth", "内存带宽"), _col("tps", "tokens/s", "词元/秒", ",.1f")), decode,
              note=Tr("each new token reads every weight once: tokens/s <= bandwidth / weight bytes",
                      "每生成一个词元都要把权重读一遍：词元/秒 <= 带宽 / 权重字节数")),
    ), (Fact("weights", Tr(f"weights in {dtype}", f"{dtype} 权重"), sizing.weight_bytes(cfg, dtype), "bytes"),))


def _explain(seed, draws):
    r = demos.weight_vs_effect(seed, draws)
    top_w, top_e = int(np.argmax(r.weights)), int(np.argmax(r.removal_effect))
    rows = tuple((Tr(f"tok {j}", f"词 {j}"), float(r.weights[j]), float(r.value_norms[j]), float(r.removal_effect[j]))
                 for j in range(len(r.weights)))
    return Result("explain", dict(seed=seed, draws=draws), (
        Table("tokens", Tr("The last token's attention, and what each token is worth", "最后一个词元的注意力，和每个词元的分量"),
              (_col("token", "token", "词元"), _col("weight", "weight", "权重", ".3f"),
               _col("v_norm", "|v|", "|v|", ".2f"), _col("effect", "output moves when removed", "去掉后输出变化", ".3f")),
              rows),
    ), (Fact("most_weight", Tr("largest weight", "权重最大"), Tr(f"tok {top_w}", f"词 {top_w}")),
        Fact("most_effect", Tr("largest effect", "影响最大"), Tr(f"tok {top_e}", f"词 {top_e}")),
        Fact("disagree", Tr(f"draws out of {draws:,} where the two differ", f"{draws:,} 次抽样中两者不同的比例"),
             r.disagree_rate, "pct")))

VIEWS: dict[str, View] = {v.id: v for v in (
    View("mask", Tr("The causal mask", "因果掩码"),
         (Param("n", "int", 4, Tr("tokens", "词元数"), 1, 10),), _mask, (ops.causal_mask,)),
    View("positional", Tr("Sinusoidal positions", "正弦位置编码"),
         (Param("n", "int", 4, Tr("positions", "位置数"), 1, 10**7),
          Param("d", "int", 8, Tr("dims", "维度"), 2, 10**9, even=True),
          Param("base", "float", 10000.0, Tr("base of the frequencies", "频率的底数"), 2, 1e9)),
         _positional, (positions.sinusoidal_positions, positions.wavelengths)),
    View("rope", Tr("Rotary positions (RoPE)", "旋转位置编码（RoPE）"),
         (Param("d", "int", 8, Tr("dims", "维度"), 2, 10**9, even=True),
          Param("base", "float", 10000.0, Tr("base of the frequencies", "频率的底数"), 2, 1e9),
          Param("seed", "int", demos.DEMO_SEED, Tr("random draw of q and k", "q、k 的随机种子"), 0, 2**32 - 1)),
         _rope, (positions.apply_rope, demos.rope_demo)),
    View("permutation", Tr("Attention alone is a bag of words", "只有注意力时，句子只是词袋"),
         (Param("positions", "bool", False, Tr("add sinusoidal positions", "加上正弦位置编码")),
          Param("seed", "int", demos.DEMO_SEED, Tr("random draw", "随机种子"), 0, 2**32 - 1),
          Param("d", "int", 8, Tr("dims", "维度"), 2, 10**9, even=True)),
         _permutation, (demos.permutation_demo,)),
    View("attention", Tr("Scaled dot-product attention", "缩放点积注意力"),
         (Param("d", "int", 8, Tr("width of q and k", "q、k 的维度"), 1, 10**9),
          Param("seed", "int", demos.DEMO_SEED, Tr("random draw", "随机种子"), 0, 2**32 - 1),
          Param("causal", "bool", False, Tr("apply the causal mask", "加因果掩码"))),
         _attention, (ops.attention, demos.attention_demo)),
    View("dsweep", Tr("Why divide by sqrt(d): the average over many draws", "为什么除以 sqrt(d)：多次抽样的平均"),
         (Param("draws", "int", 1000, Tr("random draws per d", "每个 d 抽样次数"), 1000, 10000),
          Param("seed", "int", demos.DEMO_SEED, Tr("random draw", "随机种子"), 0, 2**32 - 1)),
         _dsweep, (demos.d_sweep,)),
    View("heads", Tr("Multi-head attention", "多头注意力"),
         (Param("heads", "int", 4, Tr("heads (must divide 32)", "头数（须整除 32）"), 1, 32),
          Param("seed", "int", demos.DEMO_SEED, Tr("random draw", "随机种子"), 0, 2**32 - 1),
          Param("n", "int", 4, Tr("tokens", "词元数"), 2, 8)),
         _heads, (ops.split_heads, demos.multi_head_demo)),
    View("cat", Tr('"The cat sat on": the real softmax', '「The cat sat on」：真正的 softmax'),
         (Param("causal", "bool", False, Tr("apply the causal mask", "加因果掩码")),), _cat, (ops.softmax, demos.cat_demo)),
    View("residual", Tr("The residual stream", "残差流"),
         (Param("residual", "bool", True, Tr("add each layer's output to x", "把每层的输出加回 x")),
          Param("seed", "int", demos.DEMO_SEED, Tr("random weights", "随机权重的种子"), 0, 2**32 - 1),
          Param("layers", "int", 4, Tr("layers", "层数"), 1, 32)),
         _residual, (llama.forward, llama.self_attention)),
    View("ffn", Tr("The SwiGLU feed-forward network", "SwiGLU 前馈网络"),
         (Param("d_model", "int", 4096, Tr("d_model for the width rule", "宽度规则里的 d_model"), 1, sizing.MAX_DIM),
          Param("multiplier", "float", 0.0, Tr("ffn_dim_multiplier, 0 for none", "ffn_dim_multiplier，0 表示不用"), 0, 8),
          Param("multiple_of", "int", 256, Tr("round up to a multiple of", "向上取整到的倍数"), 1, 65536),
          Param("seed", "int", demos.DEMO_SEED, Tr("random token and weights", "随机词元与权重"), 0, 2**32 - 1)),
         _ffn, (ops.swiglu, sizing.swiglu_widths)),
    View("context", Tr("The cost of context", "上下文的代价"),
         (Param("preset", "choice", "llama2-7b", Tr("model", "模型"), choices=tuple(sizing.PRESETS)),
          Param("prompt", "int", 4096, Tr("a prompt length to add to the table", "加进表里的提示词长度"), 1,
                sizing.MAX_CONTEXT),
          Param("dtype", "choice", "fp16", Tr("weight precision", "权重精度"), choices=_DTYPES)),
         _context, (sizing.prefill_flops, sizing.decode_tokens_per_second)),
    View("explain", Tr("Attention weights are not explanations", "注意力权重不是解释"),
         (Param("seed", "int", demos.DEMO_SEED, Tr("random draw", "随机种子"), 0, 2**32 - 1),
          Param("draws", "int", 1000, Tr("draws for the rate", "统计用的抽样次数"), 100, 100000)),
         _explain, (demos.weight_vs_effect,)),
    View("compare", Tr("Two models side by side", "两个模型对照"),
         (Param("a", "choice", "llama2-7b", Tr("first model", "第一个模型"), choices=tuple(sizing.PRESETS)),
          Param("b", "choice", "llama3-8b", Tr("second model", "第二个模型"), choices=tuple(sizing.PRESETS)),
          Param("context", "int", 8192, Tr("tokens for the cache row", "缓存一行的词元数"), 1, sizing.MAX_CONTEXT)),
         _compare, (sizing.param_count, sizing.kv_bytes_per_token)),
    View("tiny-vocab", Tr("The tiny grammar", "小语法"), (), _tiny_vocab, ()),
    View("tiny-next", Tr("The trained tiny Llama: next token and logit lens", "训练好的小 Llama：下一个词元与逻辑透镜"),
         (Param("sentence", "sentence", "the cat near the dogs", Tr("words so far", "已有的词")),),
         _tiny_next, ()),
    View("tiny-attention", Tr("The trained tiny Llama: every head's attention", "训练好的小 Llama：每个头的注意力"),
         (Param("sentence", "sentence", "the cat sat on the mat .", Tr("the sentence", "句子")),
          Param("layer", "int", 1, Tr("which layer", "哪一层"), 1, 4)),
         _tiny_attention, ()),
    View("tiny-heads", Tr("The trained tiny Llama: heads pulled apart", "训练好的小 Llama：被拉开的各个头"), (),
         _tiny_heads, ()),
    View("tiny-ablation", Tr("The trained tiny Llama: which head carries agreement", "训练好的小 Llama：谁在传递主谓一致"),
         (Param("sentence", "sentence", "the cat near the dogs sits .", Tr("a sentence with an agreeing verb",
                                                                            "带一致动词的句子")),
          Param("run", "choice", "seed0", Tr("which shipped training run", "随附的哪一次训练"),
                choices=("seed0", "seed1"))),
         _tiny_ablation, ()),
    View("params", Tr("Counting parameters", "参数量统计"), _config_params(), _params,
         (sizing.param_count, sizing.layer_params)),
    View("kvcache", Tr("The KV cache", "KV 缓存"),
         (Param("preset", "choice", "llama2-7b", Tr("model", "模型"), choices=tuple(sizing.PRESETS)),
          Param("context", "int", 4096, Tr("tokens in the context", "上下文词元数"), 1, sizing.MAX_CONTEXT),
          Param("kv_heads", "int", None, Tr("key/value heads", "键值头数"), 1, 1024, optional=True),
          Param("batch", "int", 1, Tr("sequences at once", "批大小"), 1, 4096),
          Param("dtype", "choice", "fp16", Tr("cache precision", "缓存精度"), choices=_DTYPES)),
         _kvcache, (sizing.kv_bytes_per_token, sizing.kv_cache_bytes)),
)}


def get_view(view_id: str) -> View:
    """The view with this id, or a ParamError listing the ids there are."""
    return pick(VIEWS, view_id, "view", "视图")


def run_view(view_id: str, settings: dict | None = None) -> Result:
    """Compute one view at these settings (raw strings or typed values)."""
    return get_view(view_id).run(settings)
