"""The checks check-lessons and the app make of a lesson's questions (lessons/questions.py) on top of
lessons.check.check_deep: at every setting a question's step can reach, the key changes the step, every figure
and placeholder exists, and the engine gives one right option (tui/quiz.py)."""

from engine.errors import EngineError
from engine.views import get_view
from lessons.check import variants
from lessons.loader import LANGS, Lesson, LessonError, Step, applies, cut
from lessons.template import TemplateError

from .fill import fill
from .quiz import NotPosable, next_value, pose


def question_errors(lesson: Lesson, steps=None) -> list[LessonError]:
    """Every problem of the lesson's questions (of those on `steps`, step ids, when given), once each."""
    errors, seen = [], set()
    for i, question in enumerate(lesson.questions):
        step = next(s for s in lesson.steps if s.id == question.step)
        if steps is not None and step.id not in steps:
            continue
        for message, fix, fld, at in question_problems(lesson, step, question):
            if (question.id, fld, message) not in seen:  # once, at the first setting where it shows
                seen.add((question.id, fld, message))
                errors.append(LessonError(lesson.path, message + at, fix, lesson.id, step.id, f"questions[{i}].{fld}"))
    return errors


def question_problems(lesson: Lesson, step: Step, question) -> list[tuple[str, str, str, str]]:
    """What is wrong with a question at any setting its step can reach, as (message, fix, field, where): a key
    that does not change the step, a figure or placeholder the view lacks, no single right answer."""
    x = next(e for e in lesson.experiments if e.key == question.key)
    if not applies(x, step):
        return [(f"key {x.key} does not change step {step.id!r}", f"ask it on a step that shows {x.param}", "key", "")]
    out = []
    for overrides in variants(lesson, step):
        at = " (at " + ", ".join(f"{k}={v}" for k, v in overrides.items()) + ")" if overrides else ""
        try:
            before = get_view(step.view).run({**step.params, **overrides})
            to = next_value(x, before.params.get(x.param))
            after = get_view(step.view).run({**step.params, **overrides, x.param: to})
        except EngineError:
            continue  # check_deep says so for the step
        try:
            pose(question, lesson.id, x.param, before.params.get(x.param), to, before, after)
        except NotPosable as e:
            out.append((f"no single right answer: {e}", "choose figures, a band or values that always decide it",
                        "fact", f"{at} pressing {x.key} to {to}"))
        for name, text, result in (("ask", question.ask, before), ("why", question.why, after)):
            for lang in LANGS:
                try:
                    fill(text(lang), result, lang)
                except (KeyError, TemplateError) as e:
                    out.append((cut(f"{e.args[0] if e.args else e}", 160),
                                "name a fact, a setting, or table.row.column of the step's view", f"{name}.{lang}", at))
    return out
