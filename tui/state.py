"""The learner's progress: where they are, what they have seen, which language. Saved atomically.

A broken or unreadable file never stops the tour: it starts fresh and says so in one line. A
folder that cannot be written (a read-only home) leaves the tour running without saving.
"""

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

VERSION = 1
FILE_NAME = "progress.json"


def state_dir() -> Path:
    """XF_TOUR_STATE_DIR, or the platform's user state folder for xf-tour."""
    override = os.environ.get("XF_TOUR_STATE_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_state_dir  # comes with textual
    return Path(user_state_dir("xf-tour", appauthor=False))


@dataclass
class Progress:
    lesson: str | None = None   # the lesson id last open
    step: int = 0               # its step index
    lang: str | None = None     # the language last chosen
    visited: dict[str, list[str]] = field(default_factory=dict)  # lesson id -> step ids seen

    def visit(self, lesson: str, step_id: str) -> None:
        seen = self.visited.setdefault(lesson, [])
        if step_id not in seen:
            seen.append(step_id)

    def to_json(self) -> dict:
        return {"version": VERSION, "lesson": self.lesson, "step": self.step, "lang": self.lang,
                "visited": self.visited}

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
        return cls(lesson, step, lang, {k: list(v) for k, v in visited.items()})


class Store:
    """Reads and writes progress.json in one folder."""

    def __init__(self, folder: Path | None = None):
        self.folder = Path(folder) if folder is not None else state_dir()
        self.path = self.folder / FILE_NAME
        self.writable = True
        self.problem: str | None = None  # set when the last load or save could not be done

    def load(self) -> Progress:
        """The saved progress; a fresh one (and `problem` set) when missing, unreadable or corrupt."""
        self.problem = None
        try:
            text = self.path.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            return Progress()  # nothing saved yet, or no folder to save in: save() will say so
        except OSError:
            self.problem = "unreadable"
            return Progress()
        except UnicodeDecodeError:
            text = None
        try:
            if text is None:
                raise ValueError("not UTF-8 text")
            return Progress.from_json(json.loads(text))
        except (ValueError, RecursionError):  # JSONDecodeError is a ValueError; deep nesting recurses
            self.problem = "corrupt"
            self._keep_broken()
            return Progress()

    def _keep_broken(self) -> None:
        """Move a corrupt file aside, so the fresh start does not destroy what might be recovered."""
        try:
            os.replace(self.path, self.path.with_suffix(".json.broken"))
        except OSError:
            pass

    def save(self, progress: Progress) -> bool:
        """Write atomically: a temporary file in the same folder, flushed, then renamed over the old one."""
        if not self.writable:
            return False
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".progress-", suffix=".tmp", dir=self.folder)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(progress.to_json(), f, ensure_ascii=False, indent=1)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except OSError:
            self.writable = False  # say it once, then run on without saving
            self.problem = "unwritable"
            return False
        return True
