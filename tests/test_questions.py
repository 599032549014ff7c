"""Questions as data and as the engine grades them: what the loader refuses, what the checker refuses at a
setting (a tie, a change at the band's edge), every shipped question with one right option at every setting a
learner can reach, and answers in the progress file (merged, asked again, a broken record refused)."""

import itertools
import json
import shutil

import pytest

from engine.views import get_view
from lessons.check import check_deep, variants
from lessons.loader import SHIPPED, load_lessons, parse_lesson
from tui.progress import Progress, Store
from tui.quiz import NotPosable, next_value, pose, typed_number
from tui.quiz_check import question_errors, question_problems

LESSONS, _ = load_lessons()


def attention_with(tmp_path, block: str):
    """The shipped attention lesson with its questions replaced by `block`."""
    text = (SHIPPED / "03-attention.toml").read_text(encoding="utf-8")
    head, rest = text.split("[[questions]]", 1)
    tail = rest[rest.index("[[pitfalls]]"):]
    path = tmp_path / "03-attention.toml"
    path.write_text(head + block + "\n" + tail, encoding="utf-8")
    return path


QUESTION = '''[[questions]]
id = "q"
step = "scaled"
key = "1"
ask.en = "the figure will"
ask.zh = "这个数会"
why.en = "Because."
why.zh = "因为。"
'''


@pytest.mark.parametrize("fields, problem", [
    ('kind = "guess"\nfact = "stats.0.max_weight"', "unknown kind 'guess'"),
    ('kind = "direction"', "a direction question needs fact"),
    ('kind = "direction"\nfact = "stats.0.max_weight"\nband = -1', "band must be a number from 0"),
    ('kind = "larger"\nfact = "stats.0.max_weight"\nthan = "stats.1.max_weight"', "a larger question needs labels"),
    ('kind = "choice"\nfact = "stats.0.max_weight"\nwrong = []', "wrong must list 1 to 3 figures"),
    ('kind = "number"\nfact = "stats.0.max_weight"\ntolerance = 0', "tolerance must be a number above 0"),
    ('kind = "number"\nfact = "stats.0.max_weight"\ntolerance = 0.1\nband = 1', "a number question takes no band"),
    ('kind = "direction"\nfact = "stats 0"\nband = 0.1', "not a fact or table.row.column"),
])
def test_the_loader_refuses_a_malformed_question(tmp_path, fields, problem):
    lesson, errors = parse_lesson(attention_with(tmp_path, QUESTION + fields))
    assert lesson is None and any(problem in str(e) for e in errors), errors


def test_the_loader_refuses_a_question_on_a_missing_step_or_key(tmp_path):
    block = QUESTION.replace('step = "scaled"', 'step = "nowhere"').replace('key = "1"', 'key = "9"')
    lesson, errors = parse_lesson(attention_with(tmp_path, block + 'kind = "direction"\nfact = "x"\nband = 0.1'))
    text = "\n".join(map(str, errors))
    assert lesson is None and "no step 'nowhere'" in text and "got '9'" in text


def test_the_checker_names_the_setting_where_a_question_has_no_single_answer(tmp_path):
    # the scaled and unscaled rows tie nowhere, but a band of 0.5 around the unscaled top weight's change meets
    # its edge at some d: the checker says where, naming the press
    block = QUESTION + 'kind = "larger"\nfact = "stats.0.max_weight"\nthan = "stats.0.max_weight"\n' \
        'labels = [{ en = "a", zh = "甲" }, { en = "b", zh = "乙" }]'
    lesson, errors = parse_lesson(attention_with(tmp_path, block))
    assert errors == []
    problems = check_deep(lesson, more=question_errors)
    assert any("no single right answer" in str(p) and "are equal here" in str(p) and "pressing 1 to 64" in str(p)
               for p in problems), problems


def test_the_checker_refuses_a_placeholder_the_view_lacks(tmp_path):
    block = (QUESTION.replace("Because.", "Because {nothing}.").replace("因为。", "因为 {nothing}。")
             + 'kind = "direction"\nfact = "stats.0.max_weight"\nband = 0.01')
    lesson, errors = parse_lesson(attention_with(tmp_path, block))
    assert errors == []
    assert any("why.en" in str(p) and "nothing" in str(p) for p in check_deep(lesson, more=question_errors))


def result(**settings):
    return get_view("attention").run(settings)


def test_each_kind_is_graded_by_the_engine():
    lesson = next(x for x in LESSONS if x.id == "attention")
    by_id = {q.id: q for q in lesson.questions}
    before, after = result(d=8), result(d=64)
    sharp = pose(by_id["unscaled-sharpens"], "attention", "d", 8, 64, before, after)
    assert [o.en for o in sharp.options] == ["rise", "fall", "stay within 0.01"]
    # 0.941 -> 0.928: falls by 0.013, beyond the band of 0.01
    assert sharp.answer == "b" and sharp.grade("b") and not sharp.grade("c")
    back = pose(by_id["unscaled-sharpens"], "attention", "d", 4096, 8, result(d=4096), before)
    assert back.answer == "b"
    up = pose(by_id["unscaled-sharpens"], "attention", "d", 64, 512, after, result(d=512))
    assert up.answer == "a"  # the same question, another setting, another answer
    mask = pose(by_id["mask-zero"], "attention", "causal", True, False,
                get_view("cat").run({"causal": True}), get_view("cat").run({"causal": False}))
    assert mask.options[["a", "b"].index(mask.answer)].en != "0.000"  # unmasked, "on" has a weight
    masked = pose(by_id["mask-zero"], "attention", "causal", False, True,
                  get_view("cat").run({"causal": False}), get_view("cat").run({"causal": True}))
    assert masked.options[["a", "b"].index(masked.answer)].en == "0.000"


