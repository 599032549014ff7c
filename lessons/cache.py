"""What the tour remembers between runs: about lesson files, keyed by each file's name and the hash of its
bytes, the lessons parsed (Parsed) and the files that passed the deep check (lessons.check.Checked); and the
results of the steps a tour opens on (Results).

A file is read and checked again whenever it changes, and every file and result whenever the engine's or
the loader's code or data does (code_stamp). The caches are JSON files in the state folder, each written
atomically; one that cannot be read, or is not ours, counts as empty and is written anew.
"""

import functools
import hashlib
import json
import os
import stat
from pathlib import Path

from engine.files import write_atomic
from engine.views import Chart, Column, Fact, Result, Series, Table, Tr, get_view

from .loader import FORMAT_VERSION, MAX_FILE_BYTES, Lesson, build, parse_lesson
from .safe import UNSAFE

PARSED_NAME = "parsed-lessons.json"
RESULTS_NAME = "opening-results.json"
KEEP = 64  # entries kept beyond the files of the last load: the shipped lessons and a learner's own, both
KEEP_RESULTS = 16  # runs kept: the steps the last starts opened on and quit at (a few KB each)
MAX_BYTES = 16 << 20  # a cache file larger than this is not ours: KEEP lessons are about 1 MB
_CODE = (Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent / "engine")


@functools.cache
def code_stamp(*more: Path) -> str:
    """What a cached verdict depends on besides the file: the engine's and the lessons package's code and data
    (the trained weights), and the folders in `more` (the app's, whose graders a check may run), by each file's
    size and time (a stat each, no read). Once a process: the code it runs is the code it started with."""
    files = sorted(p for folder in (*_CODE, *more) for p in folder.rglob("*")
                   if "__pycache__" not in p.parts and p.is_file())
    stats = [(str(p), (st := p.stat()).st_size, st.st_mtime_ns) for p in files]
    return hashlib.sha256(repr(stats).encode()).hexdigest()


def file_key(path: Path, raw: bytes) -> str:
    """A file's key: its name (the loader checks it against the id) and the hash of its bytes."""
    return f"{Path(path).name}:{hashlib.sha256(raw).hexdigest()}"


def read_json(path: Path | None, stamp: str) -> dict:
    """The entries of a cache file written with this stamp; {} for a missing, broken or stale one, one over
    MAX_BYTES, nested too deeply for the parser, or not a regular file (a FIFO would block, a device never end)."""
    if path is None:
        return {}
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as f:
            raw = f.read(MAX_BYTES + 1) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
        data = json.loads(raw.decode("utf-8")) if 0 < len(raw) <= MAX_BYTES else None
    except (OSError, ValueError, RecursionError):
        return {}
    if isinstance(data, dict) and data.get("stamp") == stamp and isinstance(data.get("entries"), dict):
        return data["entries"]
    return {}


def write_json(path: Path | None, stamp: str, entries: dict) -> bool:
    """Write a cache atomically (engine.files.write_atomic: a temporary file in the same folder, 0600, renamed
    over it). False when it cannot."""
    if path is None:
        return False
    data = json.dumps({"stamp": stamp, "entries": entries}, ensure_ascii=False).encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data, 0o600, prefix=".cache-")
    except OSError:
        return False
    return True


class Parsed:
    """Lessons parsed before: an unchanged file is rebuilt from its cached form without tomllib. Only files that
    parsed without a problem are kept, so a problem is always found again and reported. Whoever can write the
    state folder can write this cache and compute its stamp, so the cached form is checked again as the loader
    checks a file (loader.build, cached=True); an entry that fails is passed over and the file parsed anew."""

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
                lesson, problems = build(Path(path), toml_data(self.entries[key]), key.split(":", 1)[1], cached=True)
            except (KeyError, TypeError, ValueError, AttributeError):
                lesson, problems = None, ["not the shape to_data writes"]
            if lesson is not None and not problems:
                self.used.append(key)
                return lesson, []
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
                             "values": list(x.values), "action": x.action} for x in lesson.experiments],
            "questions": [q.to_toml() for q in lesson.questions]}


def toml_data(data: dict) -> dict:
    """What to_data() wrote, as the TOML of the file it came from, for the loader to check again (loader.build)."""
    def tr(pair) -> dict:
        en, zh = pair
        return {"en": en, "zh": zh}

    steps = [{"id": s["id"], "title": tr(s["title"]), "text": tr(s["text"]), "view": s["view"], "params": s["params"],
              **({} if s["compare"] is None else {"compare": s["compare"]}), "tables": s["tables"], "rows": s["rows"],
              "hints": {k: tr(v) for k, v in s["hints"].items()}} for s in data["steps"]]
    experiments = [{"key": x["key"], "title": tr(x["title"]), "text": tr(x["text"]),
                    **({"param": x["param"], "values": x["values"]} if x["action"] is None
                       else {"action": x["action"]})}
                   for x in data["experiments"]]
    return {"format_version": FORMAT_VERSION, "id": data["id"], "order": data["order"], "title": tr(data["title"]),
            "steps": steps, "experiments": experiments, "pitfalls": [{"text": tr(p)} for p in data["pitfalls"]],
            **({"questions": data["questions"]} if data.get("questions") else {})}


