"""The xf-tour Textual app: little more than the tour, the progress store and the screens."""

import asyncio
import os
import sys
from pathlib import Path

from textual import events
from textual.app import App
from textual.await_complete import AwaitComplete
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input

from .crash import one_line, write_crash_report  # run_tour's report of a crash
from .heat import mode_for
from .i18n import default_lang, t
from .keys import KeyGate, bounded_resize, gated
from .palette import LessonCommands, Palette
from .screens.lesson import LessonScreen
from .state import Store
from .tour import Tour


class KeysReleased(Message):
    """A new screen has its focus: the keys held while it was built can be handled now."""


class XfTourApp(App):
    """Step through the lessons with live tables and experiment keys."""

    CSS_PATH = "app.tcss"
    TITLE = "xf-tour"
    COMMANDS = {LessonCommands}  # lessons and steps only: the system commands speak English alone
    BINDINGS = [Binding("ctrl+c", "quit_saving", "quit", show=False)]  # not Textual's English-only toast
    ENABLE_COMMAND_PALETTE = True
    report_crashes = False  # run_tour() sets it: a crash's traceback goes to a report file, not the screen
    _hold_timer = None      # the timer that ends a hold of the keys (hold_keys)
    open_files = True       # whether weights=FILE may open a file: not for a learner over SSH, nor in a browser

    def __init__(self, tour: Tour, store: Store, lesson: str | None = None, bench=None, colors: str | None = None):
        super().__init__()
        self.key_gate = KeyGate(self)  # keys faster than the tour can act are dropped (tui/keys.py)
        self.tour, self.store, self._open, self._bench = tour, store, lesson, bench
        self._training = None  # the live run of the heads lesson: running, stop, lines
        self._unsaved_said = False  # a failed save is said once a session; later ones retry quietly
        self._held_keys: list | None = [] if bench is not None else None  # keys typed while fields are built
        self._later, self.own_folder = None, None  # a learner's own lessons: the checks after the first frame
        self.lesson_problems: list = []  # what those checks found
        self.results = None  # what starts keep of the steps they open on (recall)
        # how heatmaps are shaded (tui/heat.py): for this terminal, unless a test asks for one rendering
        self.heat_colors = colors or mode_for(self.no_color, self.console.color_system)
        if bench is None:  # open where the tour starts now: the command line deep-checks that step first
            self._resumed = lesson is None and tour.progress.lesson is not None
            if lesson is not None:
                tour.goto(lesson)
            else:
                tour.resume()

    def recall(self, results) -> None:
        """Draw the first frame from what an earlier start kept of the step it opens on, if it did, and keep
        this start's for the next (lessons.cache.Results, Tour.recall). The command line does this; make_app
        leaves it out, as it leaves out the parsed-lessons cache."""
        self.results = results
        self.tour.recall(results)

    def check_later(self, check, folder) -> None:
        """After the first frame, run check() (the deep check of a learner's own lessons) in a thread, and say
        what it finds inline."""
        self._later, self.own_folder = check, folder

    def get_default_screen(self):
        """The first screen: the lesson, composed with the app so that its first frame shows the step. Pushed
        over a blank screen from on_mount, the lesson was laid out while the app still held its first repaint,
        and laid out again after it."""
        return super().get_default_screen() if self._bench is not None else LessonScreen()

    def on_mount(self) -> None:
        if self._bench is not None:  # xf-tour calc: the workbench on its own
            from .screens.calc import CalcScreen
            self.push_screen(CalcScreen(self._bench, standalone=True))
            return
        self.call_after_refresh(self._confirm_results)  # numpy loads after the first frame, if it can
        self.call_after_refresh(self._first_save)  # the first frame need not wait for the disk
        if self._later is not None:
            self.call_after_refresh(lambda: self.run_worker(self._check_in_thread, thread=True, group="checks"))

    def _confirm_results(self) -> None:
        """After the first frame: compute what it showed from kept results, and redraw if the engine gives
        something else; keep what this start computed for the next one."""
        if self.tour.recalled and self.tour.confirm():
            self._redraw_lessons()
        self.keep_results()

    def keep_results(self) -> None:
        """Keep what the step on screen computes at its own settings: a start may open on it (recall)."""
        if self.results is None:
            return
        from .tour import is_cached, run_view

        for view, settings in self.tour.own_runs():
            if is_cached(view, settings):
                self.results.keep(view, settings, run_view(view, settings))
        self.results.save()

    def _check_in_thread(self) -> None:
        """Runs in a worker thread: the learner's lessons, deep-checked (an unchanged file once)."""
        problems = self._later()
        if problems and not self.ending:
            try:
                self.call_from_thread(self._found_problems, problems)
            except RuntimeError:  # the app closed meanwhile
                pass

    def _found_problems(self, problems: list) -> None:
        from .own_lessons import problems_note

        self.lesson_problems = problems
        screen = self.lesson_screen()
        if screen is not None:
            head, tail = problems_note(problems, self.own_folder, self.tour.lang)
            screen.say(head=head, tail=tail, style="bold red")

    def _first_save(self) -> None:
        """Record where the tour opened; say in one line if it resumed or if the progress was broken, and in
        another if it cannot be saved: a load problem never hides a save problem."""
        lang, store = self.tour.lang, self.store
        name = store.broken.name if store.broken else None  # where a damaged file was moved
        notice = t(f"progress_{store.problem}", lang, name=name) if store.problem else None
        if notice is None and self._resumed:
            notice = t("resuming", lang, order=self.tour.lesson.order, title=self.tour.lesson.title(lang),
                       step=self.tour.step_index + 1)
        unsaved = None if self.save(say=False) or store.hands_off else t(f"progress_save_{store.why}", lang)
        head, tail = (notice, unsaved) if notice and unsaved else ("", notice or unsaved)
        screen = self.lesson_screen()
        if tail and screen is not None:
            screen.say(head=head, tail=tail)

    @property
    def ending(self) -> bool:
        """Whether the app is on its way out: quit (the return code is set), or crashed (it is 1)."""
        return self.return_code is not None

    def push_screen(self, screen, *args, **kwargs):
        """Open a screen, unless the app is ending: a key typed just after q would build a screen while the
        app is taken down, and the screen would find its widgets gone (NoMatches)."""
        if self.ending:
            return AwaitComplete.nothing()
        return super().push_screen(screen, *args, **kwargs)

    def interrupt(self, signum=None, frame=None) -> None:
        """SIGINT while run_tour() runs. Ctrl+C is a key while the terminal is raw; it comes as a signal only
        as the app starts or closes, or from kill -INT. Quit saving, as the key does; once the app is
        ending, do nothing: asyncio's own handler cancelled the shutdown half-way (a CancelledError)."""
        if self.ending:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not running yet: stop where we are
            raise KeyboardInterrupt from None
        loop.call_soon_threadsafe(self.action_quit_saving)

    def _print_error_renderables(self) -> None:
        """Textual prints a crash's traceback as it exits; under run_tour() the report file has it instead
        and one line says where (XF_TOUR_DEBUG=1 keeps Textual's)."""
        if self.report_crashes and self._exception is not None and not os.environ.get("XF_TOUR_DEBUG"):
            self._exit_renderables.clear()
        super()._print_error_renderables()

    def action_command_palette(self) -> None:
        """Open the palette of lessons and steps, its prompt in the learner's language."""
        if not Palette.is_open(self):
            self.push_screen(Palette(id="--command-palette", placeholder=t("palette_prompt", self.tour.lang)))

    # --- live training (the heads lesson) --------------------------------------------------

    def training_running(self) -> bool:
        return self._training is not None and self._training["running"]

    def training_panel(self):
        """The live-training panel's text, or None when no run is going or finished."""
        if self._training is None:
            return None
        from .layout.screen import training_panel
        return training_panel(self._training["lines"])

    def toggle_training(self, key: str = "4") -> None:
        """Start training the big tiny Llama in a child process; stop it; or close the finished panel.
        `key` is the key that does this, named by the panel."""
        state = self._training
        if state is not None and state["running"]:
            state["stop"] = True
            state["run"].stop()
            return
        if state is not None:  # a finished run: close its panel
            self._training = None
            self._redraw_lessons()
            return
        from engine import tiny

        from .training import LiveRun

        run = LiveRun(tiny.CONFIGS["big"], seed=0)
        self._training = {"running": True, "stop": False, "key": key, "lines": [t("training_start", self.tour.lang)],
                          "run": run}
        self._redraw_lessons()
        self.run_worker(self._follow_training, thread=True, exclusive=True, group="train")

    def _redraw_lessons(self) -> None:
        screen = self.lesson_screen()
        if screen is not None:
            screen.redraw()

    def _show_training(self, lines: list[str]) -> None:
        if self._training is not None:
            self._training["lines"] = lines
            self._redraw_lessons()

    def _follow_training(self) -> None:
        """Runs in a worker thread: shows each reading of the child process that trains the big config in
        memory only (tui/training.py); it never writes a file. A quit cancels the worker, which ends the child."""
        import time

        from textual.worker import get_current_worker

        from engine import tiny

        state, cfg, worker = self._training, tiny.CONFIGS["big"], get_current_worker()
        reading, progress, started = {"agr": "-", "spread": "-", "curve": {}}, {"step": 0, "loss": float("nan")}, \
            time.perf_counter()
        ended = None
        try:
            for r in state["run"].readings(cancelled=lambda: worker.is_cancelled):
                ended = r.get("end")
                reading.update({k: r[k] for k in reading if k in r})
                progress.update(step=r["step"], loss=r["loss"])
                if "end" not in r:
                    self.call_from_thread(self._show_training, self._training_lines(cfg, reading, left=r["left"],
                                                                                    **progress))
        finally:
            state["run"].kill()
            state["running"] = False
        if worker.is_cancelled:
            return
        end = t("training_done" if ended == "done" else "training_stopped", self.tour.lang,
                s=time.perf_counter() - started, key=state["key"])
        self.call_from_thread(self._show_training, self._training_lines(cfg, reading, **progress)[:2] + [end])

    def on_unmount(self) -> None:
        """The app is closing: a live training run ends with it."""
        if self._training is not None and self._training["running"]:
            self._training["run"].kill()

    def _training_lines(self, cfg, reading, step, loss, left=None) -> list:
        """The panel: the step, loss and agreement; then the loss and the head-entropy spread as curves drawn
        while they come in (train() records them: the mean loss of every 20 steps, the spread every 100), the
        time left after the loss. Without `left`, the run is over."""
        from rich.cells import cell_len
        from rich.text import Text

        from .layout.charts import sparkline

        lang = self.tour.lang
        curve = reading["curve"]
        names = [t("training_loss", lang), t("training_spread_name", lang)]
        pad = max(cell_len(n) for n in names) + 1
        tail = [t("training_left", lang, s=left) if left is not None else "", reading["spread"]]
        lines = [t("training_line", lang, step=step, total=cfg.steps, loss=loss, agr=reading["agr"])]
        for name, key, end in zip(names, ("loss", "spread"), tail):
            line = Text(name + " " * (pad - cell_len(name)))
            line.append_text(sparkline(curve.get(key, []), cfg.steps, 40, self.heat_colors))
            line.append(f"  {end}")
            lines.append(line)
        return lines

    def action_quit_saving(self) -> None:
        """Quit at once, keeping the learner's place."""
        if self._bench is None:
            self.save()
            self.keep_results()  # where the next start opens
        self.exit()

    def save(self, say: bool = True) -> bool:
        """Write the progress; False when it cannot be saved, which the first time is said inline."""
        self.tour.progress.lang = self.tour.lang
        saved = self.store.save(self.tour.progress)
        if not saved and not self._unsaved_said:
            self._unsaved_said = True
            if say:  # after the step on screen has been drawn, which clears the message lines
                self.call_after_refresh(self._say_unsaved)
        return saved

    def _say_unsaved(self) -> None:
        screen = self.lesson_screen()
        if screen is not None and self.store.why is not None:
            screen.say(tail=t(f"progress_save_{self.store.why}", self.tour.lang))

    def lesson_screen(self) -> LessonScreen | None:
        for screen in self.screen_stack:
            if isinstance(screen, LessonScreen):
                return screen
        return None

    def open_lesson(self, lesson_id: str, step: int = 0) -> None:
        """Jump to a lesson's step (from the overview or the palette)."""
        self.tour.goto(lesson_id, step)
        self.save()
        screen = self.lesson_screen()
        if screen is not None:
            screen.arrived()

    def set_language(self, lang: str) -> None:
        """Switch every text in place; the step and the settings stay."""
        self.tour.lang = lang
        if self._bench is None:
            self.save()
        for screen in self.screen_stack:
            if isinstance(screen, LessonScreen):
                screen.say()
            elif hasattr(screen, "redraw"):
                screen.redraw()

    def open_end(self) -> None:
        """The end of the tour, after the last recap (screens/overview.py)."""
        from .screens.overview import EndScreen, OverviewScreen

        if not isinstance(self.screen, OverviewScreen):
            self.push_screen(EndScreen())

    def open_overview(self) -> None:
        """Show the lessons and the progress in each."""
        from .screens.overview import OverviewScreen

        if not isinstance(self.screen, OverviewScreen):
            self.push_screen(OverviewScreen())

    def open_workbench(self, **fields) -> None:
        """Open the sizing workbench over the tour, seeded with a model's fields."""
        from .screens.calc import CalcScreen
        from .workbench import Workbench

        if not any(type(s).__name__ == "CalcScreen" for s in self.screen_stack):
            self.hold_keys()
            self.push_screen(CalcScreen(Workbench.start(**fields)))

    # --- keys typed while a screen is built -------------------------------------------------
    # A key reaches the app twice: first it is forwarded to the focused widget, then it bubbles back and
    # the app runs its binding. So the keys typed just after w were already on their way through the
    # lesson screen when the workbench opened; coming back they found no binding there and a digit was
    # lost, while the keys after them went straight to a field. So from the push until the new screen
    # has focus the app holds every key, either way, then handles each in turn before the next.

    def hold_keys(self) -> None:
        """Hold key presses until release_keys(), or two seconds at most."""
        self._held_keys = []
        if self._hold_timer is not None:
            self._hold_timer.stop()
        self._hold_timer = self.set_timer(2.0, self.release_keys)

    def release_keys(self) -> None:
        """Handle the held keys from the app's own queue, so that any key already waiting comes after them."""
        self.post_message(KeysReleased())

    async def on_keys_released(self, message: KeysReleased) -> None:
        if self._held_keys is None:
            return
        if self.ending or not self.is_running:  # a screen opened just before the app was taken down
            self._held_keys = None
            return
        held, self._held_keys = self._held_keys, None
        if self._hold_timer is not None:  # released in time: the timer must not end a later hold early
            self._hold_timer.stop()
            self._hold_timer = None
        for i, key in enumerate(held):
            if self._held_keys is not None:  # the last key opened a screen: the rest wait for that one too
                self._held_keys[:0] = held[i:]
                return
            if await self._check_bindings(key.key, priority=True) or await self._check_bindings(key.key):
                continue
            focused = self.focused
            if key.is_printable and isinstance(focused, Input) and not focused.disabled:
                focused.insert_text_at_cursor(key.character)

    async def on_event(self, event: events.Event) -> None:
        self.key_gate.receive(event)
        if isinstance(event, events.Resize) and not bounded_resize(event):
            return  # sides that are not numbers (tui/keys.py)
        if self._held_keys is not None and isinstance(event, events.Key):
            self.key_gate.hold(self._held_keys, event)
            return
        await super().on_event(event)

    def get_driver_class(self):
        """Textual's driver for this terminal, its keys bounded (tui/keys.py)."""
        return gated(super().get_driver_class())


