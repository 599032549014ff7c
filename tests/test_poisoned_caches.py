"""The caches in the state folder as whoever can write that folder leaves them (on a classroom host, the account
every learner shares). Their stamp is computed from the code, so anyone can write a cache that matches it: what
is read back from one is checked as the loader checks a file, and an entry that fails is ignored (the file is
parsed again). What the commands print of a lesson never holds a raw control or bidi character either."""

import json
import re

import pytest
from helpers.cli import run_cli

from lessons.cache import PARSED_NAME, RESULTS_NAME, Parsed, Results, code_stamp
from lessons.loader import SHIPPED, load_lessons

POISON = "Zq9\x1b]0;T\x07\x1b[2J\x9b\u202e"  # a marker, then: set the title, clear the screen, CSI, turn the line
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
FILE = "09-rmsnorm.toml"


def parsed_cache(state):
    """The parsed-lessons cache of the shipped lessons as a start writes it, with this code's stamp."""
    parsed = Parsed(state / PARSED_NAME)
    load_lessons(SHIPPED, parse=parsed.parse)
    assert parsed.save()
    return state / PARSED_NAME


def poison(path, change) -> None:
    """Change the rmsnorm lesson's entry in the cache at `path`, keeping the stamp: change(entry)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["stamp"] == code_stamp()
    [entry] = [v for k, v in data["entries"].items() if k.startswith(FILE + ":")]
    change(entry)
    path.write_text(json.dumps(data), encoding="utf-8")


def step(n, **fields):
    """A change of the n-th step's fields."""
    return lambda entry: entry["steps"][n].update(fields)


CHANGES = {
    "lesson_id": lambda entry: entry.update(id="rmsnorm" + POISON),
    "lesson_title": lambda entry: entry.update(title=["RMS " + POISON, "RMS " + POISON]),
    "step_title": step(0, title=["Step " + POISON, "步骤 " + POISON]),
    "step_text": step(0, text=["Text " + POISON, "正文 " + POISON]),
    "pitfall": lambda entry: entry["pitfalls"].append(["Pit " + POISON, "坑 " + POISON]),
    "experiment": lambda entry: entry["experiments"][0].update(title=["Exp " + POISON, "实验 " + POISON]),
    "param_value": step(0, params={"dim": "Zq9" + POISON}),
    "unknown_view": step(0, view="Zq9-view"),
    "no_steps": lambda entry: entry.update(steps=[]),
    # shown by none of the commands, refused all the same (see test_every_poisoned_entry_is_parsed_anew)
    "step_id": step(1, id="placement" + POISON),
    "rows": step(0, rows={"vector": "Zq9"}),
    "param_list": step(0, params={"dim": [1, 2]}),
    "key_order": lambda entry: entry["experiments"][0].update(key="9"),
    "order": lambda entry: entry.update(order=0),
    "empty_text": step(0, text=["", ""]),
    "hint_key": step(0, hints={"7": ["Zq9", "Zq9"]}),
    "placeholders": step(0, text=["{rms} Zq9", "Zq9"]),
    "shape": lambda entry: entry.update(steps="Zq9"),
}
SHOWN = {"lesson_id": "lessons json print report", "lesson_title": "lessons json print"}  # by which commands
COMMANDS = {"lessons": ["lessons"], "json": ["lessons", "--json"], "print": ["print", "--lesson", "rmsnorm"],
            "report": ["classroom", "report", "--json"]}  # which the teacher runs as root
CASES = [(change, command) for change in list(CHANGES)[:list(CHANGES).index("no_steps") + 1]
         for command in SHOWN.get(change, "print").split()]


@pytest.fixture(scope="module")
def rmsnorm():
    return next(x for x in load_lessons()[0] if x.id == "rmsnorm")


