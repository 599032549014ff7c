"""Crash reports: the traceback of an error that stopped the tour, in crash-*.txt in the state folder.

The state folder may be shared by every learner of a classroom account, so a report is written as the
progress is: never through a link (the name is created anew, O_EXCL | O_NOFOLLOW), readable by its owner
only (0600, set on the open file), and only the newest KEEP reports are kept.
"""

import os
import re
import sys
from pathlib import Path

KEEP = 20  # reports kept in the state folder: enough to compare a few crashes, not a disk filled by a loop
NAME = re.compile(r"crash-\d{8}-\d{6}(-\d+)?\.txt")  # what write_crash_report names a report
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def one_line(text: str, limit: int = 300) -> str:
    """Text as one short line that is safe on a terminal: control characters shown as escapes."""
    from lessons.safe import printable

    text = " ".join(printable(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def report_text(error: BaseException) -> str:
    """The report: when and where, then the traceback, and the traceback of the error an error wraps without
    having raised it (Textual's WorkerFailed holds a worker's error in .error: its own traceback is one line)."""
    import platform
    import time
    import traceback
    from importlib.metadata import version

    from lessons.safe import printable

    lines = [f"xf-tour crash report, {time.strftime('%Y-%m-%d %H:%M:%S %z')}",
             f"Python {platform.python_version()}, Textual {version('textual')}, {platform.platform()}",
             "command: " + " ".join(sys.argv), "", *traceback.format_exception(error)]
    seen = {id(error)}
    inner = getattr(error, "error", None)
    while isinstance(inner, BaseException) and id(inner) not in seen:  # a WorkerFailed, or one wrapping one
        seen.add(id(inner))
        lines += ["", f"The error inside {type(error).__name__}:", "", *traceback.format_exception(inner)]
        error, inner = inner, getattr(inner, "error", None)
    return "\n".join(printable(line.rstrip("\n")) for line in lines) + "\n"  # no escape codes in it either


def write_crash_report(error: BaseException, folder: Path) -> Path | None:
    """Write a crash's traceback to crash-YYYYmmdd-HHMMSS.txt in `folder` (the state folder), or to a
    temporary file when that folder cannot be written; the file written, or None when none could be."""
    import tempfile
    import time

    stamp, text = time.strftime("%Y%m%d-%H%M%S"), report_text(error).encode("utf-8")

    def write(path: Path) -> Path | None:
        try:
            fd = os.open(path, _FLAGS, 0o600)
        except FileExistsError:  # an earlier report, or anything else by that name: a link is not followed
            return None
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(text)
            return path
        except OSError:
            path.unlink(missing_ok=True)
            raise

    try:
        folder.mkdir(parents=True, exist_ok=True)
        for n in range(100):  # two crashes in one second keep two reports
            path = write(folder / (f"crash-{stamp}.txt" if n == 0 else f"crash-{stamp}-{n}.txt"))
            if path is not None:
                prune(folder)
                return path
    except OSError:
        pass
    try:
        fd, name = tempfile.mkstemp(prefix=f"xf-tour-crash-{stamp}-", suffix=".txt")  # 0600, O_EXCL
        with os.fdopen(fd, "wb") as f:
            f.write(text)
        return Path(name)
    except OSError:
        return None


def prune(folder: Path, keep: int = KEEP) -> None:
    """Delete all but the newest `keep` reports in `folder`: regular files by the report's name only, so a
    link or anything else named like one is neither followed nor removed."""
    reports = []
    try:
        for entry in os.scandir(folder):
            try:
                if NAME.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                    reports.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.name, entry.path))
            except OSError:
                pass
    except OSError:
        return
    for *_, path in sorted(reports, reverse=True)[keep:]:
        try:
            os.unlink(path)
        except OSError:
            pass
