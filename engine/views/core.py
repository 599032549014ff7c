"""The machinery of views: typed parameters, results as plain tables, and the registry.

A view has an id, typed parameters with defaults and limits, and a compute function that returns a
`Result`: tables of raw numbers plus the format each column is shown in. Labels carry both
languages (`Tr`). Nothing here prints; `tui/` renders a Result for a terminal, a pipe or JSON.
Table cells hold ASCII symbols and CJK text only, so no cell changes width with the terminal's
handling of East Asian ambiguous-width characters.

Each topic's module defines its views and registers each one where it is defined.
"""

import importlib
import math
import re
import unicodedata
from typing import Any, Callable

from ..errors import ParamError, pick
from ..records import record


@record
class Tr:
    """One text in both languages."""

    en: str
    zh: str

    def __call__(self, lang: str) -> str:
        return self.zh if lang == "zh" else self.en


# --- parameters -------------------------------------------------------------------------

_TRUE, _FALSE = ("on", "true", "yes", "1"), ("off", "false", "no", "0")


@record
class Param:
    """One setting of a view: its type, default and the values it allows."""

    name: str
    kind: str  # "int", "float", "bool", "choice", "sentence" (words of the tiny grammar) or "text" (any text)
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
        if self.kind == "text":
            return Tr(f"any text of 1 to {MAX_TEXT} characters, no control characters",
                      f"1 到 {MAX_TEXT} 个字符的任意文本，不含控制字符")
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
            allowed, got = self.allowed(), _shown(raw)
            raise ParamError(f"{self.name} must be {allowed.en}, got {got.en}",
                             f"{self.name} 必须是 {allowed.zh}，收到 {got.zh}")
        return value

    def _convert(self, raw):
        if self.kind == "bool":
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            return True if text in _TRUE else False if text in _FALSE else None
        if self.kind == "choice":
            return raw if raw in self.choices else None
        if self.kind == "text":
            text = str(raw)
            fits = text.strip() and len(text) <= MAX_TEXT and not any(_unprintable(c) for c in text)
            return text if fits else None
        if self.kind == "sentence":
            from ..corpus import parse
            try:
                return " ".join(parse(str(raw)).tokens)
            except ValueError:
                return None
        return _number(raw, integer=self.kind == "int")

    def _fits(self, value) -> bool:
        if self.kind in ("bool", "choice", "sentence", "text"):
            return True
        return self.lo <= value <= self.hi and not (self.even and value % 2)


MAX_TEXT = 200  # the longest text a "text" setting takes: a BPE view encodes it in well under a millisecond


def _unprintable(ch: str) -> bool:
    """A control, format (bidi marks among them), surrogate or line-separator character: never in a text setting."""
    return unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp")


_MAX_CHARS = 40  # the longest number a setting takes, written out; far above any range's bound


def _shown(raw) -> Tr:
    """A refused value as an error message quotes it: whole when short, else its start and its length."""
    if isinstance(raw, int) and raw.bit_length() > 128:  # repr() itself refuses past 4,300 digits
        digits = f"{int(raw.bit_length() * math.log10(2)) + 1:,}"
        return Tr(f"a whole number of about {digits} digits", f"一个约 {digits} 位的整数")
    text = repr(raw)
    if len(text) <= _MAX_CHARS:
        return Tr(text, text)
    n = f"{len(str(raw)):,}"
    return Tr(f"{text[:_MAX_CHARS - 10]}... ({n} characters)", f"{text[:_MAX_CHARS - 10]}...（共 {n} 个字符）")


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
        if len(text) > _MAX_CHARS:  # int() refuses past 4,300 digits; no setting needs 40
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

@record
class Column:
    key: str
    label: Tr
    fmt: str = "text"  # "text", a format spec such as "+.3f" or ",", or one of: short, sig3, pct, bytes, mask


@record
class Table:
    key: str
    title: Tr
    columns: tuple[Column, ...]
    rows: tuple[tuple, ...]  # raw cells: str, Tr, int or float
    heat: str = ""           # what the numeric cells hold, for the screen's shading: "weights" (attention
                             # weights in [0, 1]), "signed" (either sign) or "mask" (0 or -inf); "" for none
    heat_cols: tuple[str, ...] = ()  # the columns shaded (their keys); () for every column but the first
    note: Tr | None = None


@record
class Fact:
    key: str
    label: Tr
    value: Any
    fmt: str = "text"


@record
class Series:
    label: Tr
    values: tuple[float, ...]  # one per x of a line chart, or one per part of a stacked bar


@record
class Chart:
    """A picture of numbers the view also gives in a table (or in its facts), so the exact values stay one
    key away. Data only: the screen draws it (tui/layout/charts.py).

        line    each series against x, on shared axes
        strips  each series against x in a strip of its own, one under the other (small multiples)
        stack   each series one horizontal bar, split into `parts` in proportion to its values
    """

    key: str
    title: Tr
    kind: str                      # "line", "strips" or "stack"
    series: tuple[Series, ...]
    x: tuple[float, ...] = ()      # line and strips: the x of each value
    parts: tuple[Tr, ...] = ()     # stack: what each value of a series is
    x_label: Tr | None = None
    y_label: Tr | None = None
    log_x: bool = False            # line: x on a log scale (context lengths, widths)
    log_y: bool = False            # line: y on a log scale (positive values only): a constant ratio is a gap
    y_range: tuple[float, float] | None = None  # line and strips: fixed y limits; None fits the data
    note: Tr | None = None


