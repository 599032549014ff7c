"""Lesson files as an attacker or an unlucky author writes them (oversized, malformed, hostile): each is refused
with exit 2 and the field or line named, before tomllib when it is too big; and lesson text reaches the
terminal neither as control characters nor as Rich markup, even when the loader is bypassed."""

import re
import shutil

import pytest
from helpers.cli import run_cli
from helpers.lessons import plain
from helpers.screen import screen_text

from engine.records import replace
from engine.views import Tr
from lessons import loader
from lessons.loader import SHIPPED, load_lessons, parse_lesson
from tui.app import make_app

# The title: clear the screen, set the window title, and hide a link to /etc/passwd.
ATTACK = "\x1b[2J\x1b]0;pwned\x07\x1b]8;;file:///etc/passwd\x1b\\x\x1b]8;;\x1b\\"
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # nothing of this may be drawn
FILE = "03-attention.toml"


def toml_string(text: str) -> str:
    """text as a TOML basic string, every control character written as a \\u escape."""
    out = "".join(f"\\u{ord(ch):04x}" if RAW.match(ch) or ch in "\\\"" else ch for ch in text)
    return f'"{out}"'


@pytest.fixture
def attention(tmp_path):
    """A folder holding only a copy of the attention lesson, and its text."""
    folder = tmp_path / "mine"
    folder.mkdir()
    shutil.copy(SHIPPED / FILE, folder / FILE)
    return folder


def broken(folder, change):
    path = folder / FILE
    text = path.read_text(encoding="utf-8")
    changed = change(text)
    assert changed != text, "the change found nothing to change"
    path.write_text(changed, encoding="utf-8")


def top(line):
    """A change that adds a top-level line after `order = 3`."""
    return lambda t: t.replace("order = 3\n", f"order = 3\n{line}\n", 1)


ATTACKED = toml_string(ATTACK)[:-1]  # the opening quote and the attack, for a title to go on
def NO_STEPS(t):  # a lesson whose [[steps]] tables are gone and whose steps is a list of the wrong things
    return (re.sub(r"\n\[\[steps\]\].*?(?=\n\[\[experiments\]\])", "", t, count=1, flags=re.S)
            .replace("order = 3\n", 'order = 3\nsteps = [1, 2, "x"]\n', 1))

