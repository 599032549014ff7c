"""Does every step fit? Each page of each lesson laid out by tui/layout/screen.py at 80x24, as check-lessons runs it."""

from engine.errors import NoModel
from engine.views import fmt_value

from .layout.screen import MESSAGE_LINES, MIN_HEIGHT, MIN_WIDTH, PAD, message_overflow, training_panel
from .page import build, idle_message


def fit_problems(lessons, width: int = MIN_WIDTH, height: int = MIN_HEIGHT, only=None) -> list:
    """Every page of every lesson, in both languages, at every setting its experiment keys reach, laid
    out at width x height: a LessonError for each step that would leave something to scroll, and for
    each hint or key list that would not fit the message lines."""
    from lessons.check import variants
    from lessons.loader import LANGS, LessonError

    from .progress import Progress
    from .tour_state import Tour

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
                    try:
                        result = tour.result()
                    except NoModel:  # the real model's steps, without it: not laid out
                        break
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
                    for question in (q for q in lesson.questions if q.step == step.id):
                        for fld, why in question_overflow(tour, question, width, lang, len(page.footer)):
                            err(lesson, step.id, fld, f"{why} ({lang}){at}",
                                f"shorten it to {width - 2 * PAD} cells (a Chinese character takes two)")
                    if message_overflow("", idle_message(tour, width), width):
                        err(lesson, step.id, "experiments", f"the list of this step's keys needs more than "
                            f"{MESSAGE_LINES} lines at {width} columns ({lang})", "shorten the experiments' titles")
                tour.presses.pop(lesson.id, None)
            tour.goto(lesson.id, len(lesson.steps))
            for missed in (None, *lesson.questions):  # the recap repeats the first question missed, if any
                tour.progress.answers = {} if missed is None else {
                    lesson.id: {missed.id: {"choice": "?", "right": False, "t": 0}}}
                page = build(tour, width, lit=tour.takes)
                if page.lines > height:
                    err(lesson, "recap", f"pitfalls.{lang}",
                        f"at {width}x{height} the recap page needs {page.lines} lines, {page.lines - height} over "
                        f"({lang}){'' if missed is None else f' with question {missed.id!r} missed'}",
                        "shorten the pitfalls or the question, or keep fewer pitfalls")
            tour.progress.answers = {}
    return errors


def fill_hint(step, experiment, result, lang: str) -> str:
    """An experiment's hint on a step, filled at a result."""
    from .fill import fill
    return fill(step.hint(experiment, lang), result, lang)


def _hint_field(step, experiment, lang: str) -> str:
    if experiment.key in step.hints:
        return f"hints.{experiment.key}.{lang}"
    return f"experiments[{experiment.key}].text.{lang}"


def question_overflow(tour, question, width: int, lang: str, footer_lines: int) -> list[tuple[str, str]]:
    """What of a question would not fit where it is shown, at the tour's place: its line and options, its
    reveal (the verdict and figures on one line, the sentence on why on the other), and its footer."""
    from rich.cells import cell_len

    from .layout.screen import footer_lines as lay_out
    from .page import footer_items
    from .quiz import NotPosable, ask_lines, reveal_lines

    i = tour.lesson.questions.index(question)
    try:
        posed = tour.pose(question)
    except NotPosable:  # check-lessons says so
        return []
    out = []
    head, tail = ask_lines(posed, lang)
    if question.kind == "number":
        tail += "1" * 12  # a number as long as a learner would type
    if message_overflow(head, tail, width) or cell_len(head) > width - 2 * PAD:
        out.append((f"questions[{i}].ask.{lang}", f"question {question.id!r} and its options need more than "
                    f"{MESSAGE_LINES} lines at {width} columns"))
    for choice in (posed.answer, "1" * 12) if question.kind == "number" else (posed.answer,):
        head, why = reveal_lines(posed, choice or str(posed.truth), lang)
        if message_overflow(head, why, width) or cell_len(head) > width - 2 * PAD:
            out.append((f"questions[{i}].why.{lang}", f"the reveal of question {question.id!r} needs more than "
                        f"{MESSAGE_LINES} lines at {width} columns: its figures and why must each fit one"))
    if len(lay_out(footer_items(tour, tour.takes, asking=posed), width)) > footer_lines:
        out.append((f"questions[{i}]", f"the footer of question {question.id!r} is longer than the step's"))
    return out
