"""The shipped lessons, the loader's refusals, and the plain reading of each lesson."""

import re
import shutil
import unicodedata
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.lessons import FIXTURES, plain
from helpers.marks import with_real_marks
from rich.cells import cell_len

from engine.views import VIEWS
from lessons.check import check_deep, needs_model, variants
from lessons.loader import SHIPPED, load_lessons, parse_lesson
from lessons.template import TOKEN, is_control
from tui.format import format_value

IDS = ["residual", "positional", "attention", "heads", "ffn", "params", "kvcache", "context", "rmsnorm", "tokens",
       "sampling", "real", "misconceptions"]
LESSONS, _ = load_lessons()
LESSON_CASES = with_real_marks(LESSONS, needs_model)  # the real model's lesson runs with the model (slow)


def test_the_thirteen_lessons_in_order():
    assert [lesson.id for lesson in LESSONS] == IDS
    assert [lesson.order for lesson in LESSONS] == list(range(1, 14))


@pytest.mark.parametrize("lesson", LESSON_CASES, ids=IDS)
def test_every_step_and_experiment_value_runs_through_the_engine(lesson):
    assert check_deep(lesson) == []
    assert lesson.steps and lesson.experiments


@pytest.mark.parametrize("lesson", LESSON_CASES, ids=IDS)
def test_zh_and_en_say_the_same_numbers(lesson):
    for text in all_texts(lesson):
        assert text.zh.strip() and text.en.strip()
        zh, en = TOKEN.findall(text.zh), TOKEN.findall(text.en)
        assert sorted(zh) == sorted(en), text.en[:60]  # the same placeholders, in either word order
        assert [r for r in zh if is_control(r)] == [r for r in en if is_control(r)], text.en[:60]  # same conditions
        assert text.zh.count("\n\n") == text.en.count("\n\n"), text.en[:60]  # the same paragraphs


def all_texts(lesson):
    """Every text of a lesson a learner reads."""
    texts = [lesson.title] + [t for s in lesson.steps for t in (s.title, s.text, *s.hints.values())]
    return texts + [t for x in lesson.experiments for t in (x.title, x.text)] + list(lesson.pitfalls)


@pytest.mark.parametrize("lesson", LESSON_CASES, ids=IDS)
def test_lesson_text_has_no_ambiguous_width_characters(lesson):
    """A character of ambiguous width (curly quotes, an ellipsis, an arrow) takes two cells in a CJK
    terminal and one elsewhere, which shifts every line the layout measured."""
    for text in all_texts(lesson):
        for lang in ("zh", "en"):
            bad = [ch for ch in text(lang) if unicodedata.east_asian_width(ch) == "A"]
            assert not bad, (lesson.id, text(lang)[:40], bad)


@pytest.mark.parametrize("lesson", LESSON_CASES, ids=IDS)
def test_each_experiment_key_is_used_by_some_step(lesson):
    for x in lesson.experiments:
        assert x.action is not None or any(x.param in {p.name for p in VIEWS[s.view].params} for s in lesson.steps)


def _variants(lesson):
    for step in lesson.steps:
        for overrides in variants(lesson, step):
            yield step, overrides
            if step.compare:
                yield step, {**step.compare, **overrides}


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("lesson", LESSON_CASES, ids=IDS)
def test_no_ambiguous_width_characters_in_table_cells(lesson, lang):
    for step, extra in _variants(lesson):
        result = VIEWS[step.view].run({**step.params, **extra})
        for table in result.tables:
            texts = [table.title(lang)] + [c.label(lang) for c in table.columns]
            texts += [format_value(v, c.fmt, lang) for row in table.rows for v, c in zip(row, table.columns)]
            for text in texts:
                bad = [ch for ch in text if unicodedata.east_asian_width(ch) == "A"]
                assert not bad, (lesson.id, step.id, text, bad)


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("lesson", LESSON_CASES, ids=IDS)
def test_plain_reading_fits_80_cells(lesson, lang):
    text = plain(lesson, lang)
    wide = [line for line in text.splitlines() if cell_len(line.rstrip()) > 80]
    assert not wide, wide[:2]
    assert "{" not in text.replace("{x", "")  # every placeholder was filled
    for step in lesson.steps:
        assert step.title(lang) in text
    for p in lesson.pitfalls:
        assert p(lang)[:10] in text


