"""A learner's own lessons (--lessons DIR): the tour opens after checking only the step it shows; the rest is
checked after the first frame, and a problem found then is said inline; a file that passed is not checked
again until it changes."""

import shutil

import pytest
from helpers.screen import message

from lessons import check
from lessons.check import CACHE_NAME, Checked
from lessons.loader import SHIPPED, LessonsInvalid, load_lessons
from tui.app import make_app
from tui.cli.parser import UsageError
from tui.cli.tour import check_own

BROKEN = "{max_diff}"  # named by several steps of 02-positional.toml, in both languages


@pytest.fixture
def mine(tmp_path):
    """Two shipped lessons copied; the second names a placeholder its view lacks."""
    folder = tmp_path / "mine"
    folder.mkdir()
    for name in ("01-residual.toml", "02-positional.toml"):
        shutil.copy(SHIPPED / name, folder / name)
    path = folder / "02-positional.toml"
    text = path.read_text(encoding="utf-8")
    assert BROKEN in text
    path.write_text(text.replace(BROKEN, "{no_such_fact}"), encoding="utf-8")
    return folder


@pytest.mark.parametrize("lang, words", [("en", "problem(s) in your lessons"), ("zh", "你的课程有")])
@pytest.mark.slow
async def test_a_problem_in_a_later_lesson_is_said_inline_after_the_first_frame(mine, tmp_path, lang, words):
    lessons, _ = load_lessons(mine)  # parses strictly: the problem is one only the deep check finds
    app = make_app(lang=lang, lesson="residual", lessons=lessons, state_dir=tmp_path / "state")
    check_own(app, mine, Checked(tmp_path / "state" / CACHE_NAME))  # residual's first step is fine: no exit
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        said = message(app)
        assert "02-positional.toml" in said and words in said, said
        assert app.lesson_problems and "no_such_fact" in str(app.lesson_problems[0])
        for _ in range(20):  # on into the broken step: said inline, no crash
            if app.tour.step is not None and app.tour.step.id == "bag":
                break
            await pilot.press("n")
        await pilot.pause()
        assert app.is_running and app.tour.lesson.id == "positional" and app.tour.step.id == "bag"
        assert "no_such_fact" in message(app), message(app)


async def test_a_broken_step_on_screen_stops_the_tour_before_it_starts(mine, tmp_path):
    lessons, _ = load_lessons(mine)
    app = make_app(lang="en", lesson="positional", lessons=lessons, state_dir=tmp_path / "state")
    app.tour.goto("positional", 2)  # the step "bag", which names the placeholder
    with pytest.raises(UsageError) as err:
        check_own(app, mine, Checked(tmp_path / "state" / CACHE_NAME))
    assert "02-positional.toml" in err.value.args[0] and "no_such_fact" in err.value.args[0]


@pytest.mark.slow
def test_a_file_that_passed_is_not_checked_again_until_it_changes(tmp_path, monkeypatch):
    folder = tmp_path / "mine"
    folder.mkdir()
    for name in ("01-residual.toml", "02-positional.toml"):
        shutil.copy(SHIPPED / name, folder / name)
    checked = []
    real = check.check_deep
    monkeypatch.setattr(check, "check_deep",
                        lambda lesson, steps=None, more=None: checked.append(lesson.id) or real(lesson, steps, more))
    cache = tmp_path / "state" / CACHE_NAME

    lessons, _ = load_lessons(folder)
    assert Checked(cache).all_problems(lessons) == [] and checked == ["residual", "positional"]
    checked.clear()
    assert Checked(cache).all_problems(load_lessons(folder)[0]) == [] and checked == []  # a second start

    path = folder / "02-positional.toml"
    text = path.read_text(encoding="utf-8").replace("Sinusoidal and rotary", "My sinusoidal and rotary", 1)
    path.write_text(text, encoding="utf-8")
    assert Checked(cache).all_problems(load_lessons(folder)[0]) == [] and checked == ["positional"]

    checked.clear()
    cache.write_text("{not json", encoding="utf-8")  # a broken cache is ignored, and written anew
    assert Checked(cache).all_problems(load_lessons(folder)[0]) == [] and checked == ["residual", "positional"]
    checked.clear()
    assert Checked(cache).all_problems(load_lessons(folder)[0]) == [] and checked == []


def test_a_file_with_a_problem_is_checked_and_reported_every_time(mine, tmp_path):
    cache = tmp_path / "state" / CACHE_NAME
    for _ in range(2):
        problems = Checked(cache).all_problems(load_lessons(mine)[0])
        assert problems and all("02-positional.toml" in str(e) for e in problems)


def test_a_parsed_file_is_recalled_until_it_changes_and_its_name_is_part_of_the_key(tmp_path):
    from lessons.cache import PARSED_NAME, Parsed

    folder, cache = tmp_path / "mine", tmp_path / "state" / PARSED_NAME
    folder.mkdir()
    for name in ("01-residual.toml", "02-positional.toml"):
        shutil.copy(SHIPPED / name, folder / name)

    def load():
        parsed = Parsed(cache)
        lessons, _ = load_lessons(folder, parse=parsed.parse)
        parsed.save()
        return lessons, parsed.parsed

    first, n = load()
    assert n == 2 and first == load_lessons(folder)[0]
    again, n = load()
    assert n == 0 and again == first and [x.path for x in again] == [x.path for x in first]  # a second start

    path = folder / "02-positional.toml"
    path.write_text(path.read_text(encoding="utf-8").replace("Sinusoidal and rotary", "My waves", 1),
                    encoding="utf-8")
    lessons, n = load()
    assert n == 1 and lessons[1].title.en == "My waves positions"

    path.rename(folder / "02-waves.toml")  # same bytes, another name: parsed, and refused as the loader refuses it
    with pytest.raises(LessonsInvalid, match="does not match the id"):
        load_lessons(folder, parse=Parsed(cache).parse)
    path = folder / "02-waves.toml"
    path.rename(folder / "02-positional.toml")

    cache.write_text('{"stamp": 1, "entries": [', encoding="utf-8")  # broken: ignored, and written anew
    assert load()[1] == 2 and load()[1] == 0
