"""`xf-tour quiz`, the questions in `xf-tour print --lesson` (with --answers, their answers), and what
`xf-tour classroom report` says of the answers. Run in-process through tui.cli.main, output read back."""

import json

import pytest
from rich.cells import cell_len

from lessons.check import needs_model
from lessons.loader import load_lessons
from tui.cli import main
from tui.progress import Progress, Store, learner_dir

# A lesson of our own, so that nothing here depends on how many questions the shipped lessons ask: one question
# of each kind, on two views that compute in milliseconds.
DRILL = '''
format_version = 1
id = "drill"
order = 1
title.en = "Quiz drill"
title.zh = "测验练习"

[[steps]]
id = "mask"
title.en = "The mask"
title.zh = "掩码"
view = "cat"
params = { causal = true }
text.en = "The weight sat gives on is {sat.3.weight}."
text.zh = "sat 分给 on 的权重是 {sat.3.weight}。"

[[steps]]
id = "width"
title.en = "The width"
title.zh = "宽度"
view = "ffn-width"
params = { d_model = 4096 }
text.en = "d_ff is {d_ff}."
text.zh = "d_ff 是 {d_ff}。"

[[experiments]]
key = "1"
title.en = "Mask on and off"
title.zh = "掩码开关"
param = "causal"
values = [false, true]
text.en = "The weight is {sat.3.weight}."
text.zh = "权重是 {sat.3.weight}。"

[[experiments]]
key = "2"
title.en = "d_model 4096 or 8192"
title.zh = "d_model 取 4096 或 8192"
param = "d_model"
values = [4096, 8192]
text.en = "d_ff is {d_ff}."
text.zh = "d_ff 是 {d_ff}。"

[[questions]]
id = "mask-zero"
step = "mask"
key = "1"
kind = "choice"
fact = "sat.3.weight"
wrong = ["sat.3.score"]
ask.en = "the weight sat gives on will be"
ask.zh = "sat 分给 on 的权重会是"
why.en = "Masked or not, the softmax decides it."
why.zh = "有没有掩码，都由 softmax 决定。"

[[questions]]
id = "width-moves"
step = "width"
key = "2"
kind = "direction"
fact = "d_ff"
band = 1
ask.en = "d_ff, now {d_ff}, will"
ask.zh = "d_ff 现在是 {d_ff}，它会"
why.en = "d_ff follows d_model."
why.zh = "d_ff 跟着 d_model 变。"

[[questions]]
id = "yours-or-llama3"
step = "width"
key = "2"
kind = "larger"
fact = "width.0.d_ff"
than = "width.2.d_ff"
labels = [{ en = "yours", zh = "你的" }, { en = "Llama 3 8B", zh = "Llama 3 8B" }]
ask.en = "whose d_ff will be larger?"
ask.zh = "谁的 d_ff 会更大？"
why.en = "Yours is {width.0.d_ff}."
why.zh = "你的是 {width.0.d_ff}。"

[[questions]]
id = "width-number"
step = "width"
key = "2"
kind = "number"
fact = "d_ff"
tolerance = 0.1
ask.en = "what will d_ff be?"
ask.zh = "d_ff 会是多少？"
why.en = "It is {d_ff}."
why.zh = "是 {d_ff}。"
'''
DRILL_IDS = ["mask-zero", "width-moves", "yours-or-llama3", "width-number"]
# multiplier 0.656 makes your d_ff at d_model 8192 exactly Llama 3 8B's, 14,336: the larger question has no answer
TIE = "multiplier=0.656"


@pytest.fixture(scope="module")
def drill(tmp_path_factory):
    folder = tmp_path_factory.mktemp("drill")
    (folder / "01-drill.toml").write_text(DRILL, encoding="utf-8")
    return str(folder)