def test_zh_prose_has_no_curly_quotes():
    """Curly quotes are ambiguous width and would shift CJK lines; the zh prose uses 「」."""
    for path in SHIPPED.glob("*.toml"):
        assert not re.search("[“”‘’]", path.read_text(encoding="utf-8")), path.name


def test_print_lesson_attention_from_the_engine():
    for lang, words in (("en", "Scaled beside unscaled"), ("zh", "除以 sqrt(d) 与不除的对比")):
        out = run_cli("print", "--lesson", "attention", "--lang", lang)
        assert out.returncode == 0, out.stderr
        assert "\x1b" not in out.stdout and words in out.stdout
        assert "0.708" in out.stdout and "0.721" in out.stdout  # the real softmax, masked and not
        assert "0.941" in out.stdout and "0.631" in out.stdout  # scaled beside unscaled at seed 0


def test_lessons_json_lists_the_twelve_ids():
    import json
    out = run_cli("lessons", "--json")
    data = json.loads(out.stdout)
    assert [x["id"] for x in data] == IDS
    assert all(x["title"]["zh"] and x["title"]["en"] for x in data)
    lessons, _ = load_lessons()
    assert [x["steps"] for x in data] == [len(x.steps) + 1 for x in lessons]  # the pages: steps + recap
    plain = run_cli("lessons").stdout
    for lesson in lessons:
        assert re.search(rf"\b{lesson.id}\s+{len(lesson.steps) + 1} steps, the last a recap", plain), lesson.id


@pytest.mark.slow
def test_check_lessons_passes_on_the_shipped_folder_and_says_what_needs_the_model(tmp_path):
    out = run_cli("check-lessons", env={"XF_TOUR_STATE_DIR": str(tmp_path)})  # no model there
    assert out.returncode == 0 and "13 lessons OK" in out.stdout
    assert "not laid out without the real model: real (xf-tour model get" in out.stdout


@pytest.mark.slow
@pytest.mark.real_model
def test_check_lessons_lays_out_the_real_models_lesson_with_the_model():
    out = run_cli("check-lessons")
    assert out.returncode == 0 and out.stdout.strip() == "13 lessons OK", out.stderr


# --- refusals -----------------------------------------------------------------------------

@pytest.mark.parametrize("case, file, where, words", [
    ("invalid_toml", "01-broken.toml", ":4", "invalid TOML"),
    ("unknown_key", "01-extra.toml", "step 'one', field 'colour'", "unknown key 'colour'"),
    ("missing_language", "01-mono.toml", "step 'one', field 'text.zh'", "the zh text is missing"),
    ("unknown_view", "01-noview.toml", "step 'one', field 'view'", "unknown view 'hologram'"),
    ("unknown_param", "01-noparam.toml", "step 'one', field 'params.colour'", "has no parameter 'colour'"),
    ("duplicate_step", "01-twice.toml", "step 'same', field 'id'", "duplicate step id 'same'"),
    ("duplicate_lesson", "02-dup.toml", "lesson 'dup', field 'id'", "duplicate lesson id 'dup'"),
    ("key_twice", "01-keys.toml", "field 'experiments[1].key'", "key '1' is bound twice"),
    ("refused_value", "01-refused.toml", "step 'one', field 'experiments[1].values'", "heads=3 does not divide"),
    ("bad_placeholder", "01-holder.toml", "step 'one', field 'text.en'", "placeholder {sat.9.weight}"),
    ("file_name", "01-wrongname.toml", "lesson 'rightname', field 'id'", "does not match the id"),
    ("unknown_action", "01-act.toml", "field 'experiments[0].action'", "unknown action 'os.system'"),
    ("bad_condition", "01-cond.toml", "step 'one', field 'text.en'", "no fact or setting 'sunny'"),
    ("unbalanced_if", "01-open.toml", "step 'one', field 'text.en'", "an {if} without its {end}"),
    ("stray_hint", "01-stray.toml", "step 'one', field 'hints.1'", "experiment '1' does not change this step"),
    ("bad_rows", "01-rows.toml", "step 'one', field 'rows.sat'", "table 'sat' has 4 rows"),
])
def test_each_problem_names_file_lesson_step_field_and_fix(case, file, where, words):
    lessons, errors = load_lessons(FIXTURES / case, strict=False)
    for lesson in lessons:
        errors += check_deep(lesson)
    assert errors, case
    message = "\n".join(map(str, errors))
    assert file in message and where in message and words in message, message
    assert all("Fix: " in str(e) for e in errors)
    out = run_cli("check-lessons", str(FIXTURES / case))
    assert out.returncode == 2 and file in out.stderr and "Traceback" not in out.stderr


