"""The sizing workbench: type a model card's numbers, see every term of the count and the memory."""

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.suggester import SuggestFromList
from textual.widgets import Input, Label, Static

from engine import sizing
from engine.sizing import SOURCES

from ..format import human_bytes, short_count
from ..i18n import t
from ..layout.flatten import flatten
from ..layout.tables import PLAIN
from ..layout.wrap import wrap_text
from ..widgets.field import Field
from ..widgets.keybar import KeyBar
from ..workbench import FIELDS, Workbench
from . import ClosesOnce

FIELDS_WIDTH = 27  # the fields column, as in app.tcss
SUGGEST = {"preset": list(sizing.PRESETS), "weights": list(sizing.BYTES_PER_PARAM),
           "cache": list(sizing.BYTES_PER_PARAM), "tied": ["on", "off", "是", "否"]}
TIED_ZH = {"on": "是", "off": "否"}  # the tied field reads yes/no in Chinese; the workbench keeps on/off
PARTS = (  # itemised rows: (label, keys in param_count summed, whether per layer)
    (("embedding", "词嵌入"), ("embedding",), False),
    (("attention W_q", "注意力 W_q"), ("attention/q",), True),
    (("attention W_k", "注意力 W_k"), ("attention/k",), True),
    (("attention W_v", "注意力 W_v"), ("attention/v",), True),
    (("attention W_o", "注意力 W_o"), ("attention/o",), True),
    (("FFN gate", "前馈 gate"), ("ffn/gate",), True),
    (("FFN up", "前馈 up"), ("ffn/up",), True),
    (("FFN down", "前馈 down"), ("ffn/down",), True),
    (("layer norms", "层内归一化"), ("norm/attention", "norm/ffn"), True),
    (("final norm", "最终归一化"), ("norm/final",), False),
    (("output head", "输出投影"), ("output",), False),
)


def _tr(pair, lang):
    return pair[1] if lang == "zh" else pair[0]


def _model_name(s, lang) -> str:
    """The preset's name, or says the model was changed from it."""
    if s.same and s.cfg.name:
        return s.cfg.name
    return t("workbench_custom", lang, base=s.cfg.name) if s.cfg.name else t("workbench_custom_plain", lang)


def share(part: float) -> str:
    """A part's share to one decimal, "<0.1%" for a sliver: the column stays six cells wide, and every number
    of the table fits 80 columns (0.00005% took eight)."""
    return "<0.1%" if 0 < part < 0.0005 else f"{part * 100:.1f}%"


def bar(share: float, width: int = 20) -> str:
    """An ASCII bar: '#' for the share, '.' for the rest (block glyphs are ambiguous width)."""
    filled = round(share * width)
    return "#" * filled + "." * (width - filled)


