"""Load and check lesson files: TOML read with tomllib, never executed.

Every problem becomes a LessonError that names the file, the lesson, the step and the field, and
says how to fix it. The loader collects all the problems of a folder before it reports, so an
author sees them at once. See lessons/README.md for the format.
"""

import hashlib
import re
from pathlib import Path
from types import MappingProxyType

from engine.errors import EngineError
from engine.records import not_compared, record
from engine.views import Tr, get_view

from .scan import MAX_DEPTH, MAX_DIGITS, MAX_KEY_PARTS, cut, too_big  # noqa: F401  the loader's caps
from .template import UNSAFE, placeholders, printable, structure_problems

FORMAT_VERSION = 1
LANGS = ("zh", "en")
SHIPPED = Path(__file__).resolve().parent
FILE_NAME = re.compile(r"^(\d\d)-([a-z][a-z0-9-]*)\.toml$")

LESSON_KEYS = ("format_version", "id", "order", "title", "steps", "experiments", "pitfalls", "questions")
STEP_KEYS = ("id", "title", "text", "view", "params", "compare", "tables", "rows", "hints")
EXPERIMENT_KEYS = ("key", "title", "text", "param", "values", "action")
ACTIONS = ("train-live",)  # named things the app can do on a key; a lesson names one, it never holds code
ACTION_VIEWS = {"train-live": ("tiny-heads",)}  # the views whose steps an action belongs to
PITFALL_KEYS = ("text",)

# Caps, far above any real lesson, checked before tomllib reads a file: past them tomllib can take
# minutes and gigabytes (a 40 KB file with one 20,000-part dotted key), or an app key takes seconds.
MAX_FILE_BYTES = 256 * 1024  # the largest shipped lesson is 14 KB
MAX_TEXT = 8_000             # characters in one string; the longest shipped text has about 1,050
# and MAX_DEPTH, MAX_KEY_PARTS, MAX_DIGITS: what lessons/scan.py looks for before tomllib reads a file


@record
class Step:
    id: str
    title: Tr
    text: Tr
    view: str
    params: dict
    compare: dict | None = None     # a second variant of the same view, shown beside the first
    tables: tuple[str, ...] = ()    # which of the view's tables to show; empty means all
    rows: dict = MappingProxyType({})   # table key -> the row indices to show (negative: from the end)
    hints: dict = MappingProxyType({})  # experiment key -> Tr: what to look for on this step

    def hint(self, experiment, lang: str) -> str:
        """What to look for after pressing the experiment's key on this step."""
        return (self.hints.get(experiment.key) or experiment.text)(lang)


@record
class Experiment:
    key: str  # "1" to "9"
    title: Tr
    text: Tr
    param: str | None
    values: tuple
    action: str | None = None  # one of ACTIONS, instead of param and values


@record
class Lesson:
    id: str
    order: int
    title: Tr
    steps: tuple[Step, ...]
    experiments: tuple[Experiment, ...] = ()
    pitfalls: tuple[Tr, ...] = ()
    path: Path | None = not_compared(None)  # a lesson is what it says, wherever it was read from
    digest: str = not_compared("")  # sha256 of the file's bytes: lessons/check.py caches by it
    questions: tuple = ()  # lessons.questions.Question: asked before a key acts, graded by the engine (tui/quiz.py)


class LessonError(Exception):
    """One problem in one lesson file, with where it is and how to fix it."""

    def __init__(self, path, message, fix, lesson=None, step=None, fld=None, line=None):
        self.path, self.message, self.fix = Path(path), message, fix
        self.lesson, self.step, self.field, self.line = lesson, step, fld, line
        super().__init__(str(self))

    def __str__(self):
        where = [str(self.path) + (f":{self.line}" if self.line else "")]
        if self.lesson:
            where.append(f"lesson {self.lesson!r}")
        if self.step:
            where.append(f"step {self.step!r}")
        if self.field:
            where.append(f"field {self.field!r}")
        return printable(f"{', '.join(where)}: {self.message}. Fix: {self.fix}")  # a file name may hold ESC too


class LessonsInvalid(Exception):
    """Raised by load_lessons(strict=True) with every error found."""

    def __init__(self, errors):
        self.errors = errors
        super().__init__("\n".join(map(str, errors)))


# --- reading ----------------------------------------------------------------------------