def make_app(lang: str | None = None, lesson: str | None = None, lessons_dir: Path | None = None,
             state_dir: Path | None = None, lessons=None, bench=None, colors: str | None = None,
             asks: bool | None = None, weights: str | None = None, open_files: bool = True) -> XfTourApp:
    """Build the app the way the command line does; the tests use this too, and may fix `colors` (tui/heat.py)
    so that a snapshot does not depend on the terminal the tests run in."""
    from lessons.loader import SHIPPED, load_lessons

    store = Store(state_dir)
    progress = store.load()
    if lessons is None:
        lessons, _ = load_lessons(lessons_dir or SHIPPED)
    chosen = lang or progress.lang or default_lang()
    if asks is None:  # XF_TOUR_QUESTIONS=off: the keys act without asking (a teacher showing the tour)
        asks = os.environ.get("XF_TOUR_QUESTIONS", "on").lower() != "off"
    app = XfTourApp(Tour(lessons, progress, chosen, asks=asks, weights=weights), store, lesson, bench, colors)
    app.open_files = open_files
    return app


def run_tour(app: XfTourApp) -> int:
    """Run the app for the command line and give the exit status: the app's own; 129 after a hang-up, 143
    after SIGTERM, with the place saved (tui/hangup.py); or 1 after a crash, whose traceback goes to a report
    file that one line on stderr names."""
    import gc
    import signal

    from .hangup import HangUp, watch_terminal

    app.report_crashes = True
    # What start-up has built lives as long as the app: frozen, the collector no longer walks it, as a full
    # collection did just before the first frame (about 25 ms). Thawed after, for a caller that runs on.
    gc.freeze()
    hang_up = HangUp(app)  # SIGHUP (the SSH link dropped; also sent by watch_terminal) and SIGTERM: save, end
    handlers = {signal.SIGINT: app.interrupt, signal.SIGHUP: hang_up, signal.SIGTERM: hang_up}
    previous = {number: signal.signal(number, handler) for number, handler in handlers.items()}
    stop_watching = watch_terminal()
    try:
        app.run()
    finally:
        stop_watching()
        for number, handler in previous.items():
            signal.signal(number, handler)
        gc.unfreeze()
    error = app._exception  # Textual keeps the first unhandled exception here (run_test re-raises it)
    if error is None:
        return hang_up.status or app.return_code or 0
    path = write_crash_report(error, app.store.folder)
    what = one_line(f"{type(error).__name__}: {error}")
    lang = app.tour.lang
    print(t("crash", lang, error=what, path=path) if path else t("crash_no_report", lang, error=what),
          file=sys.stderr)
    return hang_up.status or app.return_code or 1
