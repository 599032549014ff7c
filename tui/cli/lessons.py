"""xf-tour lessons and check-lessons, and the lessons every command that shows one runs on."""

import sys
from pathlib import Path

from .parser import PROG, UsageError


def lessons_for(args, deep: bool = True):
    """The lessons the tour runs on: --lessons DIR, or the shipped ones. Invalid ones stop here. A learner's
    own folder is deep-checked too (each unchanged file once: see lessons.check.Checked); without `deep`,
    only parsed, and the tour checks the step it opens on (refuse()) and the rest after its first frame."""
    from lessons.cache import PARSED_NAME, Parsed
    from lessons.loader import SHIPPED, LessonsInvalid, load_lessons

    from ..progress import state_dir

    folder, parsed = own_folder(args), Parsed(state_dir() / PARSED_NAME)
    try:
        lessons, _ = load_lessons(folder or SHIPPED, parse=parsed.parse)  # an unchanged file: as parsed before
        problems = checked().all_problems(lessons) if folder is not None and deep else []
    except LessonsInvalid as err:
        problems = err.errors
    parsed.save()
    refuse(problems, folder or SHIPPED)
    return lessons


def own_folder(args):
    """--lessons DIR, or None for the shipped lessons, which the tests check."""
    from lessons.loader import SHIPPED

    folder = getattr(args, "lessons", None)
    return None if folder is None or Path(folder) == SHIPPED else Path(folder)


def checked():
    """The cache of the learner's lesson files that passed the deep check, in the state folder."""
    from lessons.check import CACHE_NAME, Checked

    from ..progress import state_dir
    from ..quiz_check import question_errors
    return Checked(state_dir() / CACHE_NAME, more=question_errors, code=(Path(__file__).resolve().parent.parent,))


def refuse(problems, folder) -> None:
    """Stop with the first problem, in one line, and where to see them all."""
    if problems:
        more = len(problems) - 1
        raise UsageError(f"{problems[0]}" + (f" (and {more} more: {PROG} check-lessons {folder})" if more else ""),
                         f"{problems[0]}" + (f"（另有 {more} 个问题：{PROG} check-lessons {folder}）" if more else ""))


def cmd_lessons(args, lang) -> int:
    """List the lessons: id, both titles, steps. In JSON, "steps" counts the pages a learner walks
    through, the recap included, as the title line does ("1/7")."""
    lessons = lessons_for(args)
    if args.json:
        from ..printer import dumps
        print(dumps([{"id": x.id, "order": x.order, "title": {"zh": x.title.zh, "en": x.title.en},
                      "steps": len(x.steps) + 1, "experiments": len(x.experiments)} for x in lessons]))
        return 0
    from rich.cells import cell_len

    from lessons.safe import printable_line

    for x in lessons:  # each text as the loader checked it, and shown as safe text all the same
        steps = f"{len(x.steps) + 1} 步（最后一步是小结）" if lang == "zh" else \
            f"{len(x.steps) + 1} steps, the last a recap"
        name = printable_line(x.id)
        print(f"{x.order:>2}  {name}{' ' * (15 - cell_len(name))} {steps}  "
              + printable_line(f"{x.title.en} / {x.title.zh}"))
    return 0


def cmd_check_lessons(args, lang) -> int:
    """Check every lesson file in a folder; exit 0 when all are valid, 2 with every error otherwise."""
    from lessons.check import check_deep, needs_model
    from lessons.loader import SHIPPED, load_lessons

    from ..quiz_check import question_errors

    folder = args.dir or getattr(args, "lessons", None) or SHIPPED
    lessons, errors = load_lessons(folder, strict=False)
    for lesson in lessons:
        errors += check_deep(lesson, more=question_errors)
    if not errors:  # every step laid out at 80x24, as the app lays it out: nothing may scroll
        from ..fit import fit_problems
        errors += fit_problems(lessons)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"{len(errors)} {'个问题' if lang == 'zh' else 'problem(s)'}", file=sys.stderr)
        return 2
    print(f"{len(lessons)} lessons OK" if lang == "en" else f"{len(lessons)} 节课全部有效")
    from engine.real_llama import has_model
    unchecked = [x.id for x in lessons if needs_model(x)] if not has_model() else []
    if unchecked:
        names = ", ".join(unchecked)
        print(f"not laid out without the real model: {names} (xf-tour model get, or --model FILE.gguf)"
              if lang == "en" else f"没有真实模型，未能排版检查：{names}"
              "（运行 xf-tour model get，或用 --model FILE.gguf）")
    return 0