class _Checker:
    """Walks one parsed file, turning each problem into a LessonError. `cached`: a lesson from the cache, checked
    against the views' ids only (see build)."""

    def __init__(self, path: Path, cached: bool = False):
        self.path, self.errors, self.lesson_id, self.step_id = path, [], None, None
        self.cached, self.views = cached, _view_ids() if cached else _views()

    def error(self, message, fix, fld=None):
        self.errors.append(LessonError(self.path, message, fix, self.lesson_id, self.step_id, fld))

    def keys(self, table, allowed, where):
        for key in table:
            if key not in allowed:
                self.error(f"unknown key {key!r}", f"use only {', '.join(allowed)}", f"{where}{key}")

    def text(self, table, name, where=""):
        """A {zh, en} text; empty strings, missing languages and unbalanced {if} blocks are errors."""
        value = table.get(name)
        fld = f"{where}{name}"
        if not isinstance(value, dict):
            self.error("missing or not a table of languages", f'write {name}.zh = "…" and {name}.en = "…"', fld)
            return Tr("", "")
        for lang in value:
            if lang not in LANGS:
                self.error(f"unknown language {lang!r}", "use zh and en", f"{fld}.{lang}")
        for lang in LANGS:
            if not isinstance(value.get(lang), str) or not value[lang].strip():
                self.error(f"the {lang} text is missing or empty", f'add {name}.{lang} = "…"', f"{fld}.{lang}")
                continue
            for problem in structure_problems(value[lang]):
                self.error(problem, "close every {if NAME} with {end}, with at most one {else} between",
                           f"{fld}.{lang}")
        if all(isinstance(value.get(lang), str) for lang in LANGS):
            zh, en = set(placeholders(value["zh"])), set(placeholders(value["en"]))
            if zh != en:
                only = ", ".join(f"{{{r}}} only in {lang}" for lang, refs in (("en", en - zh), ("zh", zh - en))
                                 for r in sorted(refs))
                self.error(f"the zh and en texts name different placeholders: {cut(only, 120)}",
                           "use the same placeholders in both languages", fld)
        return Tr(str(value.get("en", "")).strip(), str(value.get("zh", "")).strip())

    def view_params(self, view_id, params, fld):
        """Check each parameter is one the view takes and a value it accepts; return them typed."""
        if view_id not in self.views:
            return {}
        if not isinstance(params, dict):
            self.error("must be a table", "write params = { name = value }", fld)
            return {}
        view = self.views[view_id]
        if view is None:  # a cached lesson's values, typed before: plain values, which the view checks as it runs
            return {name: raw for name, raw in params.items() if self.plain(raw, f"{fld}.{name}")}
        typed = {}
        for name, raw in params.items():
            try:
                typed[name] = view.param(name).parse(raw)
            except EngineError as err:
                self.error(err.en, f"see `xf-tour views` for what {view_id!r} takes", f"{fld}.{name}")
        return typed

    def plain(self, value, fld) -> bool:
        """Whether a setting's value is one TOML gives and a view takes: a number, a boolean or a string."""
        if not isinstance(value, (bool, int, float, str)):
            self.error(f"not a setting's value: {_shown(value)}", "write a number, true or false, or a string", fld)
        return isinstance(value, (bool, int, float, str))


def parse_lesson(path: Path) -> tuple[Lesson | None, list[LessonError]]:
    """Read one file; return the lesson (None if it cannot be built) and the problems found."""
    import tomllib  # here, not at the top: a start that finds its lessons in the cache never parses one

    path = Path(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)  # never more, whatever the file claims to be
        if len(raw) > MAX_FILE_BYTES:
            return None, [LessonError(path, f"the file is over {MAX_FILE_BYTES // 1024} KB",
                                      "split it into several lessons; a lesson is a few KB of text")]
        source = raw.decode("utf-8")
        found = too_big(source)
        if found is not None:
            message, fix, line, key = found
            return None, [LessonError(path, message, fix, fld=key, line=line)]
        data = tomllib.loads(source)
    except tomllib.TOMLDecodeError as err:
        line = getattr(err, "lineno", None) or _line_of(str(err))
        return None, [LessonError(path, f"invalid TOML: {err}", "correct the TOML syntax on that line", line=line)]
    except (OSError, UnicodeDecodeError) as err:
        return None, [LessonError(path, f"cannot read the file: {err}", "save it as UTF-8 text")]
    except (ValueError, RecursionError) as err:  # what the scan (too_big) missed: tomllib's own limits
        return None, [LessonError(path, f"tomllib cannot read it: {type(err).__name__}: {cut(str(err), 120)}",
                                  "write shorter numbers and flatter tables")]
    return build(path, data, hashlib.sha256(raw).hexdigest())


