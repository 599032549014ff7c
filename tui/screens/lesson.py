"""The lesson screen: a step's settings, tables and prose, the experiments box, and the keys."""

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, VerticalScroll
from textual import work
from textual.screen import Screen
from textual.widgets import Static

from engine.errors import EngineError
from engine.views import fmt_value

from ..format import wrap_text
from ..i18n import t
from ..plain import fill, prose, render_tables, settings_line, table_width
from ..widgets.flat import flatten
from ..widgets.keybar import KeyBar

WIDE = 120  # from this width on, the prose sits beside the tables
WORKBENCH_LESSONS = ("params", "kvcache")  # lessons whose w key opens the sizing workbench
_TO_WORKBENCH = {"preset": "preset", "layers": "layers", "hidden": "d_model", "heads": "heads",
                 "kv_heads": "kv_heads", "head_dim": "head_dim", "ffn": "d_ff", "vocab": "vocab",
                 "context": "context", "batch": "batch", "dtype": "cache"}


def prose_width(screen_width: int) -> int:
    """The prose pane's width on a wide screen: the tables get the rest (at least 80, every table fits)."""
    return max(40, min(64, screen_width - 80))


class LessonScreen(Screen):
    """One step of one lesson at a time."""

    BINDINGS = [
        Binding("n,right", "next", "next", show=False),
        Binding("p,left", "prev", "back", show=False),
        *[Binding(str(i), f"experiment('{i}')", f"experiment {i}", show=False) for i in range(1, 10)],
        Binding("0", "reset", "reset", show=False),
        Binding("c", "code", "code", show=False),
        Binding("l", "language", "language", show=False),
        Binding("o", "overview", "lessons", show=False),
        Binding("w", "workbench", "workbench", show=False),
        Binding("question_mark", "help", "help", show=False),
        Binding("q", "quit", "quit", show=False),
        Binding("tab", "app.focus_next", "switch pane", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        yield Static(id="settings")
        with Container(id="body"):
            with VerticalScroll(id="tables-pane"):
                yield Static(id="tables")
            with VerticalScroll(id="prose-pane"):
                yield Static(id="prose")
        yield Static(id="training")
        yield Static(id="experiments")
        yield Static(id="message")
        yield KeyBar(id="keys")
        yield Static(id="small")

    def on_mount(self) -> None:
        self._drawn: dict[str, object] = {}
        self._message = ""
        self._painted = False  # until the first frame is up, keys are lit by the cheap test (see _live)
        self.query_one("#prose-pane").focus()
        self.redraw()
        self.call_after_refresh(self._first_paint_done)

    def _first_paint_done(self) -> None:
        self._painted = True
        self.redraw()

    def _live(self, experiment) -> bool:
        """Whether an experiment's key is lit: it must change what the step shows. Finding out runs the
        view at the next value, so the very first frame uses the cheap test and the exact one follows."""
        return self.tour.applies(experiment) if self._painted else self.tour.takes(experiment)

    @property
    def tour(self):
        return self.app.tour

    def check_action(self, action: str, parameters) -> bool | None:
        """While the window is too small, only quitting, help and the language work: nothing moves unseen."""
        if self.has_class("-small") and action not in ("quit", "help", "language"):
            return False
        return True

    # --- drawing ------------------------------------------------------------------------

    def on_resize(self) -> None:
        if self.app.size.width >= WIDE:  # the prose pane's width follows the screen
            self.query_one("#prose-pane").styles.width = prose_width(self.app.size.width)
        self.redraw()

    def _set(self, widget_id: str, key, make) -> None:
        """Update a widget only when what it shows has changed: fewer bytes down an SSH link."""
        if self._drawn.get(widget_id) != key:
            self._drawn[widget_id] = key
            self.query_one(f"#{widget_id}", Static).update(make())

    def redraw(self, message: str | None = None) -> None:
        """Draw the current step; every part is recomputed only if its inputs changed."""
        if not self.is_mounted:
            return
        w, h = self.app.size
        small = w < 80 or h < 24
        self.set_class(small, "-small")
        self.set_class(w >= WIDE, "-wide")
        if small:
            self._set("small", ("small", w, h, self.tour.lang), lambda: Text(t("too_small", self.tour.lang, w=w, h=h)))
            return
        tour, lang = self.tour, self.tour.lang
        lesson, step = tour.lesson, tour.step
        if tour.pending():  # a slow view: compute it off the UI thread, and say so meanwhile
            self._set("message", ("computing", tour.settings()), lambda: Text(t("computing", lang), style="italic"))
            self._compute()
            return
        try:
            result, other = tour.result(), tour.compare_result()
        except EngineError as err:  # a learner's own lesson may ask for something the engine refuses
            refused = t("refused", lang, message=err.text(lang))
            self._set("message", ("refused", refused), lambda: Text(refused, style="bold red"))
            return
        where = (lang, tour.lesson_index, tour.step_index)
        title = Text.assemble(
            (f"{lesson.order}. {lesson.title(lang)}", "bold"), "  ",
            (t("step", lang, i=tour.step_index + 1, n=len(lesson.steps)) + ("：" if lang == "zh" else ": ")
             + step.title(lang), ""))
        self._set("title", ("title", where), lambda: title)
        settings = settings_line(result.params)
        self._set("settings", ("settings", settings), lambda: Text(settings, style="bold"))
        if message is not None:
            self._message = message
        hint = self._message or t("hint", lang, keys=self._key_range())
        self._set("message", ("message", hint, w),
                  lambda: wrap_text(hint, w - 2, "italic" if self._message else "dim"))
        pane_width, prose_width = self._widths(w)
        self._set("tables", ("tables", where, result, other, pane_width),
                  lambda: flatten(self._step_tables(result, other, step, lang, pane_width), pane_width))
        text = fill(step.text(lang), result, lang)
        self._set("prose", ("prose", text, prose_width), lambda: Group(*prose(text, prose_width)))
        self._set("experiments", ("experiments", where, tuple(sorted(tour.overrides().items())), str(result.params),
                                  self._painted, self.app.training_running()), lambda: self._experiments(lang))
        self.query_one(KeyBar).show(self._keys(lang))

    @work(thread=True, exclusive=True, group="compute")
    def _compute(self) -> None:
        """Fill the view cache in a thread, then draw."""
        self.tour.result()
        self.app.call_from_thread(self.redraw)

    @staticmethod
    def _widths(screen_width: int) -> tuple[int, int]:
        """Text widths of the tables and the prose, from the screen width and app.tcss: known before
        the layout has caught up with a resize. Each pane loses 2 cells of padding and 1 of scroll bar."""
        if screen_width < WIDE:
            return screen_width - 3, screen_width - 3
        prose = prose_width(screen_width)
        return screen_width - prose - 3, prose - 4  # the prose pane also has a border

    def _step_tables(self, result, other, step, lang, width):
        if other is None:
            return Group(*render_tables(result, step.tables, lang, width))
        head = Text(t("beside", lang, settings=settings_line(other.params)), style="bold")
        half = (width - 3) // 2
        if self.has_class("-wide") and all(
                table_width(x, lang) <= half for r in (result, other) for x in r.tables
                if not step.tables or x.key in step.tables):
            grid = Table.grid(padding=(0, 3))  # wide: the two variants side by side
            grid.add_column()
            grid.add_column()
            grid.add_row(Group(Text(settings_line(result.params), style="bold"), *render_tables(result, step.tables, lang, half)),
                         Group(head, *render_tables(other, step.tables, lang, half)))
            return grid
        return Group(*render_tables(result, step.tables, lang, width), head, *render_tables(other, step.tables, lang, width))

    def show_training(self, text) -> None:
        """The live-training panel: shown while a run is going or its result is up."""
        panel = self.query_one("#training", Static)
        panel.display = text is not None
        if text is not None:
            panel.update(text)

    def _key_range(self) -> str:
        keys = [x.key for x in self.tour.lesson.experiments]
        return f"{keys[0]}-{keys[-1]}" if len(keys) > 1 else "".join(keys) or "-"

    def _experiments(self, lang):
        tour = self.tour
        self.query_one("#experiments").border_title = t("experiments", lang)
        if not tour.lesson.experiments:
            return Text(t("no_experiments", lang), style="dim")
        lines = Text()
        for i, x in enumerate(tour.lesson.experiments):
            live = self._live(x)
            value = fmt_value(tour.value_of(x))
            if i:
                lines.append("\n")
            lines.append(f" {x.key} ", style="bold reverse" if live else "dim")
            lines.append(f" {x.title(lang)}  ", style="" if live else "dim")
            if x.action is None:
                lines.append(f"{x.param}={value}", style="bold" if live else "dim")
            else:
                lines.append(t("training_on" if self.app.training_running() else "training_off", lang),
                             style="bold")
        return lines

    def _keys(self, lang):
        tour = self.tour
        items = [("n", t("next", lang), not tour.at_end()), ("p", t("prev", lang), not tour.at_start())]
        for x in tour.lesson.experiments:
            items.append((x.key, x.param or t("train_key", lang), self._live(x)))
        items += [("0", t("reset", lang), bool(tour.overrides())), ("c", t("code", lang), True)]
        if tour.lesson.id in WORKBENCH_LESSONS:
            items.append(("w", t("workbench", lang), True))
        items += [
                  ("l", t("lang", lang), True), ("o", t("lessons", lang), True), ("?", t("help", lang), True),
                  ("q", t("quit", lang), True)]
        return items

    # --- actions ------------------------------------------------------------------------

    def _moved(self, moved: bool, edge: str) -> None:
        if moved:
            self.app.save()
            self.query_one("#tables-pane").scroll_home(animate=False)
            self.query_one("#prose-pane").scroll_home(animate=False)
            self.redraw(message="")
        else:
            self.redraw(message=t(edge, self.tour.lang))

    def action_next(self) -> None:
        """Go to the next step, into the next lesson after the last one."""
        self._moved(self.tour.next(), "end")

    def action_prev(self) -> None:
        """Go back one step, into the previous lesson before the first one."""
        self._moved(self.tour.prev(), "start")

    def action_experiment(self, key: str) -> None:
        """Move an experiment to its next value and recompute the tables."""
        tour, lang = self.tour, self.tour.lang
        x = tour.experiment(key)
        if x is None:
            self.redraw(message=t("no_key", lang, key=key))
            return
        if x.action == "train-live":
            self.app.toggle_training()
            return
        if not tour.applies(x):
            self.redraw(message=t("not_here", lang, key=key, param=x.param))
            return
        tour.press(key)
        self.redraw(message=t("pressed", lang, key=key, param=x.param, value=fmt_value(tour.value_of(x)),
                              text=x.text(lang)))

    def action_reset(self) -> None:
        """Reset this lesson's experiment settings."""
        lang = self.tour.lang
        self.redraw(message=t("reset_done" if self.tour.reset() else "reset_none", lang))

    def action_code(self) -> None:
        """Show the engine code behind the current table."""
        from .code import CodeScreen
        self.app.push_screen(CodeScreen())

    def action_language(self) -> None:
        """Switch between Chinese and English, keeping the step and the settings."""
        self.app.set_language("en" if self.tour.lang == "zh" else "zh")

    def action_overview(self) -> None:
        """Show the lessons and the progress in each."""
        self.app.open_overview()

    def action_workbench(self) -> None:
        """Open the sizing workbench with this step's model (params and kvcache lessons)."""
        if self.tour.lesson.id not in WORKBENCH_LESSONS:
            self.redraw(message=t("no_workbench", self.tour.lang))
            return
        params = self.tour.result().params
        fields = {_TO_WORKBENCH[k]: v for k, v in params.items() if k in _TO_WORKBENCH}
        if "tied" in params:
            fields["tied"] = "on" if params["tied"] else "off"
        if fields.get("head_dim") is not None and "d_model" in fields and fields["d_model"] % fields["heads"] == 0 \
                and fields["head_dim"] == fields["d_model"] // fields["heads"]:
            fields["head_dim"] = None  # derived: leave the field empty, as the preset does
        self.app.open_workbench(**fields)

    def action_help(self) -> None:
        """Show every key."""
        from .help import HelpScreen
        self.app.push_screen(HelpScreen())

    def action_quit(self) -> None:
        """Save the place and quit."""
        self.app.save()
        self.app.exit()