@pytest.mark.parametrize("change, command", CASES)
def test_a_poisoned_parsed_lessons_cache_is_ignored_and_nothing_raw_is_printed(tmp_path, rmsnorm, change, command):
    poison(parsed_cache(tmp_path), CHANGES[change])
    (tmp_path / "learners" / "ann").mkdir(parents=True)
    (tmp_path / "learners" / "ann" / "progress.json").write_text(json.dumps(
        {"version": 1, "lesson": "rmsnorm", "step": 1, "visited": {"rmsnorm": ["formula", "placement"]}}))
    done = run_cli(*COMMANDS[command], env={"XF_TOUR_STATE_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    assert not RAW.search(out), repr(RAW.search(out).group())
    assert "Zq9" not in out  # the lesson printed is the file's, not the cache's
    if command == "report":
        assert json.loads(done.stdout)["learners"][0]["seen"] == {"rmsnorm": 2}
    elif command == "json":
        assert {"id": "rmsnorm", "title": {"zh": rmsnorm.title.zh, "en": rmsnorm.title.en}}.items() <= \
            next(x for x in json.loads(done.stdout) if x["id"] == "rmsnorm").items()
    else:
        assert rmsnorm.title.en in out and (command == "lessons" or rmsnorm.steps[0].title.en in out)


@pytest.mark.parametrize("change", CHANGES)
def test_every_poisoned_entry_is_parsed_anew(tmp_path, change):
    """Each change is one the loader refuses in a file: the cached entry is passed over, the file parsed again,
    and the cache written back as the file gives it."""
    path = parsed_cache(tmp_path)
    poison(path, CHANGES[change])
    parsed = Parsed(path)
    lessons, problems = load_lessons(SHIPPED, parse=parsed.parse)
    assert parsed.parsed == 1 and not problems and lessons == load_lessons()[0]
    assert parsed.save() and "Zq9" not in path.read_text(encoding="utf-8")


def test_a_cache_entry_that_passes_the_check_is_used(tmp_path):
    """The control for the test above: with this code's stamp, an entry that passes the loader's checks is read
    (a changed title shows), so an ignored poisoned one was read and refused, not missed."""
    poison(parsed_cache(tmp_path), lambda entry: entry.update(title=["Zq9 title", "Zq9 标题"]))
    done = run_cli("lessons", env={"XF_TOUR_STATE_DIR": str(tmp_path)})
    assert done.returncode == 0 and "Zq9 title" in done.stdout


@pytest.mark.parametrize("text", ["[" * 100_000, "not json", ""], ids=["deep", "broken", "empty"])
def test_a_cache_nested_too_deeply_or_broken_counts_as_empty(tmp_path, text):
    """json.loads of 100,000 brackets raises RecursionError, which is no ValueError: every command stopped."""
    (tmp_path / PARSED_NAME).write_text(text)
    done = run_cli("lessons", env={"XF_TOUR_STATE_DIR": str(tmp_path)})
    assert done.returncode == 0 and "rmsnorm" in done.stdout, done.stderr
    assert len(Parsed(tmp_path / PARSED_NAME).entries) == 13  # and written anew


def test_what_lessons_prints_is_safe_even_from_lessons_that_bypassed_the_loader(monkeypatch, capsys):
    """Defence in depth: `xf-tour lessons`, as a list and as JSON, shows a lesson's id and titles as safe text."""
    from types import SimpleNamespace

    from engine.records import replace
    from engine.views import Tr
    from tui.cli import lessons as cli_lessons

    lesson = load_lessons()[0][0]
    bad = replace(lesson, id="res" + POISON, title=Tr("T " + POISON, "标 " + POISON))
    monkeypatch.setattr(cli_lessons, "lessons_for", lambda args: [bad])
    for as_json in (False, True):
        assert cli_lessons.cmd_lessons(SimpleNamespace(json=as_json), "en") == 0
        out = capsys.readouterr().out
        assert "Zq9" in out and not RAW.search(out), repr(out)
        if as_json:
            assert json.loads(out)[0]["id"] == bad.id  # the same data to a JSON reader


@pytest.mark.parametrize("where", ["table_title", "cell", "fact_label", "names"])
def test_a_poisoned_kept_result_is_not_recalled(tmp_path, where):
    """The results a start keeps of its opening step are drawn before the engine runs: a text in them that a
    lesson file could not hold is not recalled (the step is computed instead)."""
    from engine.views import get_view

    path, settings = tmp_path / RESULTS_NAME, {"n": 4}
    results = Results(path)
    results.keep("positional", settings, get_view("positional").run(settings))
    assert results.save() and Results(path).recall("positional", settings) is not None
    data = json.loads(path.read_text(encoding="utf-8"))
    [entry] = data["entries"].values()
    table = entry["result"]["tables"][0]
    if where == "table_title":
        table["title"][0] = POISON
    elif where == "cell":
        table["rows"][0][0] = POISON
    elif where == "fact_label":
        entry["result"]["facts"][0][1][1] = POISON
    else:
        entry["names"].append(POISON)
    path.write_text(json.dumps(data), encoding="utf-8")
    assert Results(path).recall("positional", settings) is None


@pytest.mark.parametrize("params", [{"nope": 1}, {"n": 10**9}])
async def test_a_cached_setting_the_view_refuses_is_said_inline_and_no_key_crashes(tmp_path, params):
    """What the cache is not checked for without importing the views: a setting the step's view lacks, or a
    value outside its range. The view refuses it as it runs, and the tour says so inline, keys and all."""
    from tui.app import make_app

    path = parsed_cache(tmp_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    [entry] = [v for k, v in data["entries"].items() if k.startswith("02-positional.toml:")]
    entry["steps"][0]["params"] = params
    path.write_text(json.dumps(data), encoding="utf-8")
    parsed = Parsed(path)
    lessons, _ = load_lessons(SHIPPED, parse=parsed.parse)
    assert parsed.parsed == 0  # taken from the cache
    app = make_app(lang="en", lesson="positional", state_dir=tmp_path / "state", lessons=lessons)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.lesson_screen()
        for key in ("1", "2", "3", "t", "w", "0", "n", "p"):
            await pilot.press(key)
            assert app._exception is None and app.screen is screen, key
        assert "The engine refused" in screen.query_one("#message").content.plain


def test_a_pass_is_checked_again_once_the_code_of_its_graders_changes(tmp_path):
    """The deep check runs the app's graders (tui/quiz_check.py): the checked cache's stamp covers their folder,
    so a pass kept before they changed does not hold after."""
    import os

    from lessons.check import Checked

    code = tmp_path / "grader"
    code.mkdir()
    (code / "grade.py").write_text("RIGHT = 1\n")
    lesson = next(x for x in load_lessons(SHIPPED)[0] if x.id == "ffn")
    calls = []

    def more(lesson, steps=None):
        calls.append(lesson.id)
        return []

    first = Checked(tmp_path / "checked.json", more=more, code=(code,))
    assert first.all_problems([lesson]) == [] and calls == ["ffn"]
    assert Checked(tmp_path / "checked.json", more=more, code=(code,)).all_problems([lesson]) == []
    assert calls == ["ffn"]  # the pass held: nothing was checked again
    (code / "grade.py").write_text("RIGHT = 22\n")
    os.utime(code / "grade.py", ns=(1, 1))
    code_stamp.cache_clear()  # a new process
    Checked(tmp_path / "checked.json", more=more, code=(code,)).all_problems([lesson])
    assert calls == ["ffn", "ffn"]
