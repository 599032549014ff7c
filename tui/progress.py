"""The learner's progress: where they are, what they have seen, which language. Saved atomically.

A broken or unreadable file never stops the tour: it starts fresh and says so in one line. A damaged
file is moved aside under a stamped name; one that cannot be moved, cannot be read or is not a regular
file (a FIFO, a link to a device) is left as it is and never saved over. A folder that cannot be
written (a read-only home, a full disk) leaves the tour running; each later save tries again quietly.
Two tours running at once each keep their own place, and every step either of them saw.
"""

import errno
import json
import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from engine.files import state_dir, write_atomic  # noqa: F401  (state_dir: progress.state_dir)

VERSION = 1
FILE_NAME = "progress.json"
MAX_BYTES = 1 << 20  # every step of every lesson seen makes 879 bytes; anything near this is not ours
# pages kept of the lessons a tour does not run on (another folder's: see Progress.keep_to): more than any folder
# of lessons has, few enough that a save at every step stays quick
OTHER_PAGES = 2048
OTHER_ANSWERS = 1024  # answers kept of the lessons a tour does not run on, the same way
TEMP_PREFIX, TEMP_SUFFIX = ".progress-", ".tmp"
TEMP_NAME = re.compile(r"\.progress-[a-z0-9_]{8}\.tmp")  # what write_atomic makes of the two (and mkstemp did)
STALE_S = 60  # a save takes milliseconds: a younger temporary file may be another tour's save in flight
LEARNERS = "learners"  # the folder, in the state folder, that holds one folder per --learner NAME
# a learner's name: an ASCII letter, then up to 31 letters, digits, "_" or "-". No ".", "/" or "\\" can
# appear, so a name is always one plain folder inside LEARNERS, never a path out of it.
LEARNER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}", re.ASCII)


def _parse(data: bytes) -> "Progress":
    """The progress in a file's bytes; ValueError for anything that is not a progress file of this version
    (too large, bad UTF-8, bad JSON, nested too deeply, or the wrong shape)."""
    if len(data) > MAX_BYTES:
        raise ValueError("too large to be a progress file")
    try:
        return Progress.from_json(json.loads(data.decode("utf-8")))
    except RecursionError:
        raise ValueError("nested too deeply to be a progress file") from None


class NotRegular(OSError):
    """progress.json is a FIFO, a device, a folder: nothing to read, and not ours to replace."""


def learner_dir(name: str, root: Path | None = None) -> Path:
    """The folder of one learner's progress: LEARNERS/NAME in the state folder (or `root`). ValueError for a
    name that is not a plain identifier (LEARNER_NAME), so that no name reaches outside that folder."""
    if not isinstance(name, str) or not LEARNER_NAME.fullmatch(name):
        raise ValueError(f"not a learner name: {name!r}")
    return (state_dir() if root is None else Path(root)) / LEARNERS / name


