"""Where the learner is in the tour and what the experiment keys have set: plain Python, no UI.

The Textual screens read and change a Tour; the tests drive it directly too.
"""

from dataclasses import dataclass, field

from engine.errors import EngineError
from engine.views import Result, Tr, get_view
from lessons.loader import applies as _applies

from .i18n import t
from .progress import Progress

YOURS = "yours"  # engine.views.tiny.YOURS, the run of the learner's own weights; not imported: that would bring
#                  numpy in before the first frame (a test keeps the two equal)

RECAP = "recap"  # the id of the page after a lesson's last step
RECAP_TITLE = Tr("Recap", "小结")

# Computed off the UI thread, never just to light a key: the BPE view learns its merges from the lessons' text
# (about half a second) whenever the lesson files differ from those engine/data/bpe-merges.json was learned from.
SLOW_VIEWS = ("bpe", "real-params", "real-tokens", "real-next", "real-attention", "real-stream", "real-lens",
              "real-generate")  # computed in a thread, the screen saying so: BPE's merges, the real model's load
_CACHE: dict = {}
_CACHE_SIZE = 256


def _key(view_id: str, settings: dict) -> tuple:
    return view_id, tuple(sorted(settings.items()))


def run_view(view_id: str, settings: dict) -> Result:
    """Compute (or recall) a view at these settings: going back a step or toggling a key twice costs nothing."""
    key = _key(view_id, settings)
    if key not in _CACHE:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))  # the oldest entry
        _CACHE[key] = get_view(view_id).run(dict(settings))
    return _CACHE[key]


def forget_yours() -> None:
    """Drop every result computed from the learner's own weights (run=yours): they have just changed."""
    for key in [k for k in _CACHE if ("run", YOURS) in k[1]]:
        del _CACHE[key]


def open_weights(path) -> str:
    """The learner's own weights at `path`, as run=yours from now on (engine.views.tiny.use_weights): the
    file's name; ParamError when it is not a file that train wrote, and then the weights before stay."""
    from engine.views.tiny import use_weights

    name = use_weights(path)
    forget_yours()
    return name


def is_cached(view_id: str, settings: dict) -> bool:
    return _key(view_id, settings) in _CACHE


