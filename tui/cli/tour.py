"""xf-tour with no command: the Textual tour itself."""

import sys

from .lessons import lessons_for
from .parser import PROG, UsageError


def cmd_tour(args, lang) -> int:
    """Start the Textual app: at --lesson, or where the learner left off. Its exit status: 0, 1 after a crash."""
    from engine.errors import pick

    lessons = lessons_for(args)
    ids = [x.id for x in lessons]
    if args.lesson is not None:
        pick({x.id: x for x in lessons}, args.lesson, "lesson", "课程")
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        raise UsageError(f"the tour needs a terminal; to read without one, try: {PROG} print --lesson {ids[0]}",
                         f"导览需要在终端里运行；不用终端阅读可以试试：{PROG} print --lesson {ids[0]}")
    from ..app import make_app, run_tour  # textual comes in only here

    return run_tour(make_app(lang=getattr(args, "lang", None), lesson=args.lesson, lessons=lessons))