REFUSALS = {
    # control characters and invisible format characters, in every kind of string
    "escape_in_lesson_title": (lambda t: t.replace('title.en = "Scaled dot', f"title.en = {ATTACKED}Scaled dot", 1),
                               "field 'title.en'", "U+001B"),
    "bell_in_step_title": (lambda t: t.replace('title.en = "What I seek', 'title.en = "\\u0007What I seek', 1),
                           "field 'steps[0].title.en'", "U+0007"),
    "c1_csi_in_prose": (lambda t: t.replace("Three learned matrices", "\\u009b2JThree learned matrices", 1),
                        "field 'steps[0].text.en'", "U+009B"),
    "del_in_hint": (lambda t: t.replace('hints.1.en = "d={d}', 'hints.1.en = "\\u007fd={d}', 1),
                    "field 'steps[0].hints.1.en'", "U+007F"),
    "carriage_return_in_zh": (lambda t: t.replace('title.zh = "我要找什么', 'title.zh = "\\r我要找什么', 1),
                              "field 'steps[0].title.zh'", "U+000D"),
    "bidi_override_in_experiment": (lambda t: re.sub(r'(\[\[experiments\]\]\nkey = "1"\ntitle\.en = ")',
                                                     r"\1\\u202e", t, count=1),
                                    "field 'experiments[0].title.en'", "U+202E"),
    "bidi_isolate_in_pitfall": (lambda t: re.sub(r'(\[\[pitfalls\]\]\ntext\.en = "+)', r"\1\\u2066", t, count=1),
                                "field 'pitfalls[0].text.en'", "U+2066"),
    "tab_in_step_title": (lambda t: t.replace('title.en = "What I seek', 'title.en = "\\tWhat I seek', 1),
                          "field 'steps[0].title.en'", "a tab"),
    "line_separator": (lambda t: t.replace('title.en = "What I seek', 'title.en = "\\u2028What I seek', 1),
                       "field 'steps[0].title.en'", "U+2028"),
    "escape_in_table_name": (lambda t: t.replace('tables = ["scores"]', 'tables = ["\\u001bscores"]', 1),
                             "field 'steps[0].tables[0]'", "U+001B"),
    "escape_in_a_key": (top('"\\u001b[2J" = 1'), "field '\\x1b[2J'", "U+001B"),
    # sizes and shapes that stall or break tomllib
    "text_over_the_cap": (lambda t: t.replace('title.en = "What I seek', 'title.en = "' + "x" * 9000, 1),
                          "field 'steps[0].title.en'", "over the cap of 8,000"),
    "file_over_the_cap": (lambda t: t + "# " + "x" * 300_000 + "\n", FILE, "the file is over 256 KB"),
    "dotted_key_20000_parts": (top(".".join(["a"] * 20_000) + " = 1"), f"{FILE}:5", "more than 8 parts"),
    "arrays_5000_deep": (top("deep = " + "[" * 5000 + "]" * 5000), f"{FILE}:5, field 'deep'", "nested more than 16"),
    "integer_of_5000_digits": (lambda t: t.replace("order = 3", "order = " + "9" * 5000, 1), f"{FILE}:4, field 'order'",
                               "more than 50 digits"),
    "hex_of_5000_digits": (lambda t: t.replace("order = 3", "order = 0x" + "f" * 5000, 1), "field 'order'",
                           "more than 50 digits"),
    # wrong types
    "steps_not_tables": (NO_STEPS, "field 'steps[0]'", "a step must be a table"),
    "key_a_list": (lambda t: t.replace('key = "1"', 'key = ["1"]', 1), "field 'experiments[0].key'", "got ['1']"),
    "param_a_list": (lambda t: t.replace('param = "d"', 'param = ["n"]', 1), "field 'experiments[0].param'",
                     "got ['n']"),
    "view_a_list": (lambda t: t.replace('view = "attention"', 'view = ["mask"]', 1), "step 'qkv', field 'view'",
                    "unknown view ['mask']"),
    "format_version_true": (lambda t: t.replace("format_version = 1", "format_version = true"),
                            "field 'format_version'", "the whole number 1"),
    "format_version_float": (lambda t: t.replace("format_version = 1", "format_version = 1.0"),
                             "field 'format_version'", "the whole number 1"),
    # placeholders
    "superscript_row": (lambda t: t.replace("{last_top}", "{scores.².c0}", 2), "step 'qkv', field 'text.",
                        "placeholder {scores.².c0}"),
    "row_of_5000_digits": (lambda t: t.replace("{last_top}", "{scores." + "9" * 5000 + ".c0}", 2),
                           "step 'qkv', field 'text.", "placeholder {scores.999"),
    "zh_and_en_placeholders_differ": (lambda t: t.replace("scores {last_top} highest", "scores {d} highest", 1),
                                      "step 'qkv', field 'text'", "{last_top} only in zh"),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_a_bad_lesson_file_is_refused_with_exit_2_naming_the_field(attention, case):
    change, where, words = REFUSALS[case]
    broken(attention, change)
    out = run_cli("check-lessons", str(attention))
    assert out.returncode == 2, out.stderr[:300]
    first = out.stderr.splitlines()[0]
    assert FILE in first and where in first and words in first, first[:300]
    assert "internal" not in out.stderr and "Traceback" not in out.stderr
    assert not RAW.search(out.stderr)  # the message quotes no control character raw
    assert len(first) < 800  # a 5,000-digit value is not echoed whole (the list of view ids is about 500)


@pytest.mark.parametrize("command", [["--lang", "en"], ["print", "--lesson", "attention"]])
def test_the_attack_title_stops_the_tour_and_print_with_exit_2(attention, command):
    """`xf-tour --lessons DIR` and `print --lesson` refuse the folder before drawing anything."""
    broken(attention, REFUSALS["escape_in_lesson_title"][0])
    out = run_cli(*command, "--lessons", str(attention))
    assert out.returncode == 2 and "field 'title.en'" in out.stderr and "U+001B" in out.stderr, out.stderr
    assert not RAW.search(out.stdout + out.stderr)


@pytest.mark.parametrize("case", ["dotted_key_20000_parts", "file_over_the_cap", "arrays_5000_deep",
                                  "integer_of_5000_digits"])
def test_too_big_is_refused_before_tomllib_reads_it(attention, case, monkeypatch):
    """The refusal comes before tomllib: a 20,000-part dotted key alone took tomllib 45 s and 1.5 GB."""
    broken(attention, REFUSALS[case][0])

    def never(*_):
        raise AssertionError("tomllib was asked to read a file over the caps")

    monkeypatch.setattr("tomllib.loads", never)  # the loader imports tomllib when it first parses a file
    lesson, errors = parse_lesson(attention / FILE)
    assert lesson is None and REFUSALS[case][2] in str(errors[0])


def test_the_caps_are_far_above_the_shipped_lessons():
    biggest = max(path.stat().st_size for path in SHIPPED.glob("*.toml"))
    assert biggest * 10 < loader.MAX_FILE_BYTES
    lessons, _ = load_lessons()
    texts = [tr(lang) for x in lessons for s in x.steps for tr in (s.title, s.text, *s.hints.values())
             for lang in ("zh", "en")]
    assert max(map(len, texts)) * 5 < loader.MAX_TEXT


# --- defence in depth: text that got past the loader -------------------------------------------------

def bypassed(lesson, text=ATTACK):
    """The lesson with `text` in its title, its first step's title and prose, its first experiment's
    title and its first pitfall, built without the loader."""
    bad = Tr(f"{text}pwned title", f"{text}pwned 标题")
    step = replace(lesson.steps[0], title=bad, text=Tr(text + lesson.steps[0].text.en,
                                                                   text + lesson.steps[0].text.zh))
    experiment = replace(lesson.experiments[0], title=bad)
    return replace(lesson, title=bad, steps=(step, *lesson.steps[1:]),
                               experiments=(experiment, *lesson.experiments[1:]), pitfalls=(bad, *lesson.pitfalls))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_plain_printer_draws_no_control_character_from_a_lesson(lang):
    lesson = bypassed(next(x for x in load_lessons()[0] if x.id == "attention"))
    text = plain(lesson, lang)
    assert not RAW.search(text), repr(RAW.search(text).group())
    assert "\u241b[2J\u241b]0;pwned\u2407" in text  # shown as control pictures, one cell each


def shown(app) -> str:
    """The whole screen as plain text, including the palette when it is open."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_the_app_draws_no_control_character_from_a_lesson(tmp_path):
    lessons = load_lessons()[0]
    lessons = [bypassed(x) if x.id == "attention" else x for x in lessons]
    app = make_app(lang="en", lesson="attention", state_dir=tmp_path / "state", lessons=lessons)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        first = screen_text(app)
        assert "pwned title" in first and "\u241b" in first and not RAW.search(first)
        for _ in app.tour.lesson.steps:  # on to the recap, which lists the pitfalls
            await pilot.press("n")
        recap = screen_text(app)
        assert app.tour.on_recap() and "pwned title" in recap and not RAW.search(recap)
        await open_palette(pilot, "pwned", "pwned title")
        assert "pwned title" in shown(app) and not RAW.search(shown(app))
        assert app.is_running


# --- Rich markup in a title ----------------------------------------------------------------------------

MARKUP = {"lesson": "[/] Markup [/bold] lesson", "step": "[@click=app.quit]quit step"}


@pytest.fixture
def markup_lessons(attention):
    broken(attention, lambda t: t.replace('title.en = "Scaled dot-product attention and the causal mask"',
                                          f'title.en = "{MARKUP["lesson"]}"', 1)
           .replace('title.en = "What I seek, what I offer, what I hand over"', f'title.en = "{MARKUP["step"]}"', 1))
    return attention


async def open_palette(pilot, query: str, expect: str) -> None:
    """Ctrl+P, type the query, and wait until the palette lists a hit holding `expect`."""
    from textual.command import CommandList

    await pilot.press("ctrl+p")
    await pilot.press(*query)
    listing = pilot.app.screen.query_one(CommandList)

    def hits():
        return [listing.get_option_at_index(i).prompt.plain for i in range(listing.option_count)]

    for _ in range(500):  # the search runs in a worker: wait for its hits, not for a time
        await pilot.pause()
        if any(expect in hit for hit in hits()):
            break
    assert any(expect in hit for hit in hits()), hits()


def test_markup_titles_pass_the_loader_as_plain_text(markup_lessons):
    lessons, _ = load_lessons(markup_lessons)
    assert lessons[0].title.en == MARKUP["lesson"] and lessons[0].steps[0].title.en == MARKUP["step"]


async def test_markup_in_titles_is_shown_literally_and_ctrl_p_does_not_crash(markup_lessons, tmp_path):
    app = make_app(lang="en", lesson="attention", lessons_dir=markup_lessons, state_dir=tmp_path / "state")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert MARKUP["lesson"] in screen_text(app)
        await pilot.press("n")  # away from the step whose title the palette will jump back to
        await open_palette(pilot, "quit step", MARKUP["step"])
        screen = shown(app)
        assert MARKUP["step"] in screen and "[/] Markup [/bold]" in screen
        await pilot.press("enter")
        await pilot.pause()
        assert app.is_running and app.tour.step.id == "qkv"  # "[@click=app.quit]" was text, not an action
        assert MARKUP["step"] in screen_text(app)
        await open_palette(pilot, "", MARKUP["lesson"])  # no query: every lesson and step, unfiltered
        assert MARKUP["lesson"] in shown(app) and app.is_running
