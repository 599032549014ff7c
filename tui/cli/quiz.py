"""xf-tour quiz: every question of the lessons with the answer the engine gives, at each step's own settings or
at the ones --set gives. With --json each answer comes with its evidence: the settings before and after the
key's press and the figures that decide it, so that anyone can recompute it with
`xf-tour print VIEW --set NAME=VALUE ... --json`.
"""

from dataclasses import dataclass

from .lessons import lessons_for
from .parser import PROG, parse_sets


@dataclass
class Asked:
    """One question at one setting: posed (tui.quiz.Posed), or the problem that leaves it without an answer."""

    lesson: object
    question: object
    posed: object = None       # tui.quiz.Posed; None when there is no single answer here
    problem: str | None = None  # why there is none, in English as tui.quiz.NotPosable says it
    evidence: dict | None = None


def cmd_quiz(args, lang) -> int:
    """Pose each question of the lessons (--lesson: of one) at its step's settings, --set over them."""
    from engine.errors import ParamError, pick
    from engine.views import get_view

    lessons = lessons_for(args)
    if args.lesson is not None:
        lessons = [pick({x.id: x for x in lessons}, args.lesson, "lesson", "课程")]
    else:  # every lesson's questions: the real model's lesson only with a model, as print leaves its views out
        from engine.real_llama import has_model
        from lessons.check import needs_model
        lessons = [x for x in lessons if has_model() or not needs_model(x)]
    settings = parse_sets(args.set)
    questions = [(lesson, q) for lesson in lessons for q in lesson.questions]
    taken = {p.name for lesson, q in questions for p in get_view(step_of(lesson, q).view).params}
    for name in settings:
        if name not in taken:
            raise ParamError(f"no question is asked on a view that takes the parameter {name!r}; see: {PROG} views",
                             f"没有哪道题所在的视图接受参数 {name!r}；参见：{PROG} views")
    if getattr(args, "weights", None) is not None and "run" in taken:  # the learner's weights, as the tour uses them
        settings.setdefault("run", "yours")
    asked = [ask_at(lesson, q, settings) for lesson, q in questions]  # all before any output, as print does
    if args.json:
        from ..printer import dumps
        print(dumps([asked_json(a, lang) for a in asked]))
        return 0
    from ..printer import write
    write(lambda out: render_asked(asked, lang, min(out.width, 80)))
    return 0


def step_of(lesson, question):
    """The step a question is asked on."""
    return next(s for s in lesson.steps if s.id == question.step)


def ask_at(lesson, question, settings: dict) -> Asked:
    """The question at its step's own settings, each of `settings` the step's view takes over them, and its key
    pressed once from there (tui.quiz.next_value), as tui.tour_state.Tour.pose_first poses it at the step's own. A
    setting the view refuses is the user's mistake: its EngineError goes up, and the command exits with 2."""
    from engine.errors import EngineError
    from engine.views import fmt_value, get_view

    from ..quiz import NotPosable, Posed, next_value, pose

    step = step_of(lesson, question)
    x = next(e for e in lesson.experiments if e.key == question.key)
    view = get_view(step.view)
    mine = {k: v for k, v in settings.items() if k in {p.name for p in view.params}}
    before = view.run({**step.params, **mine})
    was = before.params.get(x.param)
    to = next_value(x, was)
    try:
        after = view.run({**step.params, **mine, x.param: to})
    except EngineError as err:  # the press reaches a value these settings make the engine refuse
        return Asked(lesson, question, problem=f"pressing {x.key} to {x.param}={fmt_value(to)}: {err.en}")
    try:
        posed = pose(question, lesson.id, x.param, was, to, before, after)
    except NotPosable as err:
        try:
            evidence = Posed(question, lesson.id, x.param, was, to, before, after).evidence()
        except KeyError:  # a figure the view lacks here: nothing to show for it
            evidence = None
        return Asked(lesson, question, problem=str(err), evidence=evidence)
    return Asked(lesson, question, posed=posed, evidence=posed.evidence())