@dataclass
class Progress:
    lesson: str | None = None   # the lesson id last open
    step: int = 0               # its step index
    lang: str | None = None     # the language last chosen
    visited: dict[str, list[str]] = field(default_factory=dict)  # lesson id -> step ids seen
    # lesson id -> question id -> {"choice": a letter, a typed number or None (skipped), "right": bool, "t": time};
    # a record whose choice is "" asks the question again (the lesson was reset): the newer record wins a merge
    answers: dict[str, dict[str, dict]] = field(default_factory=dict)
    # lesson id -> its page ids, for the lessons the tour runs on (keep_to); None: every entry is kept
    known: dict[str, set[str]] | None = field(default=None, repr=False, compare=False)
    known_questions: dict[str, set[str]] = field(default_factory=dict, repr=False, compare=False)  # their questions

    def visit(self, lesson: str, step_id: str) -> None:
        seen = self.visited.setdefault(lesson, [])
        if step_id not in seen:
            seen.append(step_id)

    def merge(self, other: "Progress | None") -> None:
        """Add the steps another tour saw, each once, after this one's in the order the other saw them; this
        one's place and language stay. Of a known lesson, only its pages are taken (keep_to)."""
        for lesson, steps in (other.visited if other is not None else {}).items():
            real = None if self.known is None else self.known.get(lesson)
            new = [s for s in steps if real is None or s in real]
            if not new:
                continue
            mine = self.visited.setdefault(lesson, [])
            seen = set(mine)
            for step_id in new:
                if step_id not in seen:
                    seen.add(step_id)
                    mine.append(step_id)
        for lesson, records in (other.answers if other is not None else {}).items():
            mine = self.answers.setdefault(lesson, {})
            for qid, theirs in records.items():
                if qid not in mine or theirs["t"] > mine[qid]["t"]:
                    mine[qid] = theirs
        self._trim()

    def answer(self, lesson: str, question: str, record: dict) -> None:
        """Keep an answer (quiz.record), or with choice "" the mark that asks the question again."""
        self.answers.setdefault(lesson, {})[question] = record

    def answered(self, lesson: str, question: str) -> dict | None:
        """The record of a question answered or skipped, None when it is still to be asked."""
        record = self.answers.get(lesson, {}).get(question)
        return None if record is None or record["choice"] == "" else record

    def ask_again(self, lesson: str, now: int) -> bool:
        """Mark every question of a lesson to be asked again; False when none had been answered."""
        records = self.answers.get(lesson, {})
        again = [qid for qid, r in records.items() if r["choice"] != ""]
        for qid in again:
            records[qid] = {"choice": "", "right": False, "t": max(now, records[qid]["t"] + 1)}
        return bool(again)

    def keep_to(self, pages: dict[str, set[str]], questions: dict[str, set[str]] | None = None) -> None:
        """Keep, of each lesson in `pages` (lesson id -> its page ids: the lessons the tour runs on), only the
        pages it has, now and in every merge. The lessons not there are kept, OTHER_PAGES pages of them in all,
        in the file's order: the same state folder may serve a learner's own lessons another time, but a file
        that names 100,000 pages (a tool gone wrong, someone sharing the account) is no one's progress."""
        self.known, self.known_questions = pages, questions or {}
        self._trim()

    def _trim(self) -> None:
        """What keep_to keeps: of a known lesson its pages, of the others OTHER_PAGES pages in all; each once."""
        if self.known is None:
            return
        room = OTHER_PAGES
        for lesson, seen in list(self.visited.items()):
            pages = list(dict.fromkeys(seen))
            if lesson in self.known:
                pages = [s for s in pages if s in self.known[lesson]]
            else:
                pages, room = pages[:room], room - min(room, len(pages))
            if pages:
                self.visited[lesson] = pages
            else:
                del self.visited[lesson]
        room = OTHER_ANSWERS
        for lesson, records in list(self.answers.items()):
            if lesson in self.known:
                records = {qid: r for qid, r in records.items() if qid in self.known_questions.get(lesson, ())}
            else:
                keep, room = list(records)[:room], room - min(room, len(records))
                records = {qid: records[qid] for qid in keep}
            if records:
                self.answers[lesson] = records
            else:
                del self.answers[lesson]

    def drop_unknown(self) -> bool:
        """Forget the lessons the tour does not run on (keep_to), when the whole would not fit a file; False
        when there are none to forget."""
        if self.known is None or (set(self.visited) | set(self.answers)) <= set(self.known):
            return False
        self.visited = {k: v for k, v in self.visited.items() if k in self.known}
        self.answers = {k: v for k, v in self.answers.items() if k in self.known}
        return True

    def to_json(self) -> dict:
        return {"version": VERSION, "lesson": self.lesson, "step": self.step, "lang": self.lang,
                "visited": self.visited, "answers": self.answers}

    @classmethod
    def from_json(cls, data) -> "Progress":
        """Progress from parsed JSON; ValueError when it is not what this version writes."""
        if not isinstance(data, dict) or data.get("version") != VERSION:
            raise ValueError("not a progress file of this version")
        lesson, step, lang, visited = data.get("lesson"), data.get("step", 0), data.get("lang"), data.get("visited", {})
        if lesson is not None and not isinstance(lesson, str):
            raise ValueError("lesson is not a string")
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise ValueError("step is not a whole number")
        if lang not in (None, "zh", "en"):
            raise ValueError("unknown language")
        if not isinstance(visited, dict) or not all(
                isinstance(k, str) and isinstance(v, list) and all(isinstance(s, str) for s in v)
                for k, v in visited.items()):
            raise ValueError("visited is malformed")
        answers = data.get("answers", {})
        if not isinstance(answers, dict) or not all(
                isinstance(k, str) and isinstance(v, dict) and all(isinstance(q, str) and _is_record(r)
                                                                   for q, r in v.items())
                for k, v in answers.items()):
            raise ValueError("answers is malformed")
        return cls(lesson, step, lang, {k: list(v) for k, v in visited.items()},
                   {k: {q: dict(r) for q, r in v.items()} for k, v in answers.items()})


def _is_record(record) -> bool:
    """An answer as Progress.answer keeps it."""
    return (isinstance(record, dict) and set(record) == {"choice", "right", "t"}
            and (record["choice"] is None or isinstance(record["choice"], str) and len(record["choice"]) <= 40)
            and isinstance(record["right"], bool)
            and isinstance(record["t"], int) and not isinstance(record["t"], bool))


