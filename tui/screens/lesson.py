"""The lesson screen: one step as one screen (tui/page.py says what it shows, tui/layout/screen.py where), the
keys that run its experiments, and the marks that show what the last key changed."""

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static

from engine.errors import EngineError, NoModel
from engine.views import fmt_value

from .. import page
from ..fill import fill
from ..i18n import t
from ..layout import screen as page_layout
from ..widgets.lines import Lines
from .asking import Asking
from .editing import MAX_TYPED, Editing, Line

BROKEN = (KeyError, IndexError, ValueError)  # what a step that names what its view lacks raises as it is drawn


class LessonScreen(Asking, Editing, Screen):
    """One step of one lesson at a time."""

    AUTO_FOCUS = ""  # nothing takes the focus but the typing line (e), while it is open: the keys are the screen's
    # Textual's Screen repaints itself whole as its focus moves (Screen.focused is a reactive that repaints):
    # 5.5 KB over a pty each time the typing line opens or closes. What the focus changes is the line itself,
    # which repaints on its own.
    focused: Reactive[Widget | None] = Reactive(None, repaint=False)
    BINDINGS = [
        Binding("n,right", "next", "next", show=False),
        Binding("p,left", "prev", "back", show=False),
        *[Binding(str(i), f"experiment('{i}')", f"experiment {i}", show=False) for i in range(1, 10)],
        Binding("0", "reset", "reset", show=False),
        Binding("t", "all_rows", "all rows", show=False),
        Binding("c", "code", "code", show=False),
        Binding("l", "language", "language", show=False),
        Binding("o", "overview", "lessons", show=False),
        Binding("w", "workbench", "workbench", show=False),
        Binding("e", "edit", "type a setting", show=False),
        Binding("escape", "close_editor", "cancel", show=False),
        Binding("question_mark", "help", "help", show=False),
        Binding("q", "quit", "quit", show=False),
        # the body takes no focus (a focus moving to the typing line and back would repaint it all), so the
        # screen scrolls it: a page of a learner's own lessons may be longer than the window
        Binding("up", "scroll('up')", "scroll up", show=False),
        Binding("down", "scroll('down')", "scroll down", show=False),
        Binding("pageup", "scroll('page_up')", "page up", show=False),
        Binding("pagedown", "scroll('page_down')", "page down", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield Lines(id="title")
        with VerticalScroll(id="body", can_focus=False):
            yield Lines(id="page")
        yield Lines(id="message")
        with Vertical(id="editing"):  # in place of the message lines while the learner types (e)
            yield Line(id="editor", max_length=MAX_TYPED, compact=True, select_on_focus=False)
            yield Static(id="editor-note")
        yield Lines(id="keys")
        yield Static(id="small")

    def __init__(self):
        super().__init__()
        self._drawn: dict[str, object] = {}
        self._marks = page.Marks()
        self._note: tuple | None = None   # (head, tail, style) in the message lines; None: what the keys do
        self._pressed = None              # (experiment, result before, value before) while a slow view computes
        self._painted = False             # until the first frame is up, keys are lit by the cheap test (see _lit)
        self._held_lit = None             # {key: lit} kept from before a press until its frame is up
        self._computing = None            # (view, settings) of the slow view a thread is computing (_compute)
        self._posing = None               # the key whose question waits for _computing (Asking._ask)
        self.footer: list[page.Key] = []  # what the footer shows: the tests read which keys are lit
        self.asking = None                # a quiz.Posed: the question waiting for an answer before its key acts
        self.typed = ""                   # what the learner has typed of a number answer
        self.revealed = None              # (quiz.Posed, the choice): the answer's reveal, until the next key

    def on_mount(self) -> None:
        self._redraw()  # now, before the first layout: the first frame written is the step itself
        self.call_after_refresh(self._first_paint_done)

    def _first_paint_done(self) -> None:
        self._painted = True
        self.redraw()

    def _lit(self, experiment) -> bool:
        """Whether an experiment's key is lit: it must change what the step shows. Finding out runs the
        view at the next value, so the very first frame uses the cheap test and the exact one follows."""
        if self._held_lit is not None and experiment.key in self._held_lit:
            return self._held_lit[experiment.key]
        return self.tour.applies(experiment) if self._painted else self.tour.takes(experiment)

    def _hold_lit(self) -> None:
        """Until the next frame is up, light the keys as they were lit: a press shows its result without
        first running the view at every key's next value, and the exact test follows (_release_lit)."""
        self._held_lit = {item.key: item.live for item in self.footer if item.key}
        self.call_after_refresh(self._release_lit)

    def _release_lit(self) -> None:
        if self._held_lit is not None:
            self._held_lit = None
            self.redraw()  # repaints only a key whose lighting changed

    @property
    def tour(self):
        return self.app.tour

    def check_action(self, action: str, parameters) -> bool | None:
        """While the window is too small, only quitting, help and the language work: nothing moves unseen.
        After q, no key does anything: the place saved is where q was pressed."""
        if self.app.ending:
            return False
        if self.has_class("-small") and action not in ("quit", "help", "language"):
            return False
        return True

    # --- drawing ------------------------------------------------------------------------

    def on_resize(self) -> None:
        self.query_one("#body").scroll_home(animate=False)
        self.redraw()

    def _set(self, widget_id: str, key, make) -> None:
        """Update a part only when its inputs have changed; the part repaints only the lines that differ."""
        if self._drawn.get(widget_id) != key:
            widget, content = self.query_one(f"#{widget_id}"), make()
            self._drawn[widget_id] = key  # only once made: a part that failed is made again next time
            widget.update(content) if isinstance(widget, Static) else widget.show(content)

    def say(self, head: str = "", tail: str = "", style: str = "italic") -> None:
        """Put a note in the message lines until the next key; redraw. A note takes the place of an answer's
        reveal; a question waiting stays (say() alone, as the language changes, keeps the reveal too)."""
        self._note = (head, tail, style) if head or tail else None
        if self._note is not None:
            self.revealed = None
        self.redraw()

    def redraw(self) -> None:
        """Draw the current step; every part is recomputed only if its inputs changed."""
        if self.is_mounted:
            self._redraw()

    def _redraw(self) -> None:
        w, h = self.app.size
        small = w < page_layout.MIN_WIDTH or h < page_layout.MIN_HEIGHT
        if small and self.editing:  # the line goes with the message lines it stands in for
            self.close_editor()
        self.set_class(small, "-small")
        if small:
            self._set("small", ("small", w, h, self.tour.lang), lambda: Text(t("too_small", self.tour.lang, w=w, h=h)))
            return
        try:
            self._draw(w, h)
        except BROKEN as err:
            if self.tour.typed.get(self.tour.lesson.id):  # a value typed on another step: taken back, said
                self.tour.typed.pop(self.tour.lesson.id)
                self.say(tail=t("edit_taken_back", self.tour.lang))
                return
            self._broken(err, w)

    def _broken(self, err: Exception, w: int) -> None:
        """A learner's own step names what its view lacks (the deep check after the first frame names it too):
        say so inline instead of the body. In the shipped lessons, which the tests check, it is a bug."""
        if self.app.own_folder is None:
            raise err
        from ..own_lessons import broken_note

        self._set("page", ("broken", self.tour.lesson_index, self.tour.step_index), Text)
        self._note = ("", broken_note(err, self.app.own_folder, self.tour.lang), "bold red")
        self._draw_message(w)

    def _draw(self, w: int, h: int) -> None:
        tour, lang = self.tour, self.tour.lang
        run = tour.pending_run()
        if run is not None:  # a slow view: compute it off the UI thread, and say so meanwhile
            self._set("message", ("computing", run, w),
                      lambda: page_layout.message_lines("", tour.computing_text(), w, "italic"))
            if self._computing is None:  # one thread at a time: when it is done, a view still pending starts the next
                self._computing = run
                self._compute(*run)
            return
        try:
            result = None if tour.on_recap() else tour.result()
            other = None if tour.on_recap() else tour.compare_result()
        except EngineError as err:  # a learner's own lesson may ask for something the engine refuses
            if isinstance(err, NoModel):  # the real model's lesson before `xf-tour model get`
                self._no_model(err, w, h)
                return
            self._refused(err)
            return
        where = (lang, tour.lesson_index, tour.step_index)
        title = page_layout.title_lines(tour.lesson, tour.step_index, tour.pages(), tour.page_title(), lang, w)
        self._set("title", ("title", where, w), lambda: Text("\n").join(title))
        items = self.footer = page.footer_items(tour, self._lit, self._marks, self.app.training.running,
                                                self.asking, self.editing)
        footer = page_layout.footer_lines(items, w)
        usual = items if self.asking is None and not self.editing else page.footer_items(
            tour, self._lit, self._marks, self.app.training.running)  # a question or the typing line: the step's own
        footer = [Text()] * (page.footer_height(tour, usual, w) - len(footer)) + footer  # the same height at every
        #                       value and while a question waits: the body never moves, and the keys stay at the bottom
        self._set("keys", ("keys", tuple((i.key, i.label, i.live, i.marked, i.newline) for i in items), w,
                           len(footer)),
                  lambda: Text("\n").join(footer))
        height = h - len(title) - page_layout.MESSAGE_LINES - len(footer)  # what the body has: it fills it all
        training = self.app.training.panel() if self._training_here() else None
        over = self.query_one("#body").has_class("-overflow")  # then the scroll bar takes a column
        self._set("page", ("body", where, result, other, w, height, over, self._marks, str(training)),
                  lambda: self._body(w - over, training).text(height - over))
        self._draw_message(w)
        self.call_after_refresh(self._mark_overflow)

    def _no_model(self, err: EngineError, w: int, h: int) -> None:
        """A real-model step without a model file: its title, one line saying how to get one, the keys that move."""
        tour, lang = self.tour, self.tour.lang
        where = (lang, tour.lesson_index, tour.step_index)
        title = page_layout.title_lines(tour.lesson, tour.step_index, tour.pages(), tour.page_title(), lang, w)
        self._set("title", ("title", where, w), lambda: Text("\n").join(title))
        items = self.footer = page.footer_items(tour, self._lit, self._marks, self.app.training.running)
        footer = page_layout.footer_lines(items, w)
        self._set("keys", ("keys", tuple((i.key, i.label, i.live, i.marked, i.newline) for i in items), w,
                           len(footer)), lambda: Text("\n").join(footer))
        line = err.text(lang)
        self._set("page", ("no-model", where, line, w), lambda: Text("\n").join(
            page_layout.wrap_lines(line, w - 2 * page_layout.PAD, "bold")))
        self._set("message", ("no-model", where, w), Text)

    def _refused(self, err: EngineError) -> None:
        """Say inline what the engine refuses: a learner's own lesson, or a cached one whose settings the view
        alone checks (lessons/cache.py), may ask for it."""
        self._note = ("", t("refused", self.tour.lang, message=err.text(self.tour.lang)), "bold red")
        self._draw_message(self.app.size.width)

    def _body(self, w: int, training):
        tour = self.tour
        if tour.on_recap():
            return page.recap_body(tour, w)
        return page.body(tour.result(), tour.compare_result(), tour.step, tour.lang, w, self._marks, training,
                         colors=self.app.heat_colors)

    def _draw_message(self, w: int) -> None:
        lines = self.question_lines()
        if lines is not None:
            head, tail, style = lines
            self._set("message", ("quiz", head, tail, style, w),
                      lambda: page_layout.message_lines(head, tail, w, style))
        elif self._note is not None:
            head, tail, style = self._note
            self._set("message", ("note", self._note, w), lambda: page_layout.message_lines(head, tail, w, style))
        else:
            idle = page.idle_message(self.tour, w, self._lit)
            self._set("message", ("idle", idle, w), lambda: page_layout.message_lines("", idle, w, "dim"))

    def _mark_overflow(self) -> None:
        """If the body must scroll (only a learner's own over-long step can), say so plainly on its border."""
        body = self.query_one("#body")
        over = body.max_scroll_y > 0
        subtitle = t("more_below", self.tour.lang) if over else ""
        if body.has_class("-overflow") != over or body.border_subtitle != subtitle:  # else: no repaint
            body.set_class(over, "-overflow")
            body.border_subtitle = subtitle
            self.redraw()

    def _training_here(self) -> bool:
        """The live-training panel shows only on the step whose key runs it."""
        return any(x.action is not None and self.tour.takes(x) for x in self.tour.lesson.experiments) \
            and self.app.training.panel() is not None

    @work(thread=True, exclusive=True, group="compute")
    def _compute(self, view_id: str, settings: dict) -> None:
        """In a thread: compute the view at the settings the step had when the thread started, into the view
        cache, then draw. Never the tour itself: the learner may have moved on meanwhile, to a recap even."""
        from textual.worker import get_current_worker

        from ..tour_state import run_view

        try:
            run_view(view_id, settings)
            refused = None
        except EngineError as err:  # no model file, a file the engine refuses: said on the step, never a crash
            refused = err
        if not get_current_worker().is_cancelled:
            try:
                self.app.call_from_thread(self._computed, view_id, settings, refused)
            except RuntimeError:  # the app closed meanwhile
                pass

    def _computed(self, view_id: str, settings: dict, refused: EngineError | None = None) -> None:
        """Back on the UI thread. What was computed is cached, not drawn: if the step it was for has been left,
        the redraw shows the step on screen now, and starts its own computation if that one still waits. What
        the view refused is kept for those settings (tour.refused), so the step says it instead of waiting."""
        from ..tour_state import _key

        self._computing = None
        if refused is not None:
            self.tour.refused[_key(view_id, settings)] = refused
        if self._posing is not None:  # a question waited for this: asked now (or, if it was the step's own, next)
            self._ask_posed()
        elif self._pressed is not None and not self.tour.pending():
            x, before, was = self._pressed
            self._pressed = None
            self._report(x, before, was)
        else:
            self.redraw()

    # --- actions ------------------------------------------------------------------------

    def arrived(self) -> None:
        """A new step is on screen: no marks, no note, no question, no typing line, the body at its top."""
        if self.editing:  # Ctrl+P, say, moved on while the line was open
            self.close_editor()
        self._marks, self._pressed, self.asking, self.revealed, self._posing = page.Marks(), None, None, None, None
        self.tour.refused.clear()  # what a slow view refused is asked again: a model fetched meanwhile is found
        self.query_one("#body").scroll_home(animate=False)
        self.say()

    def _moved(self, moved: bool, edge: str) -> None:
        if moved:
            self.app.save()
            self.arrived()
        else:
            self.say(tail=t(edge, self.tour.lang))

    def action_next(self) -> None:
        """Go to the next step, into the next lesson after the last one; a question waiting is skipped."""
        self._skip_question()
        if self.tour.at_end():  # after the last recap: the tour's end, its score and what to revisit
            self.app.open_end()
            return
        self._moved(self.tour.next(), "end")

    def action_prev(self) -> None:
        """Go back one step, into the previous lesson before the first one; a question waiting is skipped."""
        self._skip_question()
        self._moved(self.tour.prev(), "start")

    def action_experiment(self, key: str) -> None:
        """Move an experiment to its next value, recompute, and mark what changed."""
        try:
            self._experiment(key)
        except EngineError as err:  # the step's settings, or the next value, are ones the view refuses
            self._refused(err)

    def _experiment(self, key: str) -> None:
        tour, lang, self._posing = self.tour, self.tour.lang, None  # a question waiting on its thread is dropped
        x = tour.experiment(key)
        if x is None:
            self.say(tail=t("no_key", lang, key=key))
            return
        if not tour.takes(x):
            self.say(tail=t("not_here_action" if x.action else "not_here", lang, key=key, param=x.param))
            return
        if x.action == "train-live":
            self.app.training.toggle(key)
            return
        if not tour.applies(x):
            self.say(tail=t("no_change", lang, key=key, param=x.param))
            return
        if self._ask(key):
            return
        self._press(key)

    def _press(self, key: str) -> None:
        """Press an experiment's key (it changes the step: _experiment looked): the view at its next value."""
        tour = self.tour
        x = tour.experiment(key)
        before, was = tour.result(), tour.value_of(x)
        tour.press(key)
        if tour.pending():
            self._pressed, self._marks = (x, before, was), page.Marks()
            self.redraw()
            return
        try:
            self._report(x, before, was)
        except EngineError as err:
            self._refused(err)
        except BROKEN as err:
            self._broken(err, self.app.size.width)

    def _report(self, x, before, was) -> None:
        """Mark what the press changed and say it: the setting and the prose's numbers, before -> after."""
        after = self.tour.result()
        setting = (x.key, x.param, fmt_value(was), fmt_value(self.tour.value_of(x)))
        self._mark(before, after, setting, fill(self.tour.step.hint(x, self.tour.lang), after, self.tour.lang))

    def _report_typed(self, name: str, before, was) -> None:
        """Mark what a typed setting changed and say it, as a key's press is said (_report)."""
        from .editing import typed_note

        after = self.tour.result()
        shown = page.brief if page.is_text(after.view, name) else str  # a text of 200 characters is begun
        setting = ("e", name, shown(fmt_value(was)), shown(fmt_value(after.params.get(name))))
        self._mark(before, after, setting, typed_note(after, name, self.tour.lang))

    def _mark(self, before, after, setting: tuple, tail: str) -> None:
        """Mark what changed from `before` to `after`, and say the setting (key, name, before, after) with the
        numbers that moved (tui/report.py), then `tail`."""
        from ..report import changed_refs, figures, head_line

        tour, lang = self.tour, self.tour.lang
        self._marks, changed = changed_refs(tour.step, before, after, lang)
        head = head_line(setting, figures(tour.step, before, after, self._marks, changed, lang), lang,
                         self.app.size.width)
        self._hold_lit()
        self.say(head, tail)

    def action_reset(self) -> None:
        """Reset this lesson's experiment settings."""
        self._marks = page.Marks()
        self.say(tail=t("reset_done" if self.tour.reset() else "reset_none", self.tour.lang))

    def action_all_rows(self) -> None:
        """Show every table, row and figure of the current step's view."""
        try:
            hidden = not self.tour.on_recap() and self.tour.hides_rows()
        except EngineError as err:
            self._refused(err)
            return
        if not hidden:
            self.say(tail=t("nothing_hidden", self.tour.lang))
            return
        from .tables import TablesScreen
        self.app.push_screen(TablesScreen())

    def action_code(self) -> None:
        """Show the engine code behind the current table."""
        if self.tour.on_recap() or not self.tour.has_code():
            self.say(tail=t("no_code", self.tour.lang))
            return
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
        if self.tour.lesson.id not in page.WORKBENCH_LESSONS or self.tour.on_recap():
            self.say(tail=t("no_workbench", self.tour.lang))
            return
        self.app.open_workbench(**workbench_fields(self.tour.result().params))

    def action_edit(self) -> None:
        """Open the line where a setting, or a sentence, is typed (tui/screens/editing.py)."""
        if self.tour.on_recap() or self.asking is not None:
            self.say(tail=t("no_edit", self.tour.lang))
            return
        self.open_editor()

    def action_scroll(self, where: str) -> None:
        """Scroll the body: up, down, page_up or page_down."""
        getattr(self.query_one("#body"), f"scroll_{where}")(animate=False)

    def action_close_editor(self) -> None:
        """Close the typing line, nothing applied."""
        if self.editing:
            self.close_editor()

    def action_help(self) -> None:
        """Show every key."""
        from .help import HelpScreen
        self.app.push_screen(HelpScreen())

    def action_quit(self) -> None:
        """Save the place and quit."""
        self.app.action_quit_saving()


_TO_WORKBENCH = {"preset": "preset", "layers": "layers", "hidden": "d_model", "heads": "heads",
                 "kv_heads": "kv_heads", "head_dim": "head_dim", "ffn": "d_ff", "vocab": "vocab",
                 "context": "context", "batch": "batch", "dtype": "cache"}


def workbench_fields(params: dict) -> dict:
    """The workbench's fields for a step's model; a head_dim that follows from the width is left empty."""
    fields = {_TO_WORKBENCH[k]: v for k, v in params.items() if k in _TO_WORKBENCH}
    if "tied" in params:
        fields["tied"] = "on" if params["tied"] else "off"
    if fields.get("head_dim") is not None and "d_model" in fields and fields["d_model"] % fields["heads"] == 0 \
            and fields["head_dim"] == fields["d_model"] // fields["heads"]:
        fields["head_dim"] = None  # derived: leave the field empty, as the preset does
    return fields
