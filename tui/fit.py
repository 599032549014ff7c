"""Does every step fit? Each page of each lesson laid out by tui/page.py at 80x24, as check-lessons runs it."""

from engine.views import fmt_value

from .page import MESSAGE_LINES, MIN_HEIGHT, MIN_WIDTH, PAD, build, idle_message, message_overflow, training_panel


def fit_problems(lessons, width: int = MIN_WIDTH, height: int = MIN_HEIGHT, only=None) -> list:
    """Every page of every lesson, in both languages, at every setting its experiment keys reach, laid
    out at width x height: a LessonError for each step that would leave something to scroll, and for
    each hint or key list that would not fit the message lines."""
    from lessons.check import variants
    from lessons.loader import LANGS, LessonError

    from .state import Progress
    from .tour import Tour

    errors, seen = [], set()

    def err(lesson, step_id, fld, message, fix):
        if (lesson.id, step_id, fld, message.split(" (at ")[0]) not in seen:
            seen.add((lesson.id, step_id, fld, message.split(" (at ")[0]))
            errors.append(LessonError(lesson.path, message, fix, lesson.id, step_id, fld))

    for lesson in lessons:
        if only is not None and lesson.id not in only:
            continue
        for lang in LANGS:
            tour = Tour(lessons, Progress(), lang)
            for index, step in enumerate(lesson.steps):
                tour.goto(lesson.id, index)
                panel = training_panel([]) if any(
                    x.action is not None and tour.takes(x) for x in lesson.experiments) else None
                done = set()
                for overrides in variants(lesson, step):
                    tour.presses[lesson.id] = {x.key: x.values.index(overrides[x.param])
                                               for x in lesson.experiments
                                               if x.action is None and overrides.get(x.param, None) in x.values
                                               and x.param in overrides}
                    result = tour.result()
                    key = tuple(sorted(result.params.items()))
                    if key in done:
                        continue
                    done.add(key)
                    at = (" (at " + ", ".join(f"{k}={fmt_value(v)}" for k, v in overrides.items()) + ")"
                          if overrides else "")
                    page = build(tour, width, lit=tour.takes, training=panel)
                    if page.lines > height:
                        err(lesson, step.id, f"text.{lang}",
                            f"at {width}x{height} the step needs {page.lines} lines, {page.lines - height} over"
                            f" ({lang}){at}",
                            "split the step, trim its prose, or show fewer tables or rows (rows = {...})")
                    for x in lesson.experiments:
                        if tour.takes(x):
                            hint = fill_hint(step, x, result, lang)
                            if message_overflow("x", hint, width):
                                err(lesson, step.id, _hint_field(step, x, lang),
                                    f"the hint of key {x.key} needs more than one line at {width} columns ({lang}){at}",
                                    f"shorten it to {width - 2 * PAD} cells (a Chinese character takes two)")
                    if message_overflow("", idle_message(tour, width), width):
                        err(lesson, step.id, "experiments", f"the list of this step's keys needs more than "
                            f"{MESSAGE_LINES} lines at {width} columns ({lang})", "shorten the experiments' titles")
                tour.presses.pop(lesson.id, None)
            tour.goto(lesson.id, len(lesson.steps))
            page = build(tour, width, lit=tour.takes)
            if page.lines > height:
                err(lesson, "recap", f"pitfalls.{lang}",
                    f"at {width}x{height} the recap page needs {page.lines} lines, {page.lines - height} over ({lang})",
                    "shorten the pitfalls, or keep fewer of them")
    return errors


def fill_hint(step, experiment, result, lang: str) -> str:
    """An experiment's hint on a step, filled at a result."""
    from .plain import fill
    return fill(step.hint(experiment, lang), result, lang)


def _hint_field(step, experiment, lang: str) -> str:
    return f"hints.{experiment.key}.{lang}" if experiment.key in step.hints else f"experiments[{experiment.key}].text.{lang}"