class Store:
    """Reads and writes progress.json in one folder."""

    def __init__(self, folder: Path | None = None):
        self.folder = Path(folder) if folder is not None else state_dir()
        self.path = self.folder / FILE_NAME
        self.writable = True             # False while saves fail; each save tries again
        self.why: str | None = None      # why the last save failed: "full", "denied" or "failed"
        self.hands_off = False           # progress.json must not be saved over: see load()
        self.broken: Path | None = None  # where a damaged file was moved
        # what the load found: "corrupt" (moved aside), "corrupt_kept" (could not be moved),
        # "unreadable", "special" (not a regular file); None when all was well
        self.problem: str | None = None

    def load(self) -> Progress:
        """The saved progress; a fresh one (and `problem` set) when missing, unreadable or corrupt."""
        self.problem, self.broken, self.hands_off = None, None, False
        self._sweep()
        try:
            data = self._read()
        except (FileNotFoundError, NotADirectoryError):
            return Progress()  # nothing saved yet, or no folder to save in: save() will say so
        except OSError as err:  # unreadable or not a file: saving over it could destroy it
            self.problem, self.hands_off = "special" if isinstance(err, NotRegular) else "unreadable", True
            return Progress()
        try:
            return _parse(data)
        except ValueError:
            self.broken = self._keep_broken()
            self.problem, self.hands_off = ("corrupt", False) if self.broken else ("corrupt_kept", True)
            return Progress()

    def read(self) -> Progress:
        """The saved progress, for a reader such as `classroom report`: nothing is moved, swept or written.
        FileNotFoundError when there is none, another OSError when it cannot be read, ValueError when it is
        not a progress file of this version."""
        return _parse(self._read())

    def _read(self) -> bytes:
        """At most MAX_BYTES + 1 bytes of progress.json; NotRegular unless it is a regular file."""
        if not stat.S_ISREG(os.stat(self.path).st_mode):  # look before opening: opening a FIFO blocks
            raise NotRegular(errno.EINVAL, "not a regular file", str(self.path))
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for something else since we looked
                raise NotRegular(errno.EINVAL, "not a regular file", str(self.path))
            return f.read(MAX_BYTES + 1)

    def _peek(self) -> Progress | None:
        """What is saved now (another tour may have saved since we loaded); None if nothing usable."""
        try:
            return Progress.from_json(json.loads(self._read().decode("utf-8")))
        except (OSError, ValueError, RecursionError):
            return None

    def _keep_broken(self) -> Path | None:
        """Move a corrupt file aside under a stamped name, never over an earlier one; None if it cannot."""
        base = f"{FILE_NAME}.broken-{time.strftime('%Y%m%d-%H%M%S')}"
        target, n = self.folder / base, 0
        while os.path.lexists(target):  # a second broken file in the same second
            n += 1
            target = self.folder / f"{base}-{n}"
        try:
            os.replace(self.path, target)
        except OSError:
            return None
        return target

    def _sweep(self) -> None:
        """Delete the temporary files of saves that were killed: only ours, and only stale ones."""
        sweep(self.folder, TEMP_NAME)

    def save(self, progress: Progress) -> bool:
        """Write atomically (engine.files.write_atomic): a temporary file in the same folder, 0600, synced, then
        renamed over the old one.

        The steps another tour saved meanwhile are merged in first, so that neither loses what it saw. A file
        the reader would refuse (over MAX_BYTES) is never written: the lessons the tour does not run on are
        left out of it, and if it is still too large the save fails and the old file stays.
        """
        if self.hands_off:
            return False
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            progress.merge(self._peek())
            data = _dumps(progress)
            if len(data) > MAX_BYTES and progress.drop_unknown():
                data = _dumps(progress)
            if len(data) > MAX_BYTES:
                raise OSError(errno.EFBIG, "too large for a progress file", str(self.path))
            write_atomic(self.path, data, 0o600, prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX)
        except OSError as err:
            self.writable = False  # the app says it once; the next save tries again
            self.why = ("full" if err.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))
                        else "denied" if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS) else "failed")
            return False
        self.writable, self.why = True, None
        return True


def sweep(folder: Path, name: re.Pattern, stale_s: float = STALE_S) -> None:
    """Delete the files in `folder` whose whole name is `name` and that are older than `stale_s`: the temporary
    files of atomic writes that were killed (a younger one may be a write in flight). Only regular files: a
    link is never followed, nor deleted."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    now = time.time()
    for entry in entries:
        try:
            if (name.fullmatch(entry.name) and entry.is_file(follow_symlinks=False)
                    and now - entry.stat(follow_symlinks=False).st_mtime > stale_s):
                os.unlink(entry.path)
        except OSError:
            pass


def _dumps(progress: Progress) -> bytes:
    """The bytes save() writes: what _parse() reads back."""
    return json.dumps(progress.to_json(), ensure_ascii=False, indent=1).encode("utf-8")
