"""The learner's own input at 80x24 (tui/screens/editing.py): `e` opens a line in place of the message lines; a
setting typed as name=value, or a sentence, is applied and marked like a key; a value out of range, an unknown
setting, a word the tiny model does not know and a control character are refused on the line, which stays
open; Esc closes it unchanged; a paste is cut at 200 characters."""

from helpers.pilot import at, type_line
from helpers.screen import message, note, screen_text, settings
from textual.widgets import Input

from tui.app import make_app


async def test_a_number_typed_is_applied_and_marked(state):
    app = make_app(lang="en", lesson="attention", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await at(pilot, app, "attention", "scaled")
        await pilot.press("e")
        await pilot.pause()
        screen = app.lesson_screen()
        assert screen.editing and screen.focused is screen.query_one("#editor")
        assert "Type name=value, a setting the footer shows" in note(app)
        for key in "d=300":
            await pilot.press(key)
        await pilot.press("enter")
        await pilot.pause()
        assert not screen.editing and "d=300" in settings(app)
        assert message(app).startswith("[e] d 8 -> 300")
        await pilot.press("1")  # the key goes on from the value typed: 300 is not among its values
        await pilot.pause()
        assert "d=8" in settings(app)


async def test_out_of_range_unknown_and_control_characters_are_refused_on_the_line(state):
    app = make_app(lang="zh", lesson="attention", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await at(pilot, app, "attention", "scaled")
        await type_line(pilot, app, "d=0")
        assert app.lesson_screen().editing and "d=8" in settings(app)
        assert "d 必须是 1 到 1,000,000,000 之间的整数，收到 '0'" in note(app)
        await type_line(pilot, app, "width=3")
        assert "这一步没有「width」这个设置" in note(app)
        await type_line(pilot, app, "d=3\x1b[2J")
        assert "不接受控制字符" in note(app) and "d=8" in settings(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not app.lesson_screen().editing and "d=8" in settings(app)


async def test_a_size_the_engine_refuses_is_said_and_nothing_changes(state):
    app = make_app(lang="en", lesson="positional", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_line(pilot, app, "n=10000000")
        assert app.lesson_screen().editing and "n=4" in settings(app)
        assert "MiB" in note(app) or "too" in note(app), note(app)


async def test_a_prompt_of_the_learners_own(state):
    app = make_app(lang="en", lesson="sampling", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await at(pilot, app, "sampling", "raw")
        await type_line(pilot, app, "the kitten sits")
        assert note(app) == "'kitten' is not one of the tiny model's 52 tokens; try cat, dog, bird, fox."
        await type_line(pilot, app, "the cat near the dgs")
        assert note(app).endswith("try dogs, dog.")
        assert "prompt=the cat near the dogs" in screen_text(app)
        await type_line(pilot, app, "the big dogs near the cat")
        assert "prompt=the big dogs near the cat" in screen_text(app)
        # the new prompt and the number it moved: the old prompt gives way on the one line (tui/report.py)
        assert message(app).startswith("[e] prompt -> the big dogs near the cat: most likely token sees -> ")
        await type_line(pilot, app, "prompt=the cats sits")  # the grammar never makes it: allowed, and said
        assert "prompt=the cats sits" in screen_text(app)
        assert "The grammar never makes this sentence" in message(app)
        assert "the cats sits" in screen_text(app)


async def test_a_paste_is_cut_at_200_characters(state):
    app = make_app(lang="en", lesson="sampling", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await at(pilot, app, "sampling", "raw")
        await pilot.press("e")
        await pilot.pause()
        editor = app.lesson_screen().query_one("#editor", Input)
        editor.insert_text_at_cursor("the cat " * 100)
        await pilot.pause()
        assert len(editor.value) == 200


async def test_the_recap_has_nothing_to_type(state):
    app = make_app(lang="en", lesson="attention", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        app.tour.goto("attention", len(app.tour.lesson.steps))
        app.lesson_screen().arrived()
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        assert not app.lesson_screen().editing and "no settings to type" in message(app)


async def test_any_text_on_a_bpe_step_stands_in_for_the_sentence_of_its_script(state):
    app = make_app(lang="en", lesson="tokens", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await at(pilot, app, "tokens", "cost")
        await pilot.press("e")
        await pilot.pause()
        assert "Type any text, up to 200 characters" in note(app)
        await pilot.press("escape")
        await type_line(pilot, app, "Tokenizers split unfamiliar words like defenestration!")
        screen = screen_text(app)
        assert not app.lesson_screen().editing
        assert "Yours" in screen and "English " not in screen.split("Chinese")[0]
        assert "Your text stands in for the English sentence" in message(app)
        assert "The English sentence has 6 words" in screen  # the prose follows the text typed
        await type_line(pilot, app, "我自己打的一句话，看看要几个词元。")
        assert "Your text stands in for the Chinese sentence" in message(app)
        assert "English" in screen_text(app) and "Yours" in screen_text(app)


async def test_a_long_text_is_cut_with_a_count_and_still_fits(state):
    app = make_app(lang="zh", lesson="tokens", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await at(pilot, app, "tokens", "bytes")  # merges=0: one token per byte, 600 of them here
        await type_line(pilot, app, "字" * 200)
        assert not app.lesson_screen().editing, note(app)
        screen = screen_text(app)
        assert "... +" in screen and "你的" in screen
        assert not app.lesson_screen().query_one("#body").max_scroll_y  # one step, one screen
        await type_line(pilot, app, "text=" + "a" * 201)
        assert "1 到 200 个字符" in note(app)


def test_every_text_setting_is_one_the_footer_cuts_short():
    """A text setting's value is begun in the footer; a sentence of the tiny grammar (kind "sentence", also named
    prompt in tiny-sample) is shown whole."""
    from engine.views import VIEWS
    from tui.page import is_text, shown_value

    texts = [(v.id, p.name) for v in VIEWS.values() for p in v.params if p.kind == "text"]
    assert len(texts) >= 2 and all(is_text(*case) for case in texts)
    assert shown_value("bpe", "text", "a" * 40) == "a" * 21 + "..."
    assert shown_value("real-next", "prompt", "a" * 40) == "a" * 21 + "..."
    assert shown_value("tiny-sample", "prompt", "the big dogs near the cat") == "the big dogs near the cat"


async def test_a_value_that_would_break_another_step_of_the_lesson_is_refused(state):
    """A typed value holds for the lesson, as a key's does: d=4 fits where it is typed ("speeds"), but the
    table step's prose reads d6, which d=4 does not have. Refused on the line, nothing changed."""
    app = make_app(lang="en", lesson="positional", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await at(pilot, app, "positional", "speeds")
        await type_line(pilot, app, "d=4")
        assert app.lesson_screen().editing and "step 1's prose needs a figure" in note(app)
        assert app.tour.typed.get("positional", {}) == {}
        await type_line(pilot, app, "n=1")  # the table step's rows 1 to 3
        assert app.lesson_screen().editing and app.tour.typed.get("positional", {}) == {}
        await pilot.press("escape", "p")
        await pilot.pause()
        assert app.is_running and "d=8" in screen_text(app)


async def test_a_pasted_control_character_never_reaches_the_line(state):
    app = make_app(lang="en", lesson="attention", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("e")
        await pilot.pause()
        line = app.lesson_screen().query_one("#editor", Input)
        line.replace("d=1\x1b]0;T\x07\x1b[2J6", 0, 0)
        assert line.value == "d=1]0;T[2J6"


async def test_moving_away_while_typing_closes_the_line(state):
    app = make_app(lang="en", lesson="attention", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("e")
        await pilot.pause()
        assert app.lesson_screen().editing
        app.tour.goto("attention", 2)  # as the palette's jump does
        app.lesson_screen().arrived()
        await pilot.pause()
        assert not app.lesson_screen().editing and app.focused is None


async def test_while_a_question_waits_e_is_not_offered(state):
    app = make_app(lang="en", lesson="attention", state_dir=state, asks=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await at(pilot, app, "attention", "scaled")
        assert "e" in {k.key for k in app.lesson_screen().footer}
        await pilot.press("1")
        await pilot.pause()
        assert app.lesson_screen().asking is not None
        assert "e" not in {k.key for k in app.lesson_screen().footer}
        await pilot.press("e")
        await pilot.pause()
        assert not app.lesson_screen().editing and app.lesson_screen().asking is not None
