"""How long a lesson takes, estimated from what it asks of a learner: its words, its steps, its key presses and its
questions. An estimate, said as one ("about"), with its rates in the open (README, the overview's last line):

- reading at READ_WORDS English words a minute, or READ_CHARS Chinese characters (a Latin word or number in
  Chinese prose counts as a character); technical prose read with tables beside it goes slower than a novel;
- LOOK_S seconds on each step's tables, the recap included;
- PRESS_S seconds a press: every experiment key on every step it changes, once through its values;
- ASK_S seconds a question: reading it, predicting, and the reveal.
"""

import math
import re
import unicodedata

READ_WORDS = 200  # English words a minute
READ_CHARS = 300  # Chinese characters a minute
LOOK_S = 20       # seconds a step's tables take to read
PRESS_S = 10      # seconds a press takes: look at what changed
ASK_S = 30        # seconds a question takes

_CONTROL = re.compile(r"\{(?:if [^{}]*|end)\}")  # a template's {if ...} and {end}: no words; both branches count
_FIELD = re.compile(r"\{[^{}]*\}")  # a figure filled in: one word; {else} parts the branches
_LATIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9.,'_-]*")


def words(text: str, lang: str) -> int:
    """What a reader reads in `text`, in the unit of the reading rate: English words, or Chinese characters
    plus the Latin words among them."""
    text = _FIELD.sub(" 0 ", _CONTROL.sub("", text).replace("{else}", " "))
    if lang == "en":
        return len(text.split())
    wide = sum(unicodedata.east_asian_width(c) in "WF" and not unicodedata.category(c).startswith("P") for c in text)
    return wide + len(_LATIN.findall(text))


def seconds(lesson, lang: str) -> float:
    """The estimate of one lesson, in seconds."""
    from .loader import applies

    read = sum(words(step.text(lang), lang) for step in lesson.steps)
    read += sum(words(p(lang), lang) for p in lesson.pitfalls)  # the recap's
    presses = sum(len(x.values) for step in lesson.steps for x in lesson.experiments
                  if x.action is None and applies(x, step))
    rate = READ_WORDS if lang == "en" else READ_CHARS
    return 60 * read / rate + LOOK_S * (len(lesson.steps) + 1) + PRESS_S * presses + ASK_S * len(lesson.questions)


def minutes(lesson, lang: str) -> int:
    """The estimate of one lesson in whole minutes, rounded up."""
    return math.ceil(seconds(lesson, lang) / 60)
