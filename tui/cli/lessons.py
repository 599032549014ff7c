"""xf-tour lessons and check-lessons, and the lessons every command that shows one runs on."""

import sys

from .parser import PROG, UsageError


def lessons_for(args):
    """The lessons the tour runs on: --lessons DIR, or the shipped ones. Invalid ones stop here."""
    from lessons.check import check_deep
    from lessons.loader import SHIPPED, LessonsInvalid, load_lessons

    folder = getattr(args, "lessons", None) or SHIPPED
    try:
        lessons, _ = load_lessons(folder)
        problems = [] if folder == SHIPPED else [e for x in lessons for e in check_deep(x)]
    except LessonsInvalid as err:
        problems = err.errors
    if problems:  # the shipped lessons are checked by the tests; a learner's own folder is checked here
        more = len(problems) - 1
        raise UsageError(f"{problems[0]}" + (f" (and {more} more: {PROG} check-lessons {folder})" if more else ""),
                         f"{problems[0]}" + (f"（另有 {more} 个问题：{PROG} check-lessons {folder}）" if more else ""))
    return lessons


def cmd_lessons(args, lang) -> int:
    """List the lessons: id, both titles, steps. In JSON, "steps" counts the pages a learner walks
    through, the recap included, as the title line does ("1/7")."""
    lessons = lessons_for(args)
    if args.json:
        from ..plain import dumps
        print(dumps([{"id": x.id, "order": x.order, "title": {"zh": x.title.zh, "en": x.title.en},
                      "steps": len(x.steps) + 1, "experiments": len(x.experiments)} for x in lessons]))
        return 0
    for x in lessons:
        steps = f"{len(x.steps)} 步 + 小结" if lang == "zh" else f"{len(x.steps)} steps + recap"
        print(f"{x.order:>2}  {x.id:<15} {steps}  "
              f"{x.title.en} / {x.title.zh}")
    return 0


def cmd_check_lessons(args, lang) -> int:
    """Check every lesson file in a folder; exit 0 when all are valid, 2 with every error otherwise."""
    from lessons.check import check_deep
    from lessons.loader import SHIPPED, load_lessons

    folder = args.dir or getattr(args, "lessons", None) or SHIPPED
    lessons, errors = load_lessons(folder, strict=False)
    for lesson in lessons:
        errors += check_deep(lesson)
    if not errors:  # every step laid out at 80x24, as the app lays it out: nothing may scroll
        from ..fit import fit_problems
        errors += fit_problems(lessons)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"{len(errors)} {'个问题' if lang == 'zh' else 'problem(s)'}", file=sys.stderr)
        return 2
    print(f"{len(lessons)} lessons OK" if lang == "en" else f"{len(lessons)} 节课全部有效")
    return 0