def build(path: Path, data: dict, digest: str, cached: bool = False) -> tuple[Lesson | None, list[LessonError]]:
    """The lesson in a file's parsed TOML, with every check the loader makes; the problems found. `cached`: the
    data comes from the parsed-lessons cache (lessons/cache.py), which anyone who can write the state folder can
    write. It gets every check but those that need a view's parameters (importing them would import numpy before
    the first frame): a view id must be one the engine has, a setting's value a plain number, boolean or string,
    and the view checks the values itself whenever it runs (View.resolve)."""
    path = Path(path)
    c = _Checker(path, cached)
    c.lesson_id = data.get("id") if isinstance(data.get("id"), str) else None
    _check_strings(c, data)
    c.keys(data, LESSON_KEYS, "")
    version = data.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version != FORMAT_VERSION:
        c.error(f"format_version must be the whole number {FORMAT_VERSION}",
                f"write format_version = {FORMAT_VERSION}", "format_version")
    m = FILE_NAME.match(path.name)
    if c.lesson_id is None:
        c.error("missing id", 'write id = "…", the part of the file name after NN-', "id")
    elif not m or m.group(2) != c.lesson_id:
        c.error(f"the file name {path.name!r} does not match the id", f"name the file NN-{c.lesson_id}.toml", "id")
    order = data.get("order")
    if not isinstance(order, int) or isinstance(order, bool) or order < 1:
        c.error("order must be a whole number from 1", "write order = 1 for the first lesson", "order")
        order = 0
    title = c.text(data, "title")

    steps = _steps(c, data.get("steps"))
    experiments = _experiments(c, data.get("experiments", []), steps)
    _check_hints(c, steps, experiments)
    pitfalls = []
    raw_pitfalls = data.get("pitfalls", [])
    if not isinstance(raw_pitfalls, list):
        c.error("must be an array of tables", "write each as [[pitfalls]]", "pitfalls")
        raw_pitfalls = []
    for i, p in enumerate(raw_pitfalls):
        if not isinstance(p, dict):
            c.error("must be a table", "write each as [[pitfalls]] with text.en and text.zh", f"pitfalls[{i}]")
            continue
        c.keys(p, PITFALL_KEYS, f"pitfalls[{i}].")
        pitfalls.append(c.text(p, "text", f"pitfalls[{i}]."))
    from .questions import parse_questions
    questions = parse_questions(c, data.get("questions", []), steps, experiments)
    if c.errors:
        return None, c.errors
    return Lesson(c.lesson_id, order, title, tuple(steps), tuple(experiments), tuple(pitfalls), path, digest,
                  tuple(questions)), []


def _steps(c: _Checker, raw):
    if not isinstance(raw, list) or not raw:
        c.error("a lesson needs at least one step", "add a [[steps]] table", "steps")
        return []
    steps, seen, known = [], set(), c.views
    for i, s in enumerate(raw):
        if not isinstance(s, dict):
            c.error(f"a step must be a table, got {_shown(s)}", "write each step as [[steps]]", f"steps[{i}]")
            continue
        sid = s.get("id") if isinstance(s.get("id"), str) else None
        c.step_id = sid or f"#{i + 1}"
        if sid is None:
            c.error("missing id", 'write id = "…", unique within the lesson', "id")
        elif sid in seen:
            c.error(f"duplicate step id {sid!r}", "give every step its own id", "id")
        seen.add(sid)
        c.keys(s, STEP_KEYS, "")
        title, text = c.text(s, "title"), c.text(s, "text")
        view = s.get("view")
        if not isinstance(view, str) or view not in known:
            c.error(f"unknown view {_shown(view)}", f"use one of: {', '.join(known)}", "view")
            view = None
        params = c.view_params(view, s.get("params", {}), "params")
        compare = c.view_params(view, s["compare"], "compare") if "compare" in s else None
        tables = s.get("tables", [])
        if not isinstance(tables, list) or not all(isinstance(t, str) for t in tables):
            c.error("must be a list of table keys", 'write tables = ["…"]', "tables")
            tables = []
        rows = s.get("rows", {})
        if not isinstance(rows, dict) or not all(
                isinstance(v, list) and v and all(isinstance(i, int) and not isinstance(i, bool) for i in v)
                for v in rows.values()):
            c.error("must map table keys to lists of row numbers", 'write rows = { items = [0, -2, -1] }', "rows")
            rows = {}
        for key in rows:
            if tables and key not in tables:
                c.error(f"table {key!r} is not among the step's tables", f"use one of: {', '.join(tables)}",
                        f"rows.{key}")
        hints = s.get("hints", {})
        if not isinstance(hints, dict):
            c.error("must be a table of experiment keys", 'write hints.1.en = "…" and hints.1.zh = "…"', "hints")
            hints = {}
        hints = {key: c.text(hints, key, "hints.") for key in hints}
        steps.append(Step(sid or "", title, text, view, params, compare, tuple(tables),
                          {k: tuple(v) for k, v in rows.items()}, hints))
    c.step_id = None
    return steps


