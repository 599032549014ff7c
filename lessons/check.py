"""Run every step of a lesson through the engine at every setting a learner can reach, and check
that each placeholder, condition and row the lesson names exists there. Slower than the loader's
checks, so the loader does not run them: `xf-tour check-lessons` and the tests do. The tour runs them
through a Checked cache, so that an unchanged file of a learner's own folder is checked once."""

import itertools
import math
from pathlib import Path

from engine.errors import EngineError, NoModel
from engine.views import Tr, get_view

from .cache import code_stamp, read_json, write_json
from .loader import LANGS, Lesson, LessonError, Step, applies, cut
from .template import TemplateError, lookup, pieces

MAX_VARIANTS = 512  # beyond this many combinations, each value is checked alone (and always for the real model)


def variants(lesson: Lesson, step: Step) -> list[dict]:
    """Every combination of experiment values a learner can reach on this step, as overrides; {} first.
    Each key is either unpressed (the step's own value) or at one of its values."""
    axes = {}
    for x in lesson.experiments:
        if x.action is None and applies(x, step):
            axes.setdefault(x.param, [None]).extend(v for v in x.values if v not in axes.get(x.param, ()))
    names = list(axes)
    alone = get_view(step.view).model  # a run of the real model is a forward pass of 135M parameters: each value
    if not alone and math.prod(len(v) for v in axes.values()) <= MAX_VARIANTS:  # is tried alone, not every mix
        combos = itertools.product(*axes.values())
    else:
        combos = [(None,) * len(names)] + [tuple(value if i == j else None for j in range(len(names)))
                                           for i, name in enumerate(names) for value in axes[name]]
    out = []
    for combo in combos:
        overrides = {name: value for name, value in zip(names, combo) if value is not None}
        if overrides not in out:
            out.append(overrides)
    return out


def texts(lesson: Lesson, step: Step) -> list[tuple[str, Tr]]:
    """Every text a step fills from its view: the prose, and the hint of each key that works on it."""
    out = [("text", step.text)]
    for x in lesson.experiments:
        if applies(x, step):
            fld = f"hints.{x.key}" if x.key in step.hints else f"experiments[{x.key}].text"
            out.append((fld, step.hints.get(x.key) or x.text))
    return out


def needs_model(lesson: Lesson) -> bool:
    """Whether a step of the lesson runs the real model, which only a fetched or named file makes checkable."""
    return any(get_view(step.view).model for step in lesson.steps)


def check_deep(lesson: Lesson, steps=None, more=None) -> list[LessonError]:
    """Run every step through the engine at every reachable setting; check every placeholder, condition and row.
    A step whose view finds no real model (NoModel) is left out: needs_model says which lessons have one.
    With `steps` (step ids), only those steps. `more(lesson, steps)`: the app's own checks on top (the questions,
    graded as tui/quiz.py grades them: the lessons package never reaches up into the app)."""
    errors, seen = [], set()

    def err(step, message, fix, fld, at=""):
        if (step.id, fld, message) not in seen:  # once, at the first setting where it shows
            seen.add((step.id, fld, message))
            errors.append(LessonError(lesson.path, message + at, fix, lesson.id, step.id, fld))

    for step in lesson.steps:
        if steps is not None and step.id not in steps:
            continue
        for overrides in variants(lesson, step):
            for base, name in ((step.params, "params"), ({**step.params, **(step.compare or {})}, "compare")):
                if name == "compare" and step.compare is None:
                    continue
                at = " (at " + ", ".join(f"{k}={v}" for k, v in overrides.items()) + ")" if overrides else ""
                try:
                    result = get_view(step.view).run({**base, **overrides})
                except EngineError as e:
                    if isinstance(e, NoModel):  # a real-model step without the model: not checked here
                        break                           # (check-lessons says so; the tests check it with one)
                    keys = ",".join(x.key for x in lesson.experiments if x.param in overrides)
                    err(step, f"the engine refuses it: {e.en}", "choose values the view accepts",
                        f"experiments[{keys}].values" if overrides else name, at)
                    continue
                tables = {t.key: t for t in result.tables}
                shown = tables.keys() | {c.key for c in result.charts}  # a step may name a chart among its tables
                for t in step.tables:
                    if t not in shown:
                        err(step, f"view {step.view!r} has no table or chart {t!r}",
                            f"use some of: {', '.join(sorted(shown))}", "tables")
                for key, indices in step.rows.items():
                    n = len(tables[key].rows) if key in tables else 0
                    if key not in tables:
                        err(step, f"view {step.view!r} has no table {key!r}",
                            f"use some of: {', '.join(sorted(tables))}", f"rows.{key}")
                    elif any(not -n <= i < n for i in indices):
                        err(step, f"table {key!r} has {n} rows", f"use row numbers from {-n} to {n - 1}",
                            f"rows.{key}", at)
                for fld, text in texts(lesson, step):
                    for lang in LANGS:
                        try:
                            refs = [ref for ref, is_ref in pieces(text(lang), result) if is_ref]
                        except TemplateError as e:
                            err(step, str(e), "name a true-or-false fact or setting of the step's view "
                                "(`xf-tour print VIEW --json`)", f"{fld}.{lang}", at)
                            continue
                        for ref in refs:
                            try:
                                lookup(result, ref)
                            except KeyError as e:
                                err(step, cut(f"placeholder {{{ref}}}: {e.args[0]}", 160),
                                    "name a fact, a setting, or table.row.column of the step's view "
                                    "(`xf-tour print VIEW --json`)", f"{fld}.{lang}", at)
    if more is not None:
        errors += more(lesson, steps)
    return errors


# --- a cache of the files that passed -----------------------------------------------------

CACHE_NAME = "checked-lessons.json"


class Checked:
    """Which lesson files passed check_deep, by the hash of their bytes: a file is checked once per change.

    Kept as lessons/cache.py keeps its caches. Only passes are kept: a file with a problem is checked, and its
    problem reported, every time."""

    def __init__(self, path: Path | None, more=None, code: tuple[Path, ...] = ()):
        # more: check_deep's; code: the folders of its code, which the stamp covers too (a changed grader
        # checks every file again)
        self.path, self.stamp, self.more = path, code_stamp(*code), more
        self.passed, self.checks = set(read_json(path, self.stamp)), 0

    def problems(self, lesson: Lesson, steps=None) -> list[LessonError]:
        """check_deep(lesson, steps), unless the lesson's file passed before; a full pass is remembered."""
        if lesson.digest and lesson.digest in self.passed:
            return []
        self.checks += 1
        errors = check_deep(lesson, steps, self.more)
        if not errors and steps is None and lesson.digest:
            self.passed.add(lesson.digest)
        return errors

    def all_problems(self, lessons) -> list[LessonError]:
        """Every lesson's problems; the cache written when a file passed that had not before."""
        before = set(self.passed)
        errors = [e for lesson in lessons for e in self.problems(lesson)]
        if self.passed != before:
            write_json(self.path, self.stamp, dict.fromkeys(sorted(self.passed), True))
        return errors