@pytest.fixture(autouse=True)
def _state(tmp_path, monkeypatch):
    """Each test its own state folder (the lessons' caches, the learners), and 80 columns."""
    monkeypatch.setenv("XF_TOUR_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("COLUMNS", "80")


def cli(capsys, *argv):
    """(status, stdout, stderr) of `xf-tour ARGV`, run in this process."""
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def quiz(capsys, *argv):
    code, out, err = cli(capsys, "quiz", "--json", *argv)
    assert code == 0, err
    return json.loads(out)


def squeezed(text):
    return " ".join(text.split())


# --- quiz --json ----------------------------------------------------------------------------------------------

def test_quiz_json_at_the_steps_own_settings(capsys, drill):
    got = quiz(capsys, "--lessons", drill)
    assert [q["id"] for q in got] == DRILL_IDS
    by = {q["id"]: q for q in got}
    assert {q["lesson"] for q in got} == {"drill"} and all(q["problem"] is None for q in got)
    assert [by[i]["step"] for i in DRILL_IDS] == ["mask", "width", "width", "width"]
    assert [by[i]["kind"] for i in DRILL_IDS] == ["choice", "direction", "larger", "number"]
    mask = by["mask-zero"]  # unmasked, "on" gets a small weight; 0.4 is its score, the classic mistake
    assert [o["key"] for o in mask["options"]] == ["a", "b"] and mask["options"][1]["en"] == "0.4"
    assert mask["answer"] == "a" and mask["evidence"]["before"] == {"causal": True}
    assert mask["evidence"]["after"] == {"causal": False} and mask["evidence"]["cells"]["sat.3.weight"][0] == 0
    width = by["width-moves"]  # 4096 -> 8192: d_ff 11,008 -> 22,016
    assert width["answer"] == "a" and width["evidence"]["facts"] == {"d_ff": [11008, 22016]}
    assert width["evidence"]["before"]["d_model"] == 4096 and width["evidence"]["after"]["d_model"] == 8192
    assert [o["key"] for o in width["options"]] == ["a", "b", "c"]
    assert by["yours-or-llama3"]["answer"] == "a"  # 22,016 against 14,336
    assert [o["en"] for o in by["yours-or-llama3"]["options"]] == ["yours", "Llama 3 8B"]
    assert by["width-number"]["answer"] == 22016 and by["width-number"]["options"] == []


def test_a_set_applies_where_the_view_takes_it_and_the_press_goes_on_from_it(capsys, drill):
    by = {q["id"]: q for q in quiz(capsys, "--lessons", drill, "--set", "d_model=8192")}
    assert by["mask-zero"]["evidence"]["before"] == {"causal": True}  # the cat view takes no d_model
    for qid in ("width-moves", "yours-or-llama3", "width-number"):  # 8192, the last value, wraps to 4096
        assert by[qid]["evidence"]["before"]["d_model"] == 8192 and by[qid]["evidence"]["after"]["d_model"] == 4096
    assert by["width-moves"]["answer"] == "b" and by["yours-or-llama3"]["answer"] == "b"
    assert by["width-number"]["answer"] == 11008
    by = {q["id"]: q for q in quiz(capsys, "--lessons", drill, "--set", "causal=off", "--lesson", "drill")}
    assert by["mask-zero"]["evidence"]["before"] == {"causal": False}
    assert by["mask-zero"]["evidence"]["after"] == {"causal": True}
    assert by["mask-zero"]["evidence"]["cells"]["sat.3.weight"][1] == 0  # masked: exactly 0, the smaller option
    assert by["mask-zero"]["answer"] == "a"


def test_a_question_without_a_single_answer_is_listed_with_its_problem(capsys, drill):
    by = {q["id"]: q for q in quiz(capsys, "--lessons", drill, "--set", TIE)}
    tie = by["yours-or-llama3"]
    assert tie["answer"] is None and tie["options"] == [] and "equal" in tie["problem"]
    assert tie["evidence"]["cells"]["width.0.d_ff"][1] == tie["evidence"]["cells"]["width.2.d_ff"][1] == 14336
    assert by["width-moves"]["answer"] == "a" and by["width-number"]["answer"] == 14336
    code, out, err = cli(capsys, "quiz", "--lessons", drill, "--set", TIE, "--lang", "en")
    assert code == 0 and "Question yours-or-llama3: no single answer at these settings" in squeezed(out)


@pytest.mark.parametrize("argv, words", [
    (["quiz", "--lesson", "nope"], "unknown lesson 'nope'"),
    (["quiz", "--set", "d_model=0"], "d_model must be a whole number from 1"),
    (["quiz", "--set", "d_model=huge", "--json"], "d_model must be"),
    (["quiz", "--set", "nope=1"], "no question is asked on a view that takes the parameter 'nope'"),
    (["quiz", "--set", "d_model"], "--set takes NAME=VALUE"),
    (["quiz", "--set", "d_model=1", "--set", "d_model=2"], "d_model is set twice"),
    (["print", "cat", "--answers"], "--answers goes with --lesson"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, drill, argv, words):
    code, out, err = cli(capsys, *argv, "--lessons", drill, "--lang", "en")
    assert code == 2 and out == "" and err.count("\n") == 1 and words in err, err


def test_quiz_reads_in_either_language_within_80_cells(capsys, drill):
    answers = {q["id"]: q for q in quiz(capsys, "--lessons", drill)}
    for lang, word in (("en", "Answer: "), ("zh", "答案：")):
        code, out, err = cli(capsys, "quiz", "--lessons", drill, "--lang", lang)
        assert code == 0, err
        assert max(cell_len(line) for line in out.splitlines()) <= 80
        text = squeezed(out) if lang == "en" else "".join(out.split())
        for qid, q in answers.items():
            assert f"drill / {q['step']} / {qid}" in out
            if q["options"]:
                right = next(o[lang] for o in q["options"] if o["key"] == q["answer"])
                said = f"{word}{q['answer']}) {right}"
                assert (said if lang == "en" else "".join(said.split())) in text
        assert out.count(word) == len(DRILL_IDS)
    falls = next(o["en"] for o in answers["width-moves"]["options"] if o["key"] == "b")
    code, out, err = cli(capsys, "quiz", "--lessons", drill, "--lang", "en", "--set", "d_model=8192")
    assert f"Answer: b) {falls}" in out and "d_model=8192 multiplier=0 multiple_of=256" in out


# --- anyone can recompute an answer with `xf-tour print VIEW --set ... --json` --------------------------------

def printed(capsys, view, settings):
    """views[0] of `xf-tour print VIEW --set NAME=VALUE ... --json`, each setting written as the screen writes it."""
    from engine.views import fmt_value

    sets = [arg for name, value in settings.items() for arg in ("--set", f"{name}={fmt_value(value)}")]
    code, out, err = cli(capsys, "print", view, *sets, "--json", "--lang", "en")
    assert code == 0, err
    return json.loads(out)["views"][0]


def cell(view, ref):
    name, row, column = ref.split(".")
    table = next(t for t in view["tables"] if t["key"] == name)
    return table["rows"][int(row)][[c["key"] for c in table["columns"]].index(column)]


def recomputed(question, facts: dict, before: dict, after: dict):
    """The answer, worked out again from the figures print gave: a letter, or for a number the figure."""
    q = question
    if q.kind == "direction":
        change = after[q.fact] - before[q.fact]
        return "c" if abs(change) <= q.band else "a" if change > 0 else "b"
    if q.kind == "larger":
        return "a" if after[q.fact] > after[q.than] else "b"
    if q.kind == "choice":  # the options are sorted by value: the right one sits where its value ranks
        ranked = sorted((q.fact, *q.wrong), key=lambda ref: after[ref])
        return "abcd"[ranked.index(q.fact)]
    return after[q.fact]


def check_recomputes(capsys, got, lessons):
    questions = {(x.id, q.id): q for x in lessons for q in x.questions}
    for entry in got:
        evidence, q = entry["evidence"], questions[entry["lesson"], entry["id"]]
        figures = {}
        for when, index in (("before", 0), ("after", 1)):
            view = printed(capsys, evidence["view"], evidence[when])
            assert view["params"] == evidence[when], entry["id"]
            for ref, pair in evidence["facts"].items():
                assert view["facts"][ref] == pair[index], (entry["id"], when, ref)
            for ref, pair in evidence["cells"].items():
                assert cell(view, ref) == pair[index], (entry["id"], when, ref)
            figures[when] = {**{ref: view["facts"][ref] for ref in evidence["facts"]},
                             **{ref: cell(view, ref) for ref in evidence["cells"]}}
        assert set(figures["after"]) == set(q.refs())
        answer = recomputed(q, figures, figures["before"], figures["after"])
        assert entry["answer"] == answer, entry["id"]


def test_every_shipped_answer_recomputes_from_print(capsys):
    lessons = [x for x in load_lessons()[0] if not needs_model(x)]  # no model here: tests/test_real_views.py
    got = quiz(capsys)
    assert [(q["lesson"], q["id"]) for q in got] == [(x.id, q.id) for x in lessons for q in x.questions]
    assert got, "the shipped lessons ask no question"
    assert all(q["problem"] is None for q in got), [q["problem"] for q in got if q["problem"]]  # check-lessons' rule
    check_recomputes(capsys, got, lessons)


def test_every_shipped_answer_is_the_one_the_tour_gives_when_first_met(capsys):
    """No --set: the settings of Tour.pose_first, the recap's and print --lesson's."""
    from tui.tour_state import Tour

    lessons = [x for x in load_lessons()[0] if not needs_model(x)]  # no model here: tests/test_real_views.py
    by = {(q["lesson"], q["id"]): q for q in quiz(capsys)}
    for lesson in lessons:
        for q in lesson.questions:
            posed = Tour([lesson]).pose_first(q)
            assert by[lesson.id, q.id]["answer"] == (posed.truth if q.kind == "number" else posed.answer)
            assert by[lesson.id, q.id]["evidence"]["before"] == posed.evidence()["before"]
            assert by[lesson.id, q.id]["evidence"]["after"] == posed.evidence()["after"]


def test_answers_at_other_settings_recompute_too(capsys, drill):
    lessons, _ = load_lessons(drill)
    for sets in (["--set", "d_model=8192"], ["--set", "causal=off", "--set", "multiple_of=1024"],
                 ["--set", "multiplier=1.3"]):
        check_recomputes(capsys, quiz(capsys, "--lessons", drill, *sets), lessons)


# --- print --lesson -----------------------------------------------------------------------------------------

def test_print_lesson_asks_each_question_at_its_step_and_answers_only_when_asked(capsys, drill):
    code, out, err = cli(capsys, "print", "--lesson", "drill", "--lessons", drill, "--lang", "en")
    assert code == 0, err
    text = squeezed(out)
    step1, step2, end = text.index("Step 1/3"), text.index("Step 2/3"), text.index("Step 3/3: Recap")
    asks = [text.index("Predict [1] causal on -> off: the weight sat gives on will be"),
            text.index("Predict [2] d_model 4096 -> 8192: d_ff, now 11,008, will"),
            text.index("Predict [2] d_model 4096 -> 8192: whose d_ff will be larger?"),
            text.index("Predict [2] d_model 4096 -> 8192: what will d_ff be?")]
    assert step1 < asks[0] < step2 < asks[1] < asks[2] < asks[3] < end
    assert "a) yours b) Llama 3 8B" in text and "Answer" not in text and "follows" not in text
    code, out, err = cli(capsys, "print", "--lesson", "drill", "--lessons", drill, "--lang", "en", "--answers")
    text = squeezed(out)
    assert code == 0 and text.count("Answer: ") == len(DRILL_IDS)
    assert "Answer: a) " in text and "your d_ff 11,008 -> 22,016 d_ff follows d_model." in text
    assert "Answer: your d_ff 22,016 It is 22,016." in text
    code, out, err = cli(capsys, "print", "--lesson", "drill", "--lessons", drill, "--lang", "zh", "--answers")
    assert code == 0 and out.count("答案：") == len(DRILL_IDS) and "先预测 [2] d_model 4096 -> 8192：" in out


def test_print_lesson_with_answers_fits_80_cells_for_every_shipped_question(capsys):
    lessons, _ = load_lessons()
    asking = [x for x in lessons if x.questions and not needs_model(x)]  # the real model's: test_real_views.py
    assert asking
    for lesson in asking:
        for lang, word in (("en", "Answer: "), ("zh", "答案：")):
            code, out, err = cli(capsys, "print", "--lesson", lesson.id, "--lang", lang, "--answers")
            assert code == 0, err
            assert out.count(word) == len(lesson.questions), lesson.id
            wide = [line for line in out.splitlines() if cell_len(line) > 80]
            assert not wide, wide[:2]


# --- classroom report -----------------------------------------------------------------------------------------

def record(choice, right, t=1767323045):
    return {"choice": choice, "right": right, "t": t}


def two_learners(state):
    """ann: one right, one wrong, one skipped; bob: two wrong, one to be asked again; carl: nothing saved.
    Answers to a question or a lesson the report does not run are not counted."""
    ann = {"drill": {"mask-zero": record("a", True), "width-moves": record("b", False),
                     "width-number": record(None, False), "ghost": record("a", True)},
           "attention": {"mask-zero": record("b", False)},
           "\x1b]0;pwned\x07": {"x\x1b[2J": record("a", True)}}
    bob = {"drill": {"mask-zero": record("b", False), "width-moves": record("c", False),
                     "yours-or-llama3": record("", False)}}
    assert Store(learner_dir("ann", state)).save(Progress("drill", 1, "en", {"drill": ["mask", "width"]}, ann))
    assert Store(learner_dir("bob", state)).save(Progress("drill", 0, "zh", {"drill": ["mask"]}, bob))
    (state / "learners" / "carl").mkdir()


def test_report_counts_answers_and_sorts_questions_by_miss_rate(capsys, drill, tmp_path):
    two_learners(tmp_path / "state")
    code, out, err = cli(capsys, "classroom", "report", "--lessons", drill, "--json")
    assert code == 0, err
    data = json.loads(out)
    rows = {r["name"]: r for r in data["learners"]}
    assert (rows["ann"]["answered"], rows["ann"]["right"]) == (2, 1)
    assert rows["ann"]["answers"] == {"drill": {"mask-zero": True, "width-moves": False}}
    assert (rows["bob"]["answered"], rows["bob"]["right"]) == (2, 0)
    assert (rows["carl"]["answered"], rows["carl"]["right"], rows["carl"]["problem"]) == (None, None, "missing")
    assert rows["ann"]["seen"] == {"drill": 2} and rows["ann"]["step"] == 2  # the old fields as they were
    assert data["questions"] == [
        {"id": "width-moves", "lesson": "drill", "answered": 2, "missed": 2, "miss_rate": 1.0},
        {"id": "mask-zero", "lesson": "drill", "answered": 2, "missed": 1, "miss_rate": 0.5},
        {"id": "yours-or-llama3", "lesson": "drill", "answered": 0, "missed": 0, "miss_rate": None},
        {"id": "width-number", "lesson": "drill", "answered": 0, "missed": 0, "miss_rate": None}]
    assert "\x1b" not in out and "\\u001b" not in out  # what the progress file held of lessons not run: left out
    code, out, err = cli(capsys, "classroom", "report", "--lessons", drill, "--lang", "en")
    lines = [squeezed(line) for line in out.splitlines()]
    assert code == 0 and "\x1b" not in out
    answered = lines.index("learner answered right")
    assert lines[answered + 2:answered + 5] == ["ann 2 1", "bob 2 0", "carl - -"]
    top = lines.index("question lesson answered missed miss rate")
    assert lines[top + 2:] == ["width-moves drill 2 2 100%", "mask-zero drill 2 1 50%",
                               "yours-or-llama3 drill 0 0 -", "width-number drill 0 0 -"]
    code, out, err = cli(capsys, "classroom", "report", "--lessons", drill, "--lang", "zh")
    assert "学习者 已答 答对" in squeezed(out) and "题目 课程 已答 答错 答错率" in squeezed(out)


def test_report_without_answers_adds_no_tables(capsys, drill, tmp_path):
    state = tmp_path / "state"
    assert Store(learner_dir("ann", state)).save(Progress("drill", 0, "en", {"drill": ["mask"]},
                                                          {"drill": {"mask-zero": record(None, False)}}))
    code, out, err = cli(capsys, "classroom", "report", "--lessons", drill, "--lang", "en")
    assert code == 0 and "miss rate" not in out and "answered" not in out
    assert out.splitlines()[-1].split()[0] == "ann"
    code, out, err = cli(capsys, "classroom", "report", "--lessons", drill, "--json")
    data = json.loads(out)
    assert data["learners"][0]["answered"] == 0 and data["learners"][0]["right"] == 0
    assert [q["answered"] for q in data["questions"]] == [0, 0, 0, 0]


def test_print_lesson_says_why_a_question_has_no_answer_at_its_steps_settings(drill):
    """check-lessons refuses such a lesson; a printout of one says so under the step and goes on."""
    from engine.records import replace
    from tui.cli.quiz import lesson_asks

    lessons, _ = load_lessons(drill)
    lesson = lessons[0]
    steps = tuple(replace(s, params={**s.params, "multiplier": 0.656}) if s.id == "width" else s for s in lesson.steps)
    asks = lesson_asks(replace(lesson, steps=steps), "en", answers=True)
    lines = [text for _, text in asks["width"]]
    assert any(text.startswith("Question yours-or-llama3: no single answer at these settings") for text in lines)
    assert sum(text.startswith("Answer: ") for text in lines) == 2 and len(asks["mask"]) == 4
