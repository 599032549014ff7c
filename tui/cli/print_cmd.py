"""xf-tour print: views as tables or JSON, or a whole lesson as plain text (with its questions, and with
--answers their answers)."""

import sys

from .lessons import lessons_for
from .parser import PROG, UsageError, parse_sets


def cmd_print(args, lang) -> int:
    """Print the named views (all by default) at the given settings, or a whole lesson."""
    from engine.errors import ParamError
    from engine.views import get_view

    if args.lesson is not None:
        return _print_lesson(args, lang)
    if args.answers:
        raise UsageError("--answers goes with --lesson ID: it gives the answers of that lesson's questions",
                         "--answers 要和 --lesson ID 一起用：它给出这一课各题的答案")
    if args.views:  # only the topics these views live in are imported
        views = [get_view(v) for v in args.views]
    else:
        from engine.real_llama import has_model
        from engine.views import VIEWS
        views = [v for v in VIEWS.values() if not v.model or has_model()]
    settings = parse_sets(args.set)
    for name in settings:
        if not any(name in {p.name for p in v.params} for v in views):
            ids = ", ".join(v.id for v in views)
            raise ParamError(f"no view among {ids} takes the parameter {name!r}; see: {PROG} views",
                             f"{ids} 中没有视图接受参数 {name!r}；参见：{PROG} views")
    results = []
    for v in views:  # all computed before anything is printed: an error leaves no half output
        mine = {k: val for k, val in settings.items() if k in {p.name for p in v.params}}
        results.append((v, v.run(mine)))
    return _emit(results, args.json, lang, args.plot)


def _print_lesson(args, lang) -> int:
    """Print the lesson --lesson names as plain text."""
    if args.views or args.set or args.json:
        raise UsageError("--lesson prints a whole lesson; give no VIEW, --set or --json with it",
                         "--lesson 打印整节课，不能同时给 VIEW、--set 或 --json")
    from engine.errors import pick

    lesson = pick({x.id: x for x in lessons_for(args)}, args.lesson, "lesson", "课程")
    from ..printer import render_lesson, write
    from .quiz import lesson_asks
    asks = lesson_asks(lesson, lang, args.answers)
    write(lambda out: render_lesson(lesson, lang, min(out.width, 80), plot=args.plot, asks=asks))
    return 0


def _emit(results, as_json, lang, plot=False) -> int:
    """Print (view, result) pairs as tables one under another (with their charts above them when `plot`), or
    as one JSON object."""
    if as_json:
        from ..printer import dumps, result_json
        print(dumps({"lang": lang, "views": [result_json(r, v.title(lang), lang) for v, r in results]}))
        return 0
    from ..layout.terminal import render_views, screen

    shape = None if plot else screen()  # the terminal emitter draws tables only
    text = None if shape is None else render_views([(v, r) for v, r in results], lang, *shape)
    if text is not None:  # the same characters as Rich writes below, without importing its console
        sys.stdout.write(text)
        sys.stdout.flush()
        return 0
    from rich.console import Group
    from rich.text import Text

    from ..layout.blocks import render_result
    from ..printer import write
    write(lambda out: Group(*[part for i, (v, r) in enumerate(results)
                              for part in ([Text("")] if i else [])
                              + [render_result(r, v.title(lang), lang, out.width, plot)]]))
    return 0
