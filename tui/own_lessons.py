"""What the tour says about a learner's own lessons (--lessons DIR) once it runs: the problems the deep check
found after the first frame, and a step that cannot be drawn. Both inline, in both languages."""

from .i18n import t


def problems_note(problems: list, folder, lang: str) -> tuple[str, str]:
    """The message lines for the problems found: the first, its file named without its folder; how many."""
    from lessons.template import printable

    first = problems[0]
    head = str(first).replace(printable(str(first.path)), first.path.name, 1)
    return head, t("own_problems", lang, n=len(problems), folder=printable(str(folder)))


def broken_note(error: Exception, folder, lang: str) -> str:
    """The message line for a step whose drawing failed on what the lesson names."""
    from lessons.template import printable

    error = " ".join(printable(f"{type(error).__name__}: {error}").split())
    return t("own_broken", lang, error=error if len(error) <= 120 else error[:117] + "...",
               folder=printable(str(folder)))
