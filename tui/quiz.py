"""Predict, then press: a lesson's question (lessons/questions.py) posed at the setting on screen and graded
by the engine. The right option is worked out when the question is asked, from the step's view at the setting
on screen (before) and at the value the key will reach (after), so it stays right at every setting, in a
learner's own lessons too.

- direction: does the figure rise, fall, or stay within the band (after - before)?
- larger: which of two figures is larger, after the press?
- choice: the figure's value after the press, among the values classic mistakes give (the options sorted by
  value, so their order gives nothing away)
- number: the figure after the press, typed; right within the tolerance (on a log scale: within a factor)
"""

import math
import time
from dataclasses import dataclass, field

from engine.views import Result, Tr, fmt_value
from lessons.questions import Question
from lessons.template import lookup

from .format import format_value

LETTERS = "abcd"
EDGE = 0.1  # a direction question whose change lies within this fraction of its band's edge has no clear answer
MAX_TYPED = 24  # characters of a typed number
UNITLESS = ("bytes", "short", "pct", "mask", "text")  # formats whose shown number is not the raw value


class NotPosable(ValueError):
    """A question that has no single right answer here: a figure that is not a number, a tie, a change at the
    edge of the band. check-lessons refuses the lesson; the app skips the question."""


@dataclass
class Posed:
    """A question asked at one setting: its options and the one the engine says is right."""

    question: Question
    lesson: str
    param: str
    was: object          # the setting on screen
    to: object           # the value the key will reach
    before: Result
    after: Result
    options: list = field(default_factory=list)  # Tr each, options a, b, ...; empty for a number
    answer: str = ""     # the letter of the right option; "" for a number
    truth: float = 0.0   # the figure asked about, after the press

    def grade(self, choice: str) -> bool:
        """Whether an answer is right: a letter, or for a number question the text typed."""
        q = self.question
        if q.kind != "number":
            return choice == self.answer
        guess = typed_number(choice)
        if guess is None:
            return False
        if q.log:
            return guess > 0 and abs(math.log(guess / self.truth)) <= math.log(1 + q.tolerance)
        return abs(guess - self.truth) <= q.tolerance * abs(self.truth)

    def evidence(self) -> dict:
        """What decides the answer, as `xf-tour print VIEW --set ... --json` gives it: the settings before and
        after the press, and each figure's [before, after], a fact as views[0].facts has it, a cell
        (table.row.column) as views[0].tables has it."""
        def pair(ref: str) -> list:
            return [_plain(lookup(self.before, ref)[0]), _plain(lookup(self.after, ref)[0])]

        refs = self.question.refs()
        return {"view": self.after.view, "before": dict(self.before.params), "after": dict(self.after.params),
                "facts": {ref: pair(ref) for ref in refs if "." not in ref},
                "cells": {ref: pair(ref) for ref in refs if "." in ref}}


def figure(result: Result, ref: str) -> float:
    """The number a fact or cell holds; NotPosable when it is not a finite number."""
    try:
        value, _ = lookup(result, ref)
    except KeyError as err:
        raise NotPosable(err.args[0]) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise NotPosable(f"{ref} is not a number here ({value!r})")
    return float(value)


def shown(result: Result, ref: str, lang: str) -> str:
    """A figure as the screen writes it."""
    value, fmt = lookup(result, ref)
    return format_value(value, fmt, lang)


