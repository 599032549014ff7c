"""Questions a lesson asks before an experiment key acts: predict, then press, then see. Read from a lesson's
[[questions]] tables as data; the right answer is never in the file. A question names the figures that decide
it (facts or table cells of the step's view), and the engine's values at the setting on screen and at the one
the key will reach decide which option is right (tui/quiz.py). See lessons/README.md, "Questions".
"""

import math
import re

from engine.records import record
from engine.views import Tr

KINDS = ("direction", "larger", "choice", "number")
QUESTION_KEYS = ("id", "step", "key", "kind", "fact", "than", "labels", "wrong", "band", "tolerance", "log",
                 "ask", "why")
# which fields each kind takes besides id, step, key, kind, ask and why
NEEDS = {"direction": ("fact", "band"), "larger": ("fact", "than", "labels"), "choice": ("fact", "wrong"),
         "number": ("fact", "tolerance")}
ALLOWS = {"direction": NEEDS["direction"], "larger": NEEDS["larger"], "choice": NEEDS["choice"],
          "number": ("fact", "tolerance", "log")}
MAX_WRONG = 3  # a choice shows its right value and at most three classic mistakes: options a to d
ID = re.compile(r"[a-z][a-z0-9-]{0,39}")
REF = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[0-9]{1,6}\.[A-Za-z_][A-Za-z0-9_]*)?")


@record
class Question:
    id: str        # unique within the lesson: the progress file and the class report name it so
    step: str      # the id of the step it is asked on
    key: str       # the experiment key whose press it asks about
    kind: str      # one of KINDS
    ask: Tr        # the question, a template filled at the setting on screen
    why: Tr        # the reveal's one sentence, a template filled at the setting the key reached
    fact: str      # the figure it asks about (larger: the first of the two)
    than: str = ""                 # larger: the second figure
    labels: tuple[Tr, ...] = ()    # larger: the two figures' names, options a and b
    wrong: tuple[str, ...] = ()    # choice: the figures a classic mistake gives
    band: float = 0.0              # direction: "stays" means within this much of the value before
    tolerance: float = 0.0         # number: how far off a typed number may be (a fraction; log: a factor)
    log: bool = False              # number: judged on a log scale (an estimate spanning powers of ten)

    def refs(self) -> tuple[str, ...]:
        """Every figure the question names."""
        return (self.fact, *((self.than,) if self.than else ()), *self.wrong)

    def to_toml(self) -> dict:
        """The question as its [[questions]] table: what lessons/cache.py keeps and reads back."""
        data = {"id": self.id, "step": self.step, "key": self.key, "kind": self.kind,
                "ask": {"en": self.ask.en, "zh": self.ask.zh}, "why": {"en": self.why.en, "zh": self.why.zh},
                "fact": self.fact}
        if self.kind == "direction":
            data["band"] = self.band
        if self.kind == "larger":
            data["than"] = self.than
            data["labels"] = [{"en": x.en, "zh": x.zh} for x in self.labels]
        if self.kind == "choice":
            data["wrong"] = list(self.wrong)
        if self.kind == "number":
            data["tolerance"], data["log"] = self.tolerance, self.log
        return data


