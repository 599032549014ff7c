"""A question on a real pty, as a learner over SSH meets it: asked before the key acts, answered with a letter,
the reveal drawn, the answer kept; and each of those keys repaints only the lines that change (under 6 KB)."""

import json

import pytest
from helpers.pty import START_S, terminals

pytestmark = pytest.mark.slow  # the tour on a pty

SCALED = "Scaled beside unscaled"  # the attention lesson's fifth step, which asks before key 1
MAX_BYTES_PER_KEY = 6 * 1024


def test_a_question_over_a_pty_is_asked_answered_and_kept(tmp_path):
    from lessons.loader import load_lessons
    from tui.progress import Progress
    from tui.tour_state import Tour

    lessons, _ = load_lessons()
    tour = Tour(lessons, Progress(), "en")
    attention = next(x for x in lessons if x.id == "attention")
    tour.goto("attention", [s.id for s in attention.steps].index("scaled"))
    question = next(q for q in tour.lesson.questions if q.step == "scaled" and q.key == "1")
    right = tour.pose(question).answer

    with terminals(tmp_path / "state") as start:
        term = start("--lesson", "attention", "--lang", "en")
        term.wait_for("What I seek", timeout=START_S)
        for _ in range(4):
            mark = term.mark()
            term.press(b"n")
            term.wait_for("/8", mark)
        term.wait_for(SCALED)
        mark = term.mark()
        term.press(b"1")
        term.wait_for("Predict [1] d 8 -> 64", mark)
        asked = len(term.raw(mark))
        mark = term.mark()
        term.press(right.encode())
        term.wait_for("Right: ", mark)
        term.wait_for("d=64", mark)
        revealed = len(term.raw(mark))
        term.press(b"q")
        status, _ = term.wait_exit(5)
        assert status == 0
    record = json.loads((tmp_path / "state" / "progress.json").read_text(encoding="utf-8"))["answers"]["attention"]
    assert record[question.id]["choice"] == right and record[question.id]["right"] is True
    assert asked < MAX_BYTES_PER_KEY and revealed < MAX_BYTES_PER_KEY, (asked, revealed)