@pytest.fixture
def shipped_copy(tmp_path):
    folder = tmp_path / "mine"
    shutil.copytree(SHIPPED, folder, ignore=shutil.ignore_patterns("*.py", "*.md", "__pycache__"))
    return folder


@pytest.mark.parametrize("change, words", [
    (lambda t: t.replace('title.en = "Scaled', 'title.en = "Scaled\n', 1), "invalid TOML"),
    (lambda t: t.replace('view = "dsweep"', 'view = "dsweeps"'), "unknown view 'dsweeps'"),
    (lambda t: re.sub(r'\ntitle\.zh = "[^"\n]*"', "", t, count=1), "the zh text is missing"),
])
@pytest.mark.slow
def test_broken_copies_of_a_shipped_lesson_are_refused(shipped_copy, change, words):
    path = shipped_copy / "03-attention.toml"
    path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")
    out = run_cli("check-lessons", str(shipped_copy))
    assert out.returncode == 2 and "03-attention.toml" in out.stderr and words in out.stderr, out.stderr
    out = run_cli("print", "--lesson", "attention", "--lessons", str(shipped_copy))
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "03-attention.toml" in out.stderr


@pytest.mark.slow
def test_a_learners_own_folder_runs(shipped_copy):
    path = shipped_copy / "04-heads.toml"
    path.write_text(path.read_text(encoding="utf-8").replace("Multi-head attention", "My heads"), encoding="utf-8")
    out = run_cli("print", "--lesson", "heads", "--lessons", str(shipped_copy))
    assert out.returncode == 0 and "My heads" in out.stdout


def test_the_loader_never_executes_lesson_text():
    source = (Path(__file__).parent.parent / "lessons" / "loader.py").read_text(encoding="utf-8")
    for danger in (r"\beval\(", r"\bexec\(", "__import__", "importlib", r"(?<!re\.)\bcompile\("):
        assert not re.search(danger, source), danger
    lesson, errors = parse_lesson(FIXTURES / "unknown_key" / "01-extra.toml")
    assert lesson is None and errors


def test_every_steps_result_is_kept_and_recalled_as_it_was_computed():
    """What a start opens on is kept as JSON (lessons.cache.Results): each step's results, read back, are the
    results the engine gives, in every value and type."""
    import json

    from lessons.cache import result_data, result_from
    from tui.progress import Progress
    from tui.tour_state import Tour

    tour = Tour(LESSONS, Progress(), "en")
    runs = 0
    for lesson in LESSONS:
        for index in range(len(lesson.steps)):
            tour.goto(lesson.id, index)
            for view, settings in tour.own_runs():
                result = VIEWS[view].run(settings)
                back = result_from(json.loads(json.dumps(result_data(result))))
                assert back == result and repr(back) == repr(result), (lesson.id, index)  # 1 is not 1.0
                runs += 1
    assert runs > 40