# --- the results of the steps a tour opens on ---------------------------------------------

class Results:
    """What the steps a tour opened on, or quit at, computed, by view and settings: the next start draws its
    first frame from them without importing numpy, and computes them again right after (tui.tour_state.Tour.recall).
    Each keeps the names of its view's settings and whether the view names engine code, which the footer
    needs before the view is imported."""

    def __init__(self, path: Path | None):
        self.path, self.stamp = path, code_stamp()
        self.entries, self.changed = read_json(path, self.stamp), False

    def recall(self, view_id: str, settings: dict) -> tuple[Result, tuple, bool] | None:
        """(the result, its view's parameter names, whether the view names code) kept for these settings."""
        entry = self.entries.get(run_key(view_id, settings))
        try:
            if not plain_texts(entry):  # drawn before the engine runs: nothing a lesson file could not hold
                return None
            return result_from(entry["result"]), tuple(entry["names"]), bool(entry["code"])
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError):  # none, or not the shape we write
            return None

    def keep(self, view_id: str, settings: dict, result: Result) -> None:
        """Keep a result computed at these settings; save() writes it."""
        try:
            data = result_data(result)
        except TypeError:  # a value JSON cannot hold as it is: computed each time
            return
        view, key = get_view(view_id), run_key(view_id, settings)
        entry = {"names": [p.name for p in view.params], "code": bool(view.sources), "result": data}
        if self.entries.get(key) != entry:
            self.entries = {key: entry, **{k: v for k, v in self.entries.items() if k != key}}
            self.changed = True

    def save(self) -> bool:
        """Write the results if one was kept anew; the latest KEEP_RESULTS."""
        if not self.changed:
            return False
        self.changed = False
        return write_json(self.path, self.stamp, dict(list(self.entries.items())[:KEEP_RESULTS]))


def plain_texts(data) -> bool:
    """Whether every string in JSON data, keys too, is free of what the loader refuses in a lesson (UNSAFE)."""
    if isinstance(data, str):
        return not UNSAFE.search(data)
    if isinstance(data, dict):
        return all(plain_texts(k) and plain_texts(v) for k, v in data.items())
    return all(map(plain_texts, data)) if isinstance(data, list) else True


def run_key(view_id: str, settings: dict) -> str:
    """A run's key: the view and its settings, in name order."""
    return f"{view_id}:{sorted(settings.items())!r}"


def _value(value):
    """A cell, fact or setting as JSON data: a text in both languages tagged, others as they are."""
    if isinstance(value, Tr):
        return {"tr": _tr(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"not kept: {type(value).__name__}")


def _read_value(data):
    return Tr(*data["tr"]) if isinstance(data, dict) else data


def result_data(result: Result) -> dict:
    """A view's result as JSON data; TypeError if a value is not one JSON holds as it is."""
    tables = [{"key": t.key, "title": _tr(t.title), "columns": [[c.key, _tr(c.label), c.fmt] for c in t.columns],
               "rows": [[_value(v) for v in row] for row in t.rows], "heat": t.heat, "heat_cols": list(t.heat_cols),
               "note": None if t.note is None else _tr(t.note)} for t in result.tables]
    def tr(text):
        return None if text is None else _tr(text)

    charts = [{"key": c.key, "title": _tr(c.title), "kind": c.kind,
               "series": [[_tr(s.label), list(s.values)] for s in c.series],
               "x": list(c.x), "parts": [_tr(p) for p in c.parts], "x_label": tr(c.x_label),
               "y_label": tr(c.y_label), "log_x": c.log_x, "log_y": c.log_y,
               "y_range": None if c.y_range is None else list(c.y_range),
               "note": tr(c.note)} for c in result.charts]
    return {"view": result.view, "params": {k: _value(v) for k, v in result.params.items()}, "tables": tables,
            "facts": [[f.key, _tr(f.label), _value(f.value), f.fmt] for f in result.facts], "charts": charts}


def result_from(data: dict) -> Result:
    """The result result_data() wrote."""
    tables = tuple(Table(t["key"], Tr(*t["title"]), tuple(Column(k, Tr(*label), fmt) for k, label, fmt in t["columns"]),
                         tuple(tuple(map(_read_value, row)) for row in t["rows"]), heat=t["heat"],
                         heat_cols=tuple(t["heat_cols"]), note=None if t["note"] is None else Tr(*t["note"]))
                   for t in data["tables"])
    facts = tuple(Fact(key, Tr(*label), _read_value(value), fmt) for key, label, value, fmt in data["facts"])

    def tr(text):
        return None if text is None else Tr(*text)

    charts = tuple(Chart(c["key"], Tr(*c["title"]), c["kind"],
                         tuple(Series(Tr(*label), tuple(values)) for label, values in c["series"]),
                         x=tuple(c["x"]), parts=tuple(Tr(*p) for p in c["parts"]), x_label=tr(c["x_label"]),
                         y_label=tr(c["y_label"]), log_x=c["log_x"], log_y=c["log_y"],
                         y_range=None if c["y_range"] is None else tuple(c["y_range"]), note=tr(c["note"]))
                   for c in data["charts"])
    return Result(data["view"], {k: _read_value(v) for k, v in data["params"].items()}, tables, facts, charts)
