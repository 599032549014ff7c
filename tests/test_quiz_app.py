"""Predict, then press, in the app at 80x24: a question asked before its key acts, answered right, answered
wrong, skipped with Esc or n, asked again after 0 or from the overview, kept across a restart, a number typed
(and a text that is not one refused inline), the recap's score."""

import json

from helpers.screen import message, screen_text, settings, step_index

from engine.records import replace
from engine.views import Tr
from lessons.loader import load_lessons
from lessons.questions import Question
from tui.app import make_app
from tui.quiz import LETTERS
from tui.screens.overview import OverviewScreen

QUESTION = "unscaled-sharpens"  # lessons/03-attention.toml: on step "scaled", before key 1 moves d


async def open_scaled(pilot, app):
    app.tour.goto("attention", step_index(app, "attention", "scaled"))
    app.lesson_screen().arrived()
    await pilot.pause()


def saved(state) -> dict:
    return json.loads((state / "progress.json").read_text(encoding="utf-8"))


async def test_a_question_waits_before_its_key_and_a_right_answer_is_kept(state):
    app = make_app(lang="en", lesson="attention", state_dir=state, asks=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_scaled(pilot, app)
        expected = app.tour.pose(next(q for q in app.tour.lesson.questions if q.id == QUESTION))
        await pilot.press("1")
        await pilot.pause()
        assert message(app).startswith("Predict [1] d 8 -> 64: the largest unscaled weight, now 0.941, will")
        assert "a) rise" in message(app) and "c) stay within 0.01" in message(app)
        assert "d=8" in settings(app)  # the key has not acted yet
        assert "a-c answer" in screen_text(app) and "Esc skip" in screen_text(app)
        await pilot.press("2")  # another experiment key is held back while the question waits
        await pilot.pause()
        assert "causal=off" in settings(app) and message(app).startswith("Predict")
        await pilot.press(expected.answer)
        await pilot.pause()
        assert "d=64" in settings(app)
        assert message(app).startswith(f"Right: {expected.answer}) fall. q.k (unscaled), max weight 0.941 -> 0.928")
        record = saved(state)["answers"]["attention"][QUESTION]
        assert record["choice"] == expected.answer and record["right"] is True
        await pilot.press("1")  # the step's second question on key 1
        await pilot.pause()
        assert message(app).startswith("Predict [1] d 64 -> 512: whose rows have the larger mean entropy?")
        await pilot.press("escape", "1")  # both asked: the key acts at once
        await pilot.pause()
        assert "d=4096" in settings(app) and not message(app).startswith("Predict")


async def test_a_wrong_answer_says_so_with_the_true_figures(state):
    app = make_app(lang="zh", lesson="attention", state_dir=state, asks=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_scaled(pilot, app)
        posed = app.tour.pose(next(q for q in app.tour.lesson.questions if q.id == QUESTION))
        wrong = next(letter for letter in LETTERS[:3] if letter != posed.answer)
        await pilot.press("1")
        await pilot.pause()
        assert message(app).startswith("先预测 [1] d 8 -> 64：")
        await pilot.press(wrong)
        await pilot.pause()
        assert message(app).startswith("不对：") and "0.941 -> 0.928" in message(app)
        assert saved(state)["answers"]["attention"][QUESTION] | {"t": 0} == {"choice": wrong, "right": False, "t": 0}


async def test_esc_skips_and_the_key_acts_n_skips_and_moves(state):
    app = make_app(lang="en", lesson="attention", state_dir=state, asks=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_scaled(pilot, app)
        await pilot.press("1", "escape")
        await pilot.pause()
        assert "d=64" in settings(app)
        assert saved(state)["answers"]["attention"][QUESTION]["choice"] is None
        await pilot.press("1", "escape", "1")  # the second question on key 1, skipped; then none is asked
        await pilot.pause()
        assert "d=4096" in settings(app)
        # the second question on the step waits on the same key; n skips it and moves on
        at = app.tour.step_index
        await pilot.press("0")  # reset: the settings, and both questions asked again
        await pilot.pause()
        await pilot.press("1")
        await pilot.pause()
        assert message(app).startswith("Predict [1] d 8 -> 64")
        await pilot.press("n")
        await pilot.pause()
        assert app.tour.step_index == at + 1 and app.lesson_screen().asking is None
        assert saved(state)["answers"]["attention"][QUESTION]["choice"] is None


async def test_answers_survive_a_restart_and_the_recap_scores_them(state):
    app = make_app(lang="en", lesson="attention", state_dir=state, asks=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_scaled(pilot, app)
        posed = app.tour.pose(next(q for q in app.tour.lesson.questions if q.id == QUESTION))
        wrong = next(letter for letter in LETTERS[:3] if letter != posed.answer)
        await pilot.press("1", wrong)
        await pilot.pause()
        await pilot.press("q")
    app = make_app(lang="en", state_dir=state, asks=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.tour.progress.answered("attention", QUESTION)["choice"] == wrong
        app.tour.goto("attention", len(app.tour.lesson.steps))  # the recap
        app.lesson_screen().arrived()
        await pilot.pause()
        text = " ".join(screen_text(app).split())
        n = len(app.tour.lesson.questions)
        assert f"Questions: 0 of {n} right, {n - 1} skipped or not yet asked." in text
        assert "Missed: the largest unscaled weight, now 0.941, will ([1] d 8 -> 64) Answer:" in text
        await pilot.press("o")
        await pilot.pause()
        assert isinstance(app.screen, OverviewScreen)
        line = str(app.screen.query_one("#lesson-list").get_option_at_index(2).prompt)
        assert line.split()[-2] == f"0/{n}"  # the right column: none of its n questions right
        assert f"0/{sum(len(x.questions) for x in app.tour.lessons)} questions right" in str(
            app.screen.query_one("#tour-line").content)
        await pilot.press("r")  # ask this lesson's questions again
        await pilot.pause()
        assert app.tour.progress.answered("attention", QUESTION) is None
        assert saved(state)["answers"]["attention"][QUESTION]["choice"] == ""


def number_lessons(tmp_path):
    """The shipped lessons, the attention lesson with one number question in place of its own."""
    lessons, _ = load_lessons()
    attention = next(x for x in lessons if x.id == "attention")
    typed = Question("top-scaled", "scaled", "1", "number", Tr("the scaled top weight will be", "除后最大权重会是"),
                     Tr("Scaled, it is {stats.1.max_weight}.", "除后是 {stats.1.max_weight}。"),
                     "stats.1.max_weight", tolerance=0.05)
    return [replace(attention, questions=(typed,)) if x is attention else x for x in lessons]


async def test_a_number_is_typed_and_a_text_that_is_not_one_is_refused_inline(state, tmp_path):
    app = make_app(lang="en", lesson="attention", state_dir=state, lessons=number_lessons(tmp_path), asks=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_scaled(pilot, app)
        await pilot.press("1")
        await pilot.pause()
        assert "Type a number, then Enter" in message(app)
        await pilot.press("1", ".", ".", "enter")
        await pilot.pause()
        assert "'1..' is not a number" in message(app) and "d=8" in settings(app)
        await pilot.press("backspace", "backspace", "backspace", "0", ".", "4", "6", "enter")
        await pilot.pause()
        assert "d=64" in settings(app)
        assert message(app).startswith("Right: q.k / sqrt(d), max weight 0.465 (you typed 0.46)")
        assert saved(state)["answers"]["attention"]["top-scaled"]["right"] is True


async def test_the_language_changes_while_a_question_waits(state):
    app = make_app(lang="en", lesson="attention", state_dir=state, asks=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_scaled(pilot, app)
        await pilot.press("1", "l")
        await pilot.pause()
        assert message(app).startswith("先预测 [1] d 8 -> 64：") and "a) 变大" in message(app)


async def test_questions_off_lets_every_key_act_at_once(state, monkeypatch):
    monkeypatch.setenv("XF_TOUR_QUESTIONS", "off")
    app = make_app(lang="en", lesson="attention", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_scaled(pilot, app)
        await pilot.press("1")
        await pilot.pause()
        assert "d=64" in settings(app) and app.lesson_screen().asking is None


async def test_a_question_keeps_the_body_where_it_was(tmp_path):
    """The footer while a question waits has as many lines as the step's own: the body neither grows nor moves,
    so posing a question repaints the message lines, not the page (over SSH, a few hundred bytes, not 9 KB)."""
    app = make_app(lang="en", lesson="params", state_dir=tmp_path, asks=True)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(3):
            await pilot.press("n")
        await pilot.pause()
        body = app.lesson_screen().query_one("#body")
        before = (body.region, app.lesson_screen().query_one("#keys").region.height)
        await pilot.press("1")
        await pilot.pause()
        assert app.lesson_screen().asking is not None  # the question is up
        assert (body.region, app.lesson_screen().query_one("#keys").region.height) == before