def test_a_typed_number_is_judged_within_its_tolerance():
    assert typed_number(" 1,024 ") == 1024 and typed_number("2e9") == 2e9
    assert typed_number("1..2") is None and typed_number("inf") is None and typed_number("9" * 30) is None


@pytest.mark.slow
def test_every_shipped_lesson_asks_three_questions_each_with_one_right_option_at_every_setting():
    for lesson in LESSONS:
        assert len(lesson.questions) >= 3, lesson.id
        for question in lesson.questions:
            step = next(s for s in lesson.steps if s.id == question.step)
            assert question_problems(lesson, step, question) == [], (lesson.id, question.id)


def answers_over_settings(lesson, question) -> set:
    """The right answers a question has over every setting its step can reach."""
    step = next(s for s in lesson.steps if s.id == question.step)
    x = next(e for e in lesson.experiments if e.key == question.key)
    view, out = get_view(step.view), set()
    for overrides in variants(lesson, step):
        before = view.run({**step.params, **overrides})
        to = next_value(x, before.params.get(x.param))
        after = view.run({**step.params, **overrides, x.param: to})
        posed = pose(question, lesson.id, x.param, before.params.get(x.param), to, before, after)
        out.add(posed.answer or round(posed.truth, 12))
    return out


@pytest.mark.slow
@pytest.mark.real_model
def test_at_least_five_shipped_questions_change_their_answer_with_a_setting():
    changing = [(lesson.id, q.id) for lesson in LESSONS for q in lesson.questions
                if len(answers_over_settings(lesson, q)) > 1]
    assert len(changing) >= 5, changing


def test_a_question_whose_figure_is_not_a_number_is_not_posable():
    lesson = next(x for x in LESSONS if x.id == "attention")
    question = lesson.questions[0].__class__("x", "qkv", "1", "direction", lesson.title, lesson.title, "last_top",
                                             band=0.1)
    with pytest.raises(NotPosable, match="not a number"):
        pose(question, "attention", "d", 8, 64, result(d=8), result(d=64))


# --- answers in the progress file --------------------------------------------------------------

def test_answers_are_saved_merged_by_time_and_asked_again(tmp_path):
    store = Store(tmp_path)
    mine, theirs = Progress(), Progress()
    mine.answer("attention", "a", {"choice": "b", "right": True, "t": 10})
    theirs.answer("attention", "a", {"choice": "c", "right": False, "t": 5})   # older: mine stays
    theirs.answer("attention", "b", {"choice": None, "right": False, "t": 7})  # new to mine: taken
    assert store.save(theirs) and store.save(mine)
    back = store.load()
    assert back.answered("attention", "a")["choice"] == "b" and back.answered("attention", "b")["choice"] is None
    assert back.ask_again("attention", now=3)
    assert back.answered("attention", "a") is None and back.answers["attention"]["a"]["t"] == 11
    assert store.save(back) and store.load().answered("attention", "a") is None  # the newer "ask again" wins
    assert not back.ask_again("attention", now=20)


@pytest.mark.parametrize("answers", [
    {"attention": {"a": {"choice": 3, "right": True, "t": 1}}},
    {"attention": {"a": {"choice": "b", "right": "yes", "t": 1}}},
    {"attention": {"a": {"choice": "b", "right": True}}},
    {"attention": {"a": {"choice": "b" * 41, "right": True, "t": 1}}},
    {"attention": ["a"]},
])
def test_a_malformed_answer_makes_the_file_broken_and_it_is_kept_aside(tmp_path, answers):
    (tmp_path / "progress.json").write_text(json.dumps({"version": 1, "answers": answers}), encoding="utf-8")
    store = Store(tmp_path)
    assert store.load() == Progress() and store.problem == "corrupt" and store.broken.exists()


def test_answers_are_kept_only_for_the_questions_a_lesson_has():
    progress = Progress()
    progress.answer("attention", "unscaled-sharpens", {"choice": "a", "right": True, "t": 1})
    progress.answer("attention", "gone", {"choice": "a", "right": True, "t": 1})
    for i in range(2000):
        progress.answer("elsewhere", f"q{i}", {"choice": "a", "right": True, "t": 1})
    progress.keep_to({"attention": {"qkv"}}, {"attention": {"unscaled-sharpens"}})
    assert list(progress.answers["attention"]) == ["unscaled-sharpens"]
    assert len(progress.answers["elsewhere"]) == 1024


def test_every_question_id_is_unique_across_a_lesson_and_names_stay_short():
    for lesson in LESSONS:
        ids = [q.id for q in lesson.questions]
        assert len(ids) == len(set(ids)) and all(len(i) <= 40 for i in ids)
    assert list(itertools.chain(*[[q.step for q in x.questions] for x in LESSONS]))


def test_a_copy_of_the_shipped_lessons_keeps_its_questions_through_the_parsed_cache(tmp_path):
    from lessons.cache import Parsed

    folder = tmp_path / "mine"
    shutil.copytree(SHIPPED, folder, ignore=shutil.ignore_patterns("*.py", "*.md", "__pycache__"))
    cache = Parsed(tmp_path / "parsed.json")
    first, _ = load_lessons(folder, parse=cache.parse)
    cache.save()
    again = Parsed(tmp_path / "parsed.json")
    second, _ = load_lessons(folder, parse=again.parse)
    assert again.parsed == 0 and [x.questions for x in second] == [x.questions for x in first]