def _experiments(c: _Checker, raw, steps):
    if not isinstance(raw, list):
        c.error("must be an array of tables", "write each as [[experiments]]", "experiments")
        return []
    experiments, keys, known = [], set(), c.views
    for i, e in enumerate(raw):
        fld = f"experiments[{i}]."
        if not isinstance(e, dict):
            c.error(f"an experiment must be a table, got {_shown(e)}", "write each as [[experiments]]",
                    f"experiments[{i}]")
            continue
        c.keys(e, EXPERIMENT_KEYS, fld)
        key = e.get("key")
        if not isinstance(key, str) or key not in "123456789" or len(key) != 1:
            c.error(f"key must be one digit from \"1\" to \"9\", got {_shown(key)}", f'write key = "{i + 1}"',
                    fld + "key")
            key = None
        elif key in keys:
            c.error(f"key {key!r} is bound twice", "give each experiment its own key", fld + "key")
        elif key != str(i + 1):
            c.error(f"key {key!r} is out of order", f'the experiments box lists keys 1, 2, 3…: write key = "{i + 1}"',
                    fld + "key")
        keys.add(key)
        title, text = c.text(e, "title", fld), c.text(e, "text", fld)
        if "action" in e:
            action = e["action"]
            if not isinstance(action, str) or action not in ACTIONS:
                c.error(f"unknown action {_shown(action)}", f"use one of: {', '.join(ACTIONS)}", fld + "action")
                action = None
            if "param" in e or "values" in e:
                c.error("an action takes no param or values", "remove param and values, or remove action",
                        fld + "action")
            experiments.append(Experiment(key if isinstance(key, str) else "", title, text, None, (), action))
            continue
        param, values = e.get("param"), e.get("values")
        if not isinstance(param, str):
            c.error(f"param must be the name of a setting, got {_shown(param)}", 'write param = "NAME"',
                    fld + "param")
            param = None
        views = sorted({s.view for s in steps if known.get(s.view) is not None
                        and param in {p.name for p in known[s.view].params}})
        if param is not None and not views and not c.cached:
            c.error(f"no step of this lesson shows a view that takes {param!r}",
                    "name a parameter of one of the lesson's views (see `xf-tour views`)", fld + "param")
        if not isinstance(values, list) or len(values) < 2:
            c.error("values needs at least two values", "write values = [first, second]", fld + "values")
            values = []
        values = [v for v in values if c.plain(v, fld + "values")] if c.cached else values
        typed = []
        for v in values:
            for view_id in views:
                try:
                    value = known[view_id].param(param).parse(v)
                except EngineError as err:
                    c.error(err.en, f"choose values that {view_id!r} accepts", fld + "values")
                    break
            else:
                typed.append(value if views else v)
        experiments.append(Experiment(key if isinstance(key, str) else "", title, text, param, tuple(typed)))
    return experiments


def applies(experiment: Experiment, step: Step, names=None) -> bool:
    """Whether an experiment's key can change this step: its view takes the parameter, or it is an action
    whose view this is. `names`: the view's parameters, when they are known without the view (Tour.recall)."""
    if experiment.action is not None:
        return step.view in ACTION_VIEWS.get(experiment.action, ())
    if names is None:
        view = view_of(step.view)
        names = () if view is None else {p.name for p in view.params}
    return experiment.param in names