def pose(question: Question, lesson: str, param: str, was, to, before: Result, after: Result) -> Posed:
    """The question at this setting and the value the key reaches; NotPosable when it has no single answer."""
    q = question
    posed = Posed(q, lesson, param, was, to, before, after, truth=figure(after, q.fact))
    if q.kind == "direction":
        first = figure(before, q.fact)
        change = posed.truth - first
        if q.band > 0 and abs(abs(change) - q.band) < EDGE * q.band:
            raise NotPosable(f"{q.fact} changes by {change:.4g}, too close to the band {q.band:g}")
        if abs(change) > q.band and shown(before, q.fact, "en") == shown(after, q.fact, "en"):
            raise NotPosable(f"{q.fact} changes by {change:.4g}, which its {shown(after, q.fact, 'en')} does not show")
        band = f"{q.band:g}"
        stays = Tr(f"stay within {band}", f"变化不超过 {band}") if q.band else Tr("stay the same", "不变")
        posed.options = [Tr("rise", "变大"), Tr("fall", "变小"), stays]
        posed.answer = "c" if abs(change) <= q.band else "a" if change > 0 else "b"
    elif q.kind == "larger":
        a, b = figure(after, q.fact), figure(after, q.than)
        if a == b or shown(after, q.fact, "en") == shown(after, q.than, "en"):
            raise NotPosable(f"{q.fact} and {q.than} are equal here ({shown(after, q.fact, 'en')})")
        posed.options = list(q.labels)
        posed.answer = "a" if a > b else "b"
    elif q.kind == "choice":
        refs = sorted((q.fact, *q.wrong), key=lambda ref: figure(after, ref))
        texts = [shown(after, ref, "en") for ref in refs]
        if len(set(texts)) < len(texts):
            raise NotPosable(f"two options read the same here: {', '.join(texts)}")
        posed.options = [Tr(shown(after, ref, "en"), shown(after, ref, "zh")) for ref in refs]
        posed.answer = LETTERS[refs.index(q.fact)]
    elif lookup(after, q.fact)[1] in UNITLESS:
        raise NotPosable(f"{q.fact} is written with a unit the learner would not type ({lookup(after, q.fact)[1]}): "
                         "ask for a fact written as a plain number, in the unit the question names")
    elif q.log and posed.truth <= 0:
        raise NotPosable(f"{q.fact} is {posed.truth:g}: a log scale needs a positive number")
    elif not q.log and posed.truth == 0:
        raise NotPosable(f"{q.fact} is 0: a tolerance in percent of 0 admits only 0")
    return posed


def next_value(experiment, shown):
    """The value a press of the experiment's key reaches from the value on screen (Tour._next_index)."""
    values = experiment.values
    return values[(values.index(shown) + 1) % len(values) if shown in values else 0]


def typed_number(text: str) -> float | None:
    """A number as a learner types it (1.5, 2e9, 1,024, 3 GB is not one); None for anything else."""
    text = text.strip().replace(",", "").replace("_", "")
    if not text or len(text) > MAX_TYPED:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _plain(value):
    return value if isinstance(value, (bool, int, float, str)) or value is None else str(value)


# --- what the message lines say -------------------------------------------------------------------

def setting_change(posed: Posed) -> str:
    return f"[{posed.question.key}] {posed.param} {fmt_value(posed.was)} -> {fmt_value(posed.to)}"


def ask_lines(posed: Posed, lang: str) -> tuple[str, str]:
    """The two message lines of a question: what the key will do and the question; then the options."""
    from .fill import fill

    q = posed.question
    colon = "：" if lang == "zh" else ": "
    head = f"{t_('predict', lang)} {setting_change(posed)}{colon}{fill(q.ask(lang), posed.before, lang)}"
    if q.kind == "number":
        return head, t_("type_number", lang)
    options = "   ".join(f"{letter}) {option(lang)}" for letter, option in zip(LETTERS, posed.options))
    return head, f"{options}   {t_('skip_hint', lang)}"


def reveal_lines(posed: Posed, choice: str, lang: str) -> tuple[str, str]:
    """The two message lines after an answer: right or not, the true figures, then the one sentence on why."""
    from .fill import fill

    verdict = t_("right" if posed.grade(choice) else "wrong", lang)
    sep = "：" if lang == "zh" else ": "
    mine = f" ({t_('you_typed', lang)} {choice})" if posed.question.kind == "number" else ""
    return f"{verdict}{sep}{figures(posed, lang)}{mine}", fill(posed.question.why(lang), posed.after, lang)


def figures(posed: Posed, lang: str) -> str:
    """The right option and the true figures that decide it: before -> after, or the two compared."""
    from .fill import ref_label

    q = posed.question
    comma, stop = ("，", "。") if lang == "zh" else (", ", ". ")
    if q.kind == "number":
        return f"{ref_label(posed.after, q.fact, lang)} {shown(posed.after, q.fact, lang)}"
    right = f"{posed.answer}) {posed.options[LETTERS.index(posed.answer)](lang)}"
    if q.kind == "direction":
        return (f"{right}{stop}{ref_label(posed.after, q.fact, lang)} {shown(posed.before, q.fact, lang)} -> "
                f"{shown(posed.after, q.fact, lang)}")
    if q.kind == "larger":
        return (f"{right}{stop}{q.labels[0](lang)} {shown(posed.after, q.fact, lang)}{comma}"
                f"{q.labels[1](lang)} {shown(posed.after, q.than, lang)}")
    return right


def record(posed: Posed, choice: str | None) -> dict:
    """What the progress file keeps of an answer: the choice (None: skipped), whether it was right, when."""
    return {"choice": choice, "right": choice is not None and posed.grade(choice), "t": int(time.time())}


def t_(key: str, lang: str) -> str:
    from .i18n import t
    return t(key, lang)