def asked_json(asked: Asked, lang: str) -> dict:
    """One question as `quiz --json` gives it: the answer is the letter of the right option, the true figure
    for a number question, None when there is no single answer (and `problem` says why)."""
    from ..printer import jsonable
    from ..quiz import LETTERS

    q, posed = asked.question, asked.posed
    answer = None if posed is None else posed.truth if q.kind == "number" else posed.answer
    options = [] if posed is None else [{"key": k, "en": o.en, "zh": o.zh} for k, o in zip(LETTERS, posed.options)]
    return {"id": q.id, "lesson": asked.lesson.id, "step": q.step, "key": q.key, "kind": q.kind, "options": options,
            "answer": answer, "problem": asked.problem,
            "evidence": None if asked.evidence is None else jsonable(asked.evidence, lang)}  # infinities as text


def lesson_asks(lesson, lang: str, answers: bool) -> dict[str, list[tuple[int, str]]]:
    """The questions of a lesson as `print --lesson` puts them under their steps: step id -> lines, each
    (indent, text). Each question is posed as a learner first meets it (tui.tour_state.Tour.pose_first: at its step's
    own settings, its key pressed once); with `answers`, answered too. One without a single answer there says
    why: check-lessons refuses such a lesson, but a printout need not stop for it."""
    from engine.errors import EngineError

    from ..quiz import NotPosable
    from ..tour_state import Tour

    out = {}
    for q in lesson.questions:
        try:
            posed = Tour([lesson]).pose_first(q)
        except (NotPosable, EngineError) as err:
            why = err.text(lang) if isinstance(err, EngineError) else str(err)
            lines = [(2, no_answer(q, why, lang))]
        else:
            head, *more = question_lines(posed, lang, answers)
            lines = [(2, head)] + [(4, text) for text in more]
        out.setdefault(q.step, []).extend(lines)
    return out


def question_lines(posed, lang: str, answers: bool = False) -> list[str]:
    """A posed question (tui/quiz.py) as the app asks it, without the key that skips it: what the key will do
    and the question, then the options; with `answers`, the right option (for a number, the true figure) and
    the figures that decide it, as the app reveals them, then the one sentence on why."""
    from ..fill import fill
    from ..quiz import LETTERS, ask_lines, figures

    q = posed.question
    lines = [ask_lines(posed, lang)[0]]
    if q.kind != "number":
        lines.append("   ".join(f"{letter}) {option(lang)}" for letter, option in zip(LETTERS, posed.options)))
    if answers:
        lines += [("答案：" if lang == "zh" else "Answer: ") + figures(posed, lang),
                  fill(q.why(lang), posed.after, lang)]
    return lines


def no_answer(question, why: str, lang: str) -> str:
    """The line that stands for a question with no single answer at these settings."""
    if lang == "zh":
        return f"题目 {question.id}：在这些设置下没有唯一答案（{why}）"
    return f"Question {question.id}: no single answer at these settings ({why})"


def render_asked(asked: list, lang: str, width: int):
    """The questions as a readable list: where each is asked and at what settings, the question and its options,
    the answer and why; or why it has none."""
    from rich.console import Group
    from rich.text import Text

    from lessons.safe import printable_line

    from ..format import settings_line
    from ..layout.wrap import prose

    if not asked:
        return Text("这些课程里没有题目" if lang == "zh" else "no questions in these lessons")
    parts = []
    for a in asked:
        parts.append(Text(printable_line(f"{a.lesson.id} / {a.question.step} / {a.question.id}"), style="bold"))
        if a.posed is None:
            parts += prose(no_answer(a.question, a.problem, lang), width, indent=2, gap=False)
        else:
            parts += prose(settings_line(a.posed.before.params), width, indent=2, style="dim", gap=False)
            parts += [line for text in question_lines(a.posed, lang, answers=True)
                      for line in prose(text, width, indent=2, gap=False)]
        parts.append(Text(""))
    return Group(*parts)