def parse_questions(c, raw, steps, experiments) -> list[Question]:
    """The lesson's [[questions]], each problem reported through the loader's checker `c` (lessons/loader.py)."""
    if not isinstance(raw, list):
        c.error("must be an array of tables", "write each as [[questions]]", "questions")
        return []
    step_ids = {s.id for s in steps}
    keys = {x.key: x for x in experiments}
    out, seen = [], set()
    for i, q in enumerate(raw):
        fld = f"questions[{i}]."
        if not isinstance(q, dict):
            c.error("a question must be a table", "write each as [[questions]]", f"questions[{i}]")
            continue
        c.keys(q, QUESTION_KEYS, fld)
        qid, step, key, kind = (q.get(name) for name in ("id", "step", "key", "kind"))
        if not isinstance(qid, str) or not ID.fullmatch(qid):
            c.error(f"id must be a short lowercase name, got {_shown(qid)}", 'write id = "scale-top"', fld + "id")
            qid = None
        elif qid in seen:
            c.error(f"duplicate question id {qid!r}", "give every question its own id", fld + "id")
        seen.add(qid)
        if not isinstance(step, str) or step not in step_ids:
            c.error(f"no step {_shown(step)} in this lesson", f"use one of: {', '.join(sorted(step_ids))}",
                    fld + "step")
            step = None
        x = keys.get(key) if isinstance(key, str) else None
        if x is None or x.action is not None:
            c.error(f"key must be the key of one of the lesson's experiments that sets a value, got {_shown(key)}",
                    f"use one of: {', '.join(k for k, e in keys.items() if e.action is None) or 'none'}",
                    fld + "key")
            x = None
        if kind not in KINDS:
            c.error(f"unknown kind {_shown(kind)}", f"use one of: {', '.join(KINDS)}", fld + "kind")
            continue
        for name in NEEDS[kind]:
            if name not in q:
                c.error(f"a {kind} question needs {name}", _FIX[name], fld + name)
        for name in q:
            if name in QUESTION_KEYS[4:11] and name not in ALLOWS[kind]:
                c.error(f"a {kind} question takes no {name}", f"remove {name}", fld + name)
        ask, why = c.text(q, "ask", fld), c.text(q, "why", fld)
        refs = [q.get("fact"), *([q.get("than")] if kind == "larger" else []),
                *(q.get("wrong") if isinstance(q.get("wrong"), list) else [])]
        for name, ref in zip(("fact", "than", "wrong"), refs):
            if ref is not None and (not isinstance(ref, str) or not REF.fullmatch(ref)):
                c.error(f"not a fact or table.row.column: {_shown(ref)}",
                        "name a fact or a cell of the step's view (`xf-tour print VIEW --json`)", fld + name)
        wrong = q.get("wrong", [])
        if kind == "choice" and (not isinstance(wrong, list) or not 1 <= len(wrong) <= MAX_WRONG):
            c.error(f"wrong must list 1 to {MAX_WRONG} figures", 'write wrong = ["fact_a", "fact_b"]', fld + "wrong")
            wrong = []
        labels = q.get("labels", [])
        if kind == "larger":
            if not isinstance(labels, list) or len(labels) != 2:
                c.error("labels must be two texts, one for each figure",
                        'write labels = [{ en = "…", zh = "…" }, { en = "…", zh = "…" }]', fld + "labels")
                labels = []
            labels = [c.text({"label": x}, "label", f"{fld}labels[{j}].") for j, x in enumerate(labels)]
        band = _number(c, q, "band", fld, lambda v: v >= 0, "a number from 0")
        tolerance = _number(c, q, "tolerance", fld, lambda v: v > 0, "a number above 0")
        log = q.get("log", False)
        if not isinstance(log, bool):
            c.error("log must be true or false", "write log = true for an estimate judged by its power of ten",
                    fld + "log")
            log = False
        if qid is None or step is None or x is None or c.errors:
            continue
        out.append(Question(qid, step, key, kind, ask, why, q.get("fact", ""), q.get("than", ""),
                            tuple(labels), tuple(wrong), band, tolerance, log))
    return out


_FIX = {"fact": 'write fact = "NAME" (a fact, or table.row.column)', "band": "write band = 0.01",
        "than": 'write than = "NAME", the figure compared with fact', "tolerance": "write tolerance = 0.1",
        "labels": 'write labels = [{ en = "…", zh = "…" }, { en = "…", zh = "…" }]',
        "wrong": 'write wrong = ["NAME", …]: figures a classic mistake gives'}


def _number(c, q: dict, name: str, fld: str, ok, what: str) -> float:
    if name not in q:  # a kind that takes it says so above
        return 0.0
    value = q[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not ok(value):
        c.error(f"{name} must be {what}, got {_shown(value)}", _FIX[name], fld + name)
        return 0.0
    return float(value)


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"
