"""What the tour remembers about lesson files between runs, keyed by each file's name and the hash of its
bytes: the lessons parsed (Parsed), and the files that passed the deep check (lessons.check.Checked).

A file is read and checked again whenever it changes, and every file whenever the engine's or the
loader's code does (code_stamp). The caches are JSON files in the state folder, each written atomically;
one that cannot be read, or is not ours, counts as empty and is written anew.
"""

import hashlib
import json
import os
import tempfile
from pathlib import Path

from engine.views import Tr

from .loader import MAX_FILE_BYTES, Experiment, Lesson, Step, parse_lesson

PARSED_NAME = "parsed-lessons.json"
KEEP = 64  # entries kept beyond the files of the last load: the shipped lessons and a learner's own, both
_CODE = (Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent / "engine")


def code_stamp() -> str:
    """What a cached verdict depends on besides the file: the engine's and the lessons package's code, by each
    file's size and time (a stat each, no read)."""
    files = sorted(p for folder in _CODE for p in folder.rglob("*.py"))
    return hashlib.sha256(repr([(str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files]).encode()).hexdigest()


def file_key(path: Path, raw: bytes) -> str:
    """A file's key: its name (the loader checks it against the id) and the hash of its bytes."""
    return f"{Path(path).name}:{hashlib.sha256(raw).hexdigest()}"


def read_json(path: Path | None, stamp: str) -> dict:
    """The entries of a cache file written with this stamp; {} for a missing, broken or stale one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8")) if path is not None else None
    except (OSError, ValueError):
        return {}
    if isinstance(data, dict) and data.get("stamp") == stamp and isinstance(data.get("entries"), dict):
        return data["entries"]
    return {}


def write_json(path: Path | None, stamp: str, entries: dict) -> bool:
    """Write a cache atomically: a temporary file in the same folder renamed over it. False when it cannot."""
    if path is None:
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".cache-", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"stamp": stamp, "entries": entries}, f, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return False
    return True


class Parsed:
    """Lessons parsed before: an unchanged file is rebuilt from its cached form, without tomllib and the
    loader's checks, which gave the same lesson from the same bytes. Only files that parsed without a
    problem are kept, so a problem is always found again and reported."""

    def __init__(self, path: Path | None):
        self.path, self.stamp = path, code_stamp()
        self.entries, self.used, self.changed, self.parsed = read_json(path, self.stamp), [], False, 0

    def parse(self, path: Path) -> tuple[Lesson | None, list]:
        """parse_lesson(path), from the cache when the file is unchanged."""
        try:
            with open(path, "rb") as f:
                raw = f.read(MAX_FILE_BYTES + 1)
        except OSError:
            return parse_lesson(path)
        key = file_key(path, raw)
        if key in self.entries:
            try:
                lesson = from_data(self.entries[key], Path(path), key)
                self.used.append(key)
                return lesson, []
            except (KeyError, TypeError, ValueError, AttributeError):
                pass  # not the shape we write: parse the file
        self.parsed += 1
        lesson, errors = parse_lesson(path)
        if lesson is not None and key == f"{Path(path).name}:{lesson.digest}":  # the bytes parsed are the bytes read
            self.entries[key], self.changed = to_data(lesson), True
            self.used.append(key)
        return lesson, errors

    def save(self) -> bool:
        """Write the cache if a file was parsed anew; the entries of this load first, then up to KEEP others."""
        if not self.changed:
            return False
        others = [k for k in self.entries if k not in self.used][-KEEP:]
        return write_json(self.path, self.stamp, {k: self.entries[k] for k in (*self.used, *others)})


def _tr(text: Tr) -> list:
    return [text.en, text.zh]


def to_data(lesson: Lesson) -> dict:
    """A parsed lesson as JSON data: its typed values are numbers, booleans, strings and None."""
    return {"id": lesson.id, "order": lesson.order, "title": _tr(lesson.title),
            "pitfalls": [_tr(p) for p in lesson.pitfalls],
            "steps": [{"id": s.id, "title": _tr(s.title), "text": _tr(s.text), "view": s.view, "params": s.params,
                       "compare": s.compare, "tables": list(s.tables), "rows": {k: list(v) for k, v in s.rows.items()},
                       "hints": {k: _tr(v) for k, v in s.hints.items()}} for s in lesson.steps],
            "experiments": [{"key": x.key, "title": _tr(x.title), "text": _tr(x.text), "param": x.param,
                             "values": list(x.values), "action": x.action} for x in lesson.experiments]}


def from_data(data: dict, path: Path, key: str) -> Lesson:
    """The lesson to_data() wrote."""
    steps = tuple(Step(s["id"], Tr(*s["title"]), Tr(*s["text"]), s["view"], dict(s["params"]),
                       None if s["compare"] is None else dict(s["compare"]), tuple(s["tables"]),
                       {k: tuple(v) for k, v in s["rows"].items()}, {k: Tr(*v) for k, v in s["hints"].items()})
                  for s in data["steps"])
    experiments = tuple(Experiment(x["key"], Tr(*x["title"]), Tr(*x["text"]), x["param"], tuple(x["values"]),
                                   x["action"]) for x in data["experiments"])
    return Lesson(data["id"], data["order"], Tr(*data["title"]), steps, experiments,
                  tuple(Tr(*p) for p in data["pitfalls"]), path, key.split(":", 1)[1])
