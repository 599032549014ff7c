"""The xf-tour Textual app: little more than the tour, the progress store and the screens."""

from pathlib import Path

from textual.app import App
from textual.binding import Binding

from .commands import LessonCommands, Palette
from .i18n import t
from .screens.lesson import LessonScreen
from .state import Store
from .tour import Tour


class XfTourApp(App):
    """Step through the lessons with live tables and experiment keys."""

    CSS_PATH = "app.tcss"
    TITLE = "xf-tour"
    COMMANDS = {LessonCommands}  # lessons and steps only: the system commands speak English alone
    BINDINGS = [Binding("ctrl+c", "quit_saving", "quit", show=False)]  # not Textual's English-only toast
    ENABLE_COMMAND_PALETTE = True

    def __init__(self, tour: Tour, store: Store, lesson: str | None = None, bench=None):
        super().__init__()
        self.tour, self.store, self._open, self._bench = tour, store, lesson, bench

    def on_mount(self) -> None:
        if self._bench is not None:  # xf-tour calc: the workbench on its own
            from .screens.calc import CalcScreen
            self.push_screen(CalcScreen(self._bench, standalone=True))
            return
        if self._open is not None:
            self.tour.goto(self._open)
        else:
            self.tour.resume()
        self.push_screen(LessonScreen())
        self.call_after_refresh(self._first_save)  # the first frame need not wait for the disk

    def _first_save(self) -> None:
        """Record where the tour opened; say in one line if the progress was broken or cannot be kept."""
        lang, problem = self.tour.lang, self.store.problem
        notice = t(f"progress_{problem}", lang, path=self.store.path) if problem else None
        if not self.save() and notice is None:
            notice = t("progress_unwritable", lang, path=self.store.folder)
        screen = self.lesson_screen()
        if notice and screen is not None:
            screen.redraw(notice)

    def action_command_palette(self) -> None:
        """Open the palette of lessons and steps, its prompt in the learner's language."""
        if not Palette.is_open(self):
            self.push_screen(Palette(id="--command-palette", placeholder=t("palette_prompt", self.tour.lang)))

    def action_quit_saving(self) -> None:
        """Quit at once, keeping the learner's place."""
        if self._bench is None:
            self.save()
        self.exit()

    def save(self) -> bool:
        """Write the progress; False when this folder cannot be written."""
        self.tour.progress.lang = self.tour.lang
        return self.store.save(self.tour.progress)

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
            screen.redraw(message="")

    def set_language(self, lang: str) -> None:
        """Switch every text in place; the step and the settings stay."""
        self.tour.lang = lang
        if self._bench is None:
            self.save()
        for screen in self.screen_stack:
            if hasattr(screen, "redraw"):
                screen.redraw(message="")

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
            self.push_screen(CalcScreen(Workbench.start(**fields)))


def make_app(lang: str | None = None, lesson: str | None = None, lessons_dir: Path | None = None,
             state_dir: Path | None = None, lessons=None, bench=None) -> XfTourApp:
    """Build the app the way the command line does; the tests use this too."""
    from lessons.loader import SHIPPED, load_lessons

    from .cli import default_lang

    store = Store(state_dir)
    progress = store.load()
    if lessons is None:
        lessons, _ = load_lessons(lessons_dir or SHIPPED)
    chosen = lang or progress.lang or default_lang()
    return XfTourApp(Tour(lessons, progress, chosen), store, lesson, bench)