class WorkbenchScreen(ClosesOnce, Screen):
    """Fields on the left, live outputs on the right; a bad field keeps the last good outputs, marked stale."""

    BINDINGS = [
        Binding("down,enter", "field(1)", "next field", show=False),
        Binding("up", "field(-1)", "previous field", show=False),
        Binding("ctrl+t", "pin", "pin", show=False, priority=True),
        Binding("ctrl+r", "reset", "reset", show=False, priority=True),
        Binding("ctrl+l", "language", "language", show=False, priority=True),
        Binding("escape", "back", "back", show=False),
    ]

    AUTO_FOCUS = "#in-layers"  # focused as soon as the fields exist, not after the first frame

    def __init__(self, bench: Workbench, standalone: bool = False):
        super().__init__()
        self.bench, self.standalone = bench, standalone

    @property
    def lang(self) -> str:
        return self.app.tour.lang

    def compose(self) -> ComposeResult:
        yield Static(id="workbench-title")
        with Horizontal(id="workbench-body"):
            with VerticalScroll(id="fields"):
                for f in FIELDS:
                    with Horizontal(classes="field-row"):
                        yield Label(id=f"label-{f.name}", classes="field-label")
                        suggest = SuggestFromList(SUGGEST[f.name]) if f.name in SUGGEST else None
                        yield Field(self._shown(f.name), id=f"in-{f.name}", suggester=suggest,
                                    compact=True, select_on_focus=False)
            with VerticalScroll(id="outputs"):
                yield Static(id="summary")
                yield Static(id="items")
                yield Static(id="shares")
                yield Static(id="chart")
        yield Static(id="workbench-message")
        yield KeyBar(id="workbench-keys")

    def on_mount(self) -> None:
        self.redraw()
        self.app.release_keys()  # the fields exist and one has focus: keys typed meanwhile go to it

    def on_resize(self) -> None:
        self.redraw()

    # --- input --------------------------------------------------------------------------

    def _shown(self, name: str) -> str:
        """A field's value as the learner reads it in the current language."""
        value = self.bench.values.get(name, "")
        return TIED_ZH.get(value, value) if name == "tied" and self.lang == "zh" else value

    def on_input_changed(self, event: Input.Changed) -> None:
        name = event.input.id.removeprefix("in-")
        value = event.value
        if name == "tied":
            value = {zh: en for en, zh in TIED_ZH.items()}.get(value.strip(), value)
        if self.bench.values.get(name) == value:
            return
        self.bench.set(name, value)
        if name == "preset" and event.value.strip() in sizing.PRESETS:
            self._sync_inputs(skip="preset")
        self.redraw()

    def _sync_inputs(self, skip: str = "") -> None:
        """Show the workbench's values in the inputs (after a preset or a reset)."""
        for f in FIELDS:
            widget = self.query_one(f"#in-{f.name}", Input)
            value = self._shown(f.name)
            if f.name != skip and widget.value != value:
                with widget.prevent(Input.Changed):
                    widget.value = value

    # --- drawing ------------------------------------------------------------------------

    def redraw(self, message: str | None = None) -> None:
        lang, bench = self.lang, self.bench
        for f in FIELDS:
            self.query_one(f"#label-{f.name}", Label).update(f.label(lang))
            widget = self.query_one(f"#in-{f.name}", Input)
            widget.set_class(f.name in bench.errors, "-bad")
            if f.name == "d_ff":
                widget.disabled = bench.derived_d_ff()
                if bench.derived_d_ff() and widget.value != bench.values["d_ff"]:
                    with widget.prevent(Input.Changed):
                        widget.value = bench.values["d_ff"]
        self.query_one("#workbench-title", Static).update(Text(t("workbench_title", lang), style="bold"))
        width = max(30, self.app.size.width - FIELDS_WIDTH - 3)  # as app.tcss lays it out: known before layout
        s = bench.sizing
        if s is not None:
            style = "dim" if bench.stale else ""
            self.query_one("#summary", Static).update(flatten(self._summary(s, lang, style), width))
            self.query_one("#items", Static).update(flatten(self._items(s, lang, style), width))
            self.query_one("#shares", Static).update(flatten(self._shares(s, lang, style, width), width))
            self.query_one("#chart", Static).update(flatten(self._chart(s, lang, style), width))
        line_width = self.app.size.width - 2
        if bench.errors:
            sep = "；" if lang == "zh" else "; "
            text = wrap_text(t("workbench_stale" if bench.stale else "workbench_invalid", lang) + " "
                             + sep.join(e(lang) for e in bench.errors.values()), line_width, "bold red")
        else:
            text = wrap_text(message or t("workbench_hint", lang), line_width, "italic" if message else "dim")
        self.query_one("#workbench-message", Static).update(text)
        keys = [("Tab", t("workbench_next", lang), True), ("Ctrl+T", t("workbench_pin", lang), s is not None),
                ("Ctrl+R", t("reset", lang), True), ("Ctrl+L", t("lang", lang), True),
                ("Esc", t("workbench_back", lang), not self.standalone), ("Ctrl+Q", t("quit", lang), True)]
        self.query_one(KeyBar).show(keys)

    def _summary(self, s, lang, style):
        bench = self.bench
        total = s.report["total"]
        out = Text(style=style)
        out.append(_model_name(s, lang) + "  ", style="bold")
        out.append(t("workbench_total", lang) + " ")
        out.append(f"{total:,}", style="bold")
        out.append(f" = {short_count(total, lang)}")
        if s.published is not None:
            out.append("  " + t("workbench_published", lang, n=f"{s.published:,}",
                                ok=t("workbench_match" if s.published == total else "workbench_differ", lang)))
            out.append("\n" + t("workbench_source", lang, src=SOURCES[s.preset]), style="dim")
        out.append("\n" + t("workbench_memory", lang, w=s.weights_dtype, wb=human_bytes(s.weight_bytes),
                            c=s.cache_dtype, cb=human_bytes(s.kv_bytes), ctx=f"{s.context:,}", batch=s.batch,
                            total=human_bytes(s.inference_bytes)))
        if s.budget is not None:
            spare = s.budget * 2**30 - s.inference_bytes
            key = "workbench_fits" if spare >= 0 else "workbench_short"
            out.append("\n")
            out.append(t(key, lang, budget=f"{s.budget:g}", gap=human_bytes(abs(spare))),
                       style="bold green" if spare >= 0 else "bold red")
        out.append("\n" + t("workbench_kv", lang, per=human_bytes(s.kv_per_token), c=s.cache_dtype,
                            formula=f"2 x {s.cfg.n_layer} x {s.cfg.n_kv_head} x {s.cfg.d_head} x "
                                    f"{sizing.BYTES_PER_PARAM[s.cache_dtype]:g}"))
        out.append("\n" + t("workbench_finetune", lang, b=human_bytes(s.report["finetune_bytes"]),
                            per=sizing.FINETUNE_BYTES_PER_PARAM))
        if bench.pinned is not None:
            p = bench.pinned
            out.append("\n" + t("workbench_pinned", lang, name=_model_name(p, lang), total=f"{p.report['total']:,}",
                                mem=human_bytes(p.inference_bytes)), style="bold cyan")
        return out

    def _items(self, s, lang, style):
        """Every part's count; the numbers are never cut (a part's name gives way first: it once read
        "1,879,048,1..." at 80 columns)."""
        items, L, total = s.report["items"], s.cfg.n_layer, s.report["total"]
        pinned = self.bench.pinned
        rows = [(_tr(label, lang), sum(items[k] for k in keys), per_layer) for label, keys, per_layer in PARTS]
        rows.append((t("workbench_total", lang), total, False))
        cells = []
        if pinned is None:
            heads = ("workbench_one_layer", "workbench_all", None)
            for label, n, per_layer in rows:
                cells.append((label, f"{n // L:,}" if per_layer else "", f"{n:,}",
                              share(n / total)))
            cells.append((t("workbench_layer", lang), f"{s.report['per_layer']:,}", "", ""))
        else:
            heads = ("workbench_now", "workbench_was", "workbench_change")
            p_items = pinned.report["items"]
            old = [sum(p_items[k] for k in keys) for _, keys, _ in PARTS] + [pinned.report["total"]]
            for (label, n, _), was in zip(rows, old):
                change = n - was
                cells.append((label, short_count(n, lang), short_count(was, lang),
                              ("+" if change > 0 else "-" if change < 0 else "") + short_count(abs(change), lang)
                              if change else "0"))
        table = Table(box=PLAIN, show_edge=False, pad_edge=False, padding=(0, 1), collapse_padding=True,
                      header_style="bold", style=style, title=t("workbench_items", lang), title_justify="left",
                      title_style="bold")
        table.add_column(t("workbench_part", lang), no_wrap=True, overflow="ellipsis")
        for j, head in enumerate(heads, start=1):
            name = t(head, lang) if head else "%"
            widest = max(cell_len(name), *(cell_len(row[j]) for row in cells))
            table.add_column(name, justify="right", no_wrap=True, min_width=widest)
        bold = len(rows) - 1  # the total
        for i, row in enumerate(cells):
            table.add_row(*row, style="bold" if i == bold else "")
        return table

    def _shares(self, s, lang, style, width):
        """Where the parameters live, as one stacked bar, with the pinned model's bar under it
        (tui/layout/charts.py)."""
        from rich.console import Group

        from engine.views import Tr
        from engine.views.sizing import split_chart

        from ..layout.charts import render_chart

        models = [(s, _model_name(s, lang))]
        if self.bench.pinned is not None:
            pinned = self.bench.pinned
            models.append((pinned, t("workbench_pin_label", lang, name=_model_name(pinned, lang))))
        chart = split_chart([(Tr(name, name), m.cfg) for m, name in models])
        lines = render_chart(chart, lang, width, "mono" if style else self.app.heat_colors)  # stale: no colour
        for line in lines:
            line.stylize(style)
        return Group(*lines)

    def _chart(self, s, lang, style):
        rows = s.chart()
        top = max(r[2] for r in rows) or 1  # bars for this model: the longest context fills the bar
        title = t("workbench_chart", lang, batch=s.batch, c=s.cache_dtype)
        table = Table(box=PLAIN, show_edge=False, pad_edge=False, padding=(0, 1), collapse_padding=True,
                      header_style="bold", style=style, title=title, title_justify="left", title_style="bold")
        table.add_column(t("workbench_context", lang), justify="right")
        table.add_column("MHA", justify="right")
        table.add_column(f"kv={s.cfg.n_kv_head}", justify="right")
        table.add_column("MQA", justify="right")
        table.add_column("", no_wrap=True)
        for n, mha, this, mqa in rows:
            table.add_row(f"{n:,}", human_bytes(mha), human_bytes(this), human_bytes(mqa), bar(this / top, 8))
        return table

    # --- actions ------------------------------------------------------------------------

    def action_field(self, step: int) -> None:
        """Move to the next or previous field."""
        if step > 0:
            self.focus_next()
        else:
            self.focus_previous()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.focus_next()

    def action_pin(self) -> None:
        """Pin the current model to compare against, or unpin it."""
        pinned = self.bench.pin()
        self.redraw(t("workbench_pinned_now" if pinned else "workbench_unpinned", self.lang))

    def action_reset(self) -> None:
        """Start again from the preset in the preset field (Llama 2 7B if none)."""
        preset = self.bench.values.get("preset", "").strip()
        fresh = Workbench.start(preset if preset in sizing.PRESETS else "llama2-7b")
        fresh.pinned = self.bench.pinned
        self.bench = fresh
        self._sync_inputs()
        self.redraw(t("workbench_reset", self.lang))

    def action_language(self) -> None:
        """Switch between Chinese and English."""
        self.app.set_language("en" if self.lang == "zh" else "zh")
        self._sync_inputs()

    def action_back(self) -> None:
        """Back to the lesson (when the workbench was opened from one)."""
        if self.standalone:
            self.redraw(t("workbench_quit_hint", self.lang))
        else:
            self.dismiss()