@dataclass
class Tour:
    lessons: list
    progress: Progress = field(default_factory=Progress)
    lang: str = "en"
    lesson_index: int = 0
    step_index: int = 0
    presses: dict = field(default_factory=dict)  # lesson id -> {experiment key: index into its values}
    typed: dict = field(default_factory=dict)    # lesson id -> {setting: the value the learner typed (e)}
    recalled: dict = field(default_factory=dict)  # run key -> a Result an earlier start kept (recall, confirm)
    refused: dict = field(default_factory=dict)   # run key -> the EngineError a slow view's thread met there
    sketch: dict = field(default_factory=dict)    # view id -> (its parameters' names, whether it names code)
    weights: str | None = None  # the name of the learner's own weights file (--weights): run=yours by default
    asks: bool = True  # whether the lessons' questions are asked (XF_TOUR_QUESTIONS=off: a teacher's demo)

    def __post_init__(self):
        # what is saved of the steps seen names only the pages these lessons have: a progress file can hold
        # far more (a learner sharing the account, a tool gone wrong), and each save would merge it all again
        self.progress.keep_to({x.id: {s.id for s in x.steps} | {RECAP} for x in self.lessons},
                              {x.id: {q.id for q in x.questions} for x in self.lessons})

    # --- where we are -------------------------------------------------------------------

    @property
    def lesson(self):
        return self.lessons[self.lesson_index]

    @property
    def step(self):
        """The current step; None on the recap page."""
        return None if self.on_recap() else self.lesson.steps[self.step_index]

    def pages(self, lesson=None) -> int:
        """A lesson's pages: its steps, then the recap."""
        return len((lesson or self.lesson).steps) + 1

    def on_recap(self) -> bool:
        return self.step_index == len(self.lesson.steps)

    def page_title(self) -> str:
        return (RECAP_TITLE if self.on_recap() else self.step.title)(self.lang)

    def page_id(self) -> str:
        return RECAP if self.on_recap() else self.step.id

    def seen_steps(self, lesson) -> int:
        """How many of a lesson's pages the learner has seen."""
        ids = {s.id for s in lesson.steps} | {RECAP}
        return len(set(self.progress.visited.get(lesson.id, [])) & ids)

    def following_lesson(self):
        """The lesson after this one, or None at the last."""
        return self.lessons[self.lesson_index + 1] if self.lesson_index + 1 < len(self.lessons) else None

    def goto(self, lesson_id: str, step: int = 0) -> None:
        """Open a lesson at a page (clamped to the lesson's pages)."""
        ids = [x.id for x in self.lessons]
        self.lesson_index = ids.index(lesson_id)
        self.step_index = max(0, min(step, self.pages() - 1))
        self._record()

    def resume(self) -> None:
        """Go where the progress says; the first lesson when it names nothing that exists."""
        ids = [x.id for x in self.lessons]
        if self.progress.lesson in ids:
            self.goto(self.progress.lesson, self.progress.step)
        else:
            self.goto(ids[0])

    def next(self) -> bool:
        """One step on, into the next lesson after the last step; False at the very end."""
        if self.step_index + 1 < self.pages():
            self.step_index += 1
        elif self.lesson_index + 1 < len(self.lessons):
            self.lesson_index, self.step_index = self.lesson_index + 1, 0
        else:
            return False
        self._record()
        return True

    def prev(self) -> bool:
        """One step back, into the previous lesson's last step; False at the very start."""
        if self.step_index > 0:
            self.step_index -= 1
        elif self.lesson_index > 0:
            self.lesson_index -= 1
            self.step_index = self.pages() - 1
        else:
            return False
        self._record()
        return True

    def _record(self) -> None:
        self.progress.lesson, self.progress.step = self.lesson.id, self.step_index
        self.progress.visit(self.lesson.id, self.page_id())

    def at_start(self) -> bool:
        return self.lesson_index == 0 and self.step_index == 0

    def at_end(self) -> bool:
        return self.lesson_index == len(self.lessons) - 1 and self.step_index == self.pages() - 1

    # --- experiments --------------------------------------------------------------------

    def experiment(self, key: str):
        """The current lesson's experiment bound to `key`, or None."""
        return next((x for x in self.lesson.experiments if x.key == key), None)

    def _next_index(self, experiment) -> int:
        """Where a press moves: after the value on screen (the first press starts from what the step shows)."""
        pressed = self.presses.get(self.lesson.id, {})
        typed = self.typed.get(self.lesson.id, {})
        if experiment.param in typed:  # a value typed goes on to the listed value after it, or the first
            value = typed[experiment.param]
            index = experiment.values.index(value) if value in experiment.values else -1
        elif experiment.key in pressed:
            index = pressed[experiment.key]
        else:
            shown = self.result().params.get(experiment.param)
            index = experiment.values.index(shown) if shown in experiment.values else -1
        return (index + 1) % len(experiment.values)

    def takes(self, experiment) -> bool:
        """Whether the current step's view has the experiment's parameter (or, for an action, is its view)."""
        if self.on_recap():
            return False
        sketch = self.sketch.get(self.step.view)
        return _applies(experiment, self.step, None if sketch is None else sketch[0])

    def applies(self, experiment) -> bool:
        """Whether pressing the experiment's key changes what the current step shows: its tables or prose."""
        if not self.takes(experiment):
            return False
        if experiment.action is not None or self.step.view in SLOW_VIEWS:
            return True
        after = {**self.settings(), experiment.param: experiment.values[self._next_index(experiment)]}
        try:
            return self.shown(self.result()) != self.shown(run_view(self.step.view, after))
        except Exception:  # a value the engine refuses: pressing it shows why
            return True

    def shown(self, result: Result) -> tuple:
        """What a step puts on screen from a result: its tables and its filled prose."""
        from .fill import fill
        from .page import shows

        return shows(result, self.step, self.lang), fill(self.step.text(self.lang), result, self.lang)

    def hides_rows(self) -> bool:
        """Whether the step leaves out rows, tables or facts of its view, which the t key shows."""
        step = self.step
        if step.rows:
            return True
        if not step.tables:
            return False
        try:
            result = self.result()
        except EngineError:  # a step its view refuses (no model file): nothing shown, nothing hidden
            return False
        return bool(result.facts) or any(tb.key not in step.tables for tb in result.tables)

    def has_code(self) -> bool:
        """Whether the step's view names engine functions that the c key can show."""
        sketch = self.sketch.get(self.step.view)
        return sketch[1] if sketch is not None else bool(get_view(self.step.view).sources)

    def press(self, key: str):
        """Move the experiment on `key` to its next value (the last wraps to the first); return it."""
        experiment = self.experiment(key)
        if experiment is None or experiment.action is not None or not self.applies(experiment):
            return None
        self.presses.setdefault(self.lesson.id, {})[key] = self._next_index(experiment)
        self.typed.get(self.lesson.id, {}).pop(experiment.param, None)
        return experiment

    def type_setting(self, name: str, value) -> None:
        """Set a setting to a value the learner typed, for every step of the lesson whose view takes it; a
        key on the same setting goes on from there."""
        lesson = self.lesson.id
        self.typed.setdefault(lesson, {})[name] = value
        for x in self.lesson.experiments:
            if x.param == name:
                self.presses.get(lesson, {}).pop(x.key, None)

    def untype(self, name: str, was) -> None:
        """Take back a typed value the engine refused: the setting shows `was` again (typed, if it differs from
        what the keys give)."""
        typed = self.typed.get(self.lesson.id, {})
        typed.pop(name, None)
        if self.result().params.get(name) != was:
            typed[name] = was

    def reset(self) -> bool:
        """Forget the current lesson's experiment presses, and ask its questions again; False when there was
        nothing to forget."""
        import time

        again = self.progress.ask_again(self.lesson.id, int(time.time()))
        typed = bool(self.typed.pop(self.lesson.id, None))
        return self.presses.pop(self.lesson.id, None) is not None or typed or again

    def resettable(self) -> bool:
        """Whether 0 has something to reset: a pressed key, or a question answered in this lesson."""
        return bool(self.overrides()) or any(self.progress.answered(self.lesson.id, q.id) is not None
                                             for q in self.lesson.questions)

    def overrides(self) -> dict:
        """The settings the pressed experiments have set in this lesson."""
        pressed = self.presses.get(self.lesson.id, {})
        return {**{x.param: x.values[pressed[x.key]] for x in self.lesson.experiments
                   if x.key in pressed and x.action is None}, **self.typed.get(self.lesson.id, {})}

    def value_of(self, experiment):
        """The value the experiment's parameter has on screen now."""
        pressed = self.presses.get(self.lesson.id, {})
        if experiment.param in self.typed.get(self.lesson.id, {}):
            return self.typed[self.lesson.id][experiment.param]
        if experiment.key in pressed:
            return experiment.values[pressed[experiment.key]]
        if self.takes(experiment):
            return self.result().params.get(experiment.param)
        return experiment.values[0]

    # --- questions: predict, then press (tui/quiz.py) -----------------------------------------

    def question_for(self, key: str):
        """The question this step asks before `key` acts, if the learner has not answered or skipped it."""
        if not self.asks or self.on_recap():
            return None
        return next((q for q in self.lesson.questions if q.step == self.step.id and q.key == key
                     and self.progress.answered(self.lesson.id, q.id) is None), None)

    def pose_run(self, question) -> tuple[str, dict] | None:
        """What posing `question` waits on: (the step's slow view, the settings its key reaches) when that has not
        been computed yet, which a thread then does (LessonScreen._ask); None when pose() can run now."""
        if self.step.view not in SLOW_VIEWS:
            return None
        x = self.experiment(question.key)
        settings = {**self.settings(), x.param: x.values[self._next_index(x)]}
        done = is_cached(self.step.view, settings) or _key(self.step.view, settings) in self.refused
        return None if done else (self.step.view, settings)

    def pose(self, question):
        """The question at the setting on screen and the value its key reaches; quiz.NotPosable when it has no
        single right answer there (check-lessons refuses that in a lesson file)."""
        from .quiz import pose

        x = self.experiment(question.key)
        to = x.values[self._next_index(x)]
        settings = self.settings()
        before = self.result()
        after = self._run({**settings, x.param: to})
        return pose(question, self.lesson.id, x.param, self.value_of(x), to, before, after)

    def pose_first(self, question, lesson=None):
        """The question as first met: at its step's own settings, its key pressed once (the recap repeats a
        missed question so)."""
        from .quiz import next_value, pose

        lesson = lesson or self.lesson
        step = next(s for s in lesson.steps if s.id == question.step)
        x = next(e for e in lesson.experiments if e.key == question.key)
        own = {**self.base(step.view), **step.params}
        before = run_view(step.view, own)
        was = before.params.get(x.param)
        to = next_value(x, was)
        after = run_view(step.view, {**own, x.param: to})
        return pose(question, lesson.id, x.param, was, to, before, after)

    def score(self, lesson=None) -> tuple[int, int, int]:
        """(right, answered, questions) of a lesson; a skipped question counts as neither right nor answered."""
        lesson = lesson or self.lesson
        records = [self.progress.answered(lesson.id, q.id) for q in lesson.questions]
        answered = [r for r in records if r is not None and r["choice"] is not None]
        return sum(r["right"] for r in answered), len(answered), len(lesson.questions)

    def missed(self, lesson=None):
        """The lesson's first question answered wrong, or None."""
        lesson = lesson or self.lesson
        return next((q for q in lesson.questions if (r := self.progress.answered(lesson.id, q.id)) is not None
                     and r["choice"] is not None and not r["right"]), None)

    # --- what the screen shows ------------------------------------------------------------

    def settings(self) -> dict:
        """The current step's settings: its own parameters with the lesson's pressed experiments over them."""
        sketch = self.sketch.get(self.step.view)
        names = sketch[0] if sketch is not None else {p.name for p in get_view(self.step.view).params}
        base = {"run": YOURS} if self.weights is not None and "run" in names else {}  # under the lesson's own
        return {**base, **self.step.params, **{k: v for k, v in self.overrides().items() if k in names}}

    def open_weights(self, path) -> str:
        """The learner's own weights at `path`, run=yours from now on where a view takes run (open_weights)."""
        self.weights = open_weights(path)
        return self.weights

    def base(self, view_id: str) -> dict:
        """The settings under a step's own: run=yours where the view takes it, once the learner's weights are
        open."""
        if self.weights is None or not any(p.name == "run" for p in get_view(view_id).params):
            return {}
        return {"run": YOURS}

    def result(self) -> Result:
        return self._run(self.settings())

    def _run(self, settings: dict) -> Result:
        """The step's view at these settings: recalled (see recall) or computed."""
        key = _key(self.step.view, settings)
        if key in self.refused:  # a slow view refused these settings in its thread (no model file, say)
            raise self.refused[key]
        return self.recalled[key] if key in self.recalled else run_view(self.step.view, settings)

    def pending(self) -> bool:
        """Whether the step waits on a slow view that has not been computed at these settings yet."""
        return self.pending_run() is not None

    def pending_run(self) -> tuple[str, dict] | None:
        """What the step waits on: (its slow view, the settings) not computed yet; None when it waits on nothing.
        A thread computes exactly this (run_view), never the tour, which may have moved on by the time it runs."""
        if self.on_recap() or self.step.view not in SLOW_VIEWS:
            return None
        settings = self.settings()
        done = is_cached(self.step.view, settings) or _key(self.step.view, settings) in self.refused
        return None if done else (self.step.view, settings)

    def computing_text(self) -> str:
        """What the message line says while the step's slow view computes."""
        if self.step.view.startswith("real-"):
            return t("computing_real", self.lang)
        settings = {p.name: p.default for p in get_view(self.step.view).params} | self.settings()
        return t("computing_bpe", self.lang, merges=settings["merges"])

    def compare_result(self) -> Result | None:
        if self.step.compare is None:
            return None
        return self._run({**self.settings(), **self.step.compare})

    # --- a start drawn from kept results ------------------------------------------------------

    def own_runs(self) -> list[tuple[str, dict]]:
        """What the step on screen computes at its own settings, as a start shows it: (view, settings) each.
        Nothing on the recap page, for a slow view, which is computed in a thread anyway, or with the learner's
        own weights, which an earlier start may have read from another file."""
        if self.on_recap() or self.step.view in SLOW_VIEWS or self.weights is not None:
            return []
        own = dict(self.step.params)
        compare = [] if self.step.compare is None else [(self.step.view, {**own, **self.step.compare})]
        return [(self.step.view, own), *compare]

    def recall(self, results) -> bool:
        """Take what the step on screen computes from `results` (lessons.cache.Results), if an earlier start
        kept all of it: the first frame is then drawn without importing the view and numpy, and confirm()
        computes it right after. True when it did."""
        kept = [(view, settings, results.recall(view, settings)) for view, settings in self.own_runs()]
        if not kept or not all(found for *_, found in kept):
            return False
        for view, settings, (result, names, code) in kept:
            self.recalled[_key(view, settings)] = result
            self.sketch[view] = (names, code)
        return True

    def confirm(self) -> bool:
        """Compute what recall() took, and forget the kept copies; True when the engine gives something else
        (or refuses it), which the screen must then show."""
        def same(view, settings, kept) -> bool:
            try:
                return run_view(view, dict(settings)) == kept
            except EngineError:  # drawn again, the step says why
                return False

        changed = [not same(view, settings, kept) for (view, settings), kept in self.recalled.items()]
        self.recalled, self.sketch = {}, {}
        return any(changed)