def view_of(view_id):
    """The view with this id, or None for an unknown one. Only the topic module that defines it is imported:
    a start that finds its lessons in the cache (lessons/cache.py) imports the views it shows, not all."""
    try:
        return get_view(view_id)
    except EngineError:
        return None


def _view_ids() -> dict:
    """Every view's id, each mapped to None: what a cached lesson is checked against, no view imported."""
    from engine.views.core import HOMES
    return dict.fromkeys(HOMES)


def _views() -> dict:
    """Every view, by id: what parsing a lesson checks its steps against. Imported on first use, for the
    reason view_of() gives."""
    from engine.views import VIEWS
    return VIEWS


def _check_hints(c: _Checker, steps, experiments) -> None:
    """A step's own hint must belong to a key that works on that step."""
    by_key = {x.key: x for x in experiments}
    for step in steps:
        c.step_id = step.id
        for key in step.hints:
            x = by_key.get(key)
            if x is None:
                c.error(f"no experiment has key {key!r}", f"use one of: {', '.join(by_key) or 'none'}", f"hints.{key}")
            elif not c.cached and not applies(x, step):
                c.error(f"experiment {key!r} does not change this step", "remove the hint, or give it to a step that "
                        f"shows {x.param or x.action}", f"hints.{key}")
    c.step_id = None


def _check_strings(c: _Checker, data) -> None:
    """Every string of a file, keys included: no longer than MAX_TEXT, no UNSAFE character."""
    def walk(value, where):
        if isinstance(value, str):
            yield where, value
        elif isinstance(value, dict):
            for key, item in value.items():
                path = f"{where}.{key}" if where else key
                yield path, key
                yield from walk(item, path)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                yield from walk(item, f"{where}[{i}]")

    for where, text in walk(data, ""):
        if len(text) > MAX_TEXT:
            c.error(f"a text of {len(text):,} characters, over the cap of {MAX_TEXT:,}",
                    "split it across steps; a step's prose must fit one 80x24 screen anyway", where)
        bad = UNSAFE.search(text)
        if bad:
            what = "a tab" if bad.group() == "\t" else f"the control or bidi character U+{ord(bad.group()):04X}"
            c.error(f"{what} at character {bad.start() + 1}",
                    "remove it: a lesson is plain text (newlines and spaces only) and cannot move the cursor or "
                    "set colours", where)


def _shown(value) -> str:
    """A value from a file as an error message quotes it: its repr, cut short."""
    return cut(repr(value), 40)


def _line_of(message: str) -> int | None:
    m = re.search(r"line (\d+)", message)
    return int(m.group(1)) if m else None


# --- a folder of lessons ----------------------------------------------------------------

def lesson_files(folder: Path) -> list[Path]:
    return sorted(p for p in Path(folder).glob("*.toml") if p.is_file())


def load_lessons(folder: Path = SHIPPED, strict: bool = True,
                 parse=parse_lesson) -> tuple[list[Lesson], list[LessonError]]:
    """Every lesson in `folder`, in order; with strict, any problem raises LessonsInvalid. `parse` reads one
    file (lessons.cache.Parsed.parse recalls the files parsed before)."""
    folder = Path(folder)
    lessons, errors = [], []
    if not folder.is_dir():
        errors.append(LessonError(folder, "not a folder", "give a folder that holds NN-ID.toml files"))
    elif not lesson_files(folder):
        errors.append(LessonError(folder, "holds no .toml lesson files", "add files named NN-ID.toml"))
    for path in lesson_files(folder) if folder.is_dir() else []:
        lesson, problems = parse(path)
        errors += problems
        if lesson is not None:
            lessons.append(lesson)
    for kind, attr in (("id", "id"), ("order", "order")):
        seen = {}
        for lesson in lessons:
            value = getattr(lesson, attr)
            if value in seen:
                errors.append(LessonError(lesson.path, f"duplicate lesson {kind} {value!r}, also in {seen[value].name}",
                                          f"give every lesson its own {kind}", lesson.id, fld=kind))
            seen[value] = lesson.path
    if strict and errors:
        raise LessonsInvalid(errors)
    return sorted(lessons, key=lambda lesson: lesson.order), errors