@record
class Result:
    view: str
    params: dict
    tables: tuple[Table, ...]
    facts: tuple[Fact, ...] = ()
    charts: tuple[Chart, ...] = ()  # shown only on steps that name them (a step's `tables`)


@record
class View:
    id: str
    title: Tr
    params: tuple[Param, ...]
    compute: Callable[..., Result]
    sources: tuple[Callable, ...] = ()  # the engine functions behind the tables
    model: bool = False  # it runs the real model, a file the learner fetches (xf-tour model get) or names (--model)

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


# --- the registry ------------------------------------------------------------------------

VIEWS: dict[str, View] = {}  # id -> view, in the order of the tour's lessons, once load_all() has run

# Where each view is defined and registered: its topic module, in the order of the lessons. One view
# can then be loaded without every topic's imports (print positional needs no random Llama); a test
# checks this table against what the modules register.
HOMES = {
    "mask": "residual", "residual": "residual",
    "positional": "positions", "rope": "positions", "permutation": "positions",
    "attention": "attention", "dsweep": "attention", "cat": "attention",
    "heads": "heads",
    "swiglu": "ffn", "ffn-width": "ffn", "shares": "ffn",
    "params": "sizing", "kvcache": "sizing", "compare": "sizing",
    "context": "context",
    "norm-vector": "norms", "norm-stack": "norms", "norm-params": "norms",
    "bpe": "tokens", "vocab-cost": "tokens", "tiny-head": "tokens", "tiny-loss": "tokens",
    "tiny-sample": "sampling", "sample-agreement": "sampling",
    "explain": "misconceptions",
    "tiny-vocab": "tiny", "tiny-next": "tiny", "tiny-attention": "tiny", "tiny-verb": "tiny",
    "tiny-heads": "tiny", "tiny-ablation": "ablation",
    "real-params": "real", "real-tokens": "real", "real-next": "real", "real-attention": "real",
    "real-stream": "real", "real-lens": "real", "real-generate": "real",
}


def lazy_source(module: str, name: str):
    """An engine function for the code key, imported only when its code is shown: a view module can then
    leave heavy engine modules unimported until a view of it runs."""
    def source():
        return getattr(importlib.import_module(f"engine.{module}"), name)
    source.lazy = True
    return source


def register(view: View) -> View:
    """Add a view to the registry; its id must be new, and HOMES must name the module that registers it (the
    one map of where each view lives, which load() imports from)."""
    if view.compute.__module__ == "__main__":  # a topic module run as a script (python -m engine.views.tokens):
        return view                            # its imported twin registers the view
    home = f"{__package__}.{HOMES[view.id]}" if view.id in HOMES else None
    if view.compute.__module__ != home:
        raise ValueError(f"view {view.id!r} is registered by {view.compute.__module__}, but HOMES "
                         + (f"names {home}" if home else "does not name it") + ": fix HOMES in engine/views/core.py")
    if view.id in VIEWS:
        raise ValueError(f"view {view.id!r} is registered twice")
    VIEWS[view.id] = view
    return view


def load(view_id: str) -> None:
    """Import the topic module that registers view_id, if it is one of HOMES."""
    if view_id in HOMES and view_id not in VIEWS:
        importlib.import_module(f"{__package__}.{HOMES[view_id]}")


def load_all() -> dict[str, View]:
    """Import every topic module, then put VIEWS in the order of the lessons; VIEWS itself."""
    for view_id in HOMES:
        load(view_id)
    if list(VIEWS)[:len(HOMES)] != list(HOMES):  # topics loaded one by one arrive out of order
        views = {k: VIEWS[k] for k in (*HOMES, *VIEWS)}
        VIEWS.clear()
        VIEWS.update(views)
    return VIEWS


def get_view(view_id: str) -> View:
    """The view with this id, or a ParamError listing the ids there are."""
    if view_id in HOMES:
        load(view_id)
    else:
        load_all()
    return pick(VIEWS, view_id, "view", "视图")


def run_view(view_id: str, settings: dict | None = None) -> Result:
    """Compute one view at these settings (raw strings or typed values)."""
    return get_view(view_id).run(settings)


# --- helpers for building tables --------------------------------------------------------

def col(key, en, zh, fmt="text"):
    return Column(key, Tr(en, zh), fmt)


def matrix_table(key, title, weights, labels, fmt=".3f", heat="weights", row_title=None):
    cols = (Column("token", row_title or Tr("query", "查询")),) + tuple(
        Column(f"k{j}", lab if isinstance(lab, Tr) else Tr(lab, lab), fmt) for j, lab in enumerate(labels))
    rows = tuple((lab,) + tuple(float(v) for v in row) for lab, row in zip(labels, weights))
    return Table(key, title, cols, rows, heat=heat)


def token_labels(n):
    return tuple(Tr(f"tok {i}", f"词 {i}") for i in range(n))


def pick_rows(n, keep=8):
    """Indices to show of n: all when few, else the first and last keep // 2."""
    return list(range(n)) if n <= keep else list(range(keep // 2)) + list(range(n - keep // 2, n))
