"""xf-tour with no command: the Textual tour itself."""

import os
import sys
from pathlib import Path

from .lessons import checked, lessons_for, own_folder, refuse
from .parser import PROG, UsageError, name_error


def cmd_tour(args, lang) -> int:
    """Start the Textual app: at --lesson, or where the learner left off. Its exit status: 0, 1 after a crash."""
    from engine.errors import pick

    home = learner_folder(getattr(args, "learner", None))  # a bad name is refused before anything else
    lessons = lessons_for(args, deep=False)  # parsed strictly; the deep check follows, cheapest first
    ids = [x.id for x in lessons]
    if args.lesson is not None:
        pick({x.id: x for x in lessons}, args.lesson, "lesson", "课程")
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        raise UsageError(f"the tour needs a terminal; to read without one, try: {PROG} print --lesson {ids[0]}",
                         f"导览需要在终端里运行；不用终端阅读可以试试：{PROG} print --lesson {ids[0]}")
    from lessons.cache import RESULTS_NAME, Results

    from ..app import make_app, run_tour  # textual comes in only here

    weights = getattr(args, "weights", None)  # read and checked already (cli.main): run=yours where a view takes run
    shared = home is not None or "web_driver" in os.environ.get("TEXTUAL_DRIVER", "")  # --learner, or serve's
    app = make_app(lang=getattr(args, "lang", None), lesson=args.lesson, lessons=lessons, state_dir=home,
                   weights=None if weights is None else Path(weights).name, open_files=not shared)
    app.recall(Results(app.store.folder / RESULTS_NAME))  # the first frame from what the last start kept: the
    # store's folder, so that learners share no results either (the lesson caches, about files, are shared)
    folder = own_folder(args)
    if folder is not None:
        check_own(app, folder, checked())
    return run_tour(app)


def learner_folder(name):
    """The state folder of --learner NAME (None without it: the tour's own). A name that is not a plain
    identifier is refused (exit 2): the folder is always LEARNERS/NAME inside the state folder. So is a
    LEARNERS or NAME that is a link (classroom report shows such a learner unread): the tour account may
    plant one, and the progress would go wherever it points."""
    from ..progress import learner_dir

    if name is None:
        return None
    try:
        folder = learner_dir(name)
    except ValueError:
        raise name_error(name, "--learner ") from None
    for path in (folder.parent, folder):
        if path.is_symlink():
            raise linked_folder(path)
    return folder


def linked_folder(path) -> UsageError:
    """The refusal of a learners folder, or one learner's, that is a symbolic link."""
    return UsageError(f"{path} is a symbolic link: a learner's progress is kept only in real folders, never reached "
                      "through a link; replace it with a folder",
                      f"{path} 是符号链接：学习者的进度只保存在真实的文件夹里，不经过链接；请换成真正的文件夹")


def check_own(app, folder, cache) -> None:
    """A learner's own lessons: the step the tour opens on is deep-checked now (a problem stops the command
    with exit 2), every lesson after the first frame, in a thread (a problem is said inline). `cache` (a
    lessons.check.Checked) skips the files that passed before."""
    step = app.tour.step
    refuse(cache.problems(app.tour.lesson, steps=None if step is None else {step.id}), folder)
    app.check_later(lambda: cache.all_problems(app.tour.lessons), folder)
