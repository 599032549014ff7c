"""One step, one screen: every page of every lesson fits 80x24 in zh and en, before and after every
value of every experiment key, and what a key changed is marked and in view."""

import pytest
from helpers.cli import run_cli
from helpers.lessons import FIXTURES
from helpers.screen import body_fits

from lessons.loader import load_lessons
from tui.app import make_app
from tui.fit import fit_problems
from tui.layout import screen as page_layout
from tui.layout.screen import MIN_HEIGHT, MIN_WIDTH
from tui.screens.lesson import LessonScreen

LESSONS, _ = load_lessons()


@pytest.mark.slow
@pytest.mark.real_model
def test_every_page_fits_at_every_reachable_setting():
    """The layout check of check-lessons: every combination of experiment values, both languages; the real
    model's lesson with the model."""
    problems = fit_problems(LESSONS)
    assert problems == [], "\n".join(map(str, problems))


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.slow
@pytest.mark.real_model
async def test_a_learner_walks_every_step_and_presses_every_key(lang, tmp_path):
    """As tour-walk does in a real terminal: each page, then each experiment key through all its values."""
    app = make_app(lang=lang, lesson=LESSONS[0].id, state_dir=tmp_path)
    seen = 0
    async with app.run_test(size=(MIN_WIDTH, MIN_HEIGHT)) as pilot:
        await pilot.pause()
        while True:
            await pilot.pause()
            await app.workers.wait_for_complete()  # a slow view (the real model's) computes in a thread
            await pilot.pause()
            ok, where = body_fits(app)
            assert ok, where
            seen += 1
            tour = app.tour
            for x in tour.lesson.experiments:
                if x.action is None and tour.takes(x):
                    for _ in x.values:
                        await pilot.press(x.key)
                        await app.workers.wait_for_complete()  # the slow sweep computes in a thread
                        await pilot.pause()
                        ok, where = body_fits(app)
                        assert ok, where
            await pilot.press("0")
            if tour.at_end():
                break
            await pilot.press("n")
    assert seen == sum(len(x.steps) + 1 for x in LESSONS)


async def test_without_a_model_the_real_lesson_says_how_to_get_one_on_every_step(tmp_path, monkeypatch):
    from tui import tour_state

    monkeypatch.delenv("XF_TOUR_MODEL", raising=False)
    monkeypatch.setattr(tour_state, "_CACHE", {})  # nothing an earlier test of this process computed with one
    monkeypatch.setenv("XF_TOUR_STATE_DIR", str(tmp_path))
    app = make_app(lang="en", lesson="real", state_dir=tmp_path)
    async with app.run_test(size=(MIN_WIDTH, MIN_HEIGHT)) as pilot:
        for _ in app.tour.lesson.steps:
            await app.workers.wait_for_complete()
            await pilot.pause()
            screen = app.lesson_screen()
            body = screen.query_one("#page").content.plain
            assert body.startswith("no model yet: run `xf-tour model get`") and body.rstrip().endswith("XF_TOUR_MODEL")
            assert len(body.strip().splitlines()) <= 2  # the whole line, wrapped, never cut
            assert app.tour.lesson.id == "real" and "n next" in screen.query_one("#keys").content.plain
            await pilot.press("1", "n")  # a key on a refused step changes nothing and breaks nothing
        assert app.is_running


def underlined(text, needle: str) -> bool:
    """Whether `needle` appears in a rich Text with an underline on it."""
    start = text.plain.find(needle)
    while start != -1:
        end = start + len(needle)
        if any(span.start <= start and span.end >= end and "underline" in str(span.style) for span in text.spans):
            return True
        start = text.plain.find(needle, start + 1)
    return False


async def test_what_a_key_changed_is_underlined_and_in_view(tmp_path):
    app = make_app(lang="en", lesson="positional", state_dir=tmp_path)
    async with app.run_test(size=(MIN_WIDTH, MIN_HEIGHT)) as pilot:
        await pilot.pause()
        screen = app.lesson_screen()
        await pilot.press("1")  # base 10000 -> 500000: row 1, d2 goes +0.100 -> +0.038
        tables = screen.query_one("#page").content
        assert underlined(tables, "+0.038") and not underlined(tables, "+0.841")  # d0 is the same at any base
        assert underlined(screen.query_one("#keys").content, "base=500000")  # the setting, in the footer
        assert "base 10000 -> 500000" in screen.query_one("#message").content.plain
        assert body_fits(app)[0]
        await pilot.press("n")
        assert not screen._marks and not underlined(screen.query_one("#page").content, "+0.038")


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("lesson, step, keys", [("tokens", "probs", "4444"), ("rmsnorm", "inside", "2223332")])
async def test_pressing_through_a_keys_values_never_moves_the_body(lang, lesson, step, keys, tmp_path):
    """tokens/probs, key 4: its prompts make the footer two lines or three; rmsnorm/inside, keys 2 and 3: a value
    one cell wider wraps it when another key sits at its widest. The footer keeps the most any values need, so the
    body keeps its place and a press repaints what changed (over SSH, 11-12 KB a press before)."""
    app = make_app(lang=lang, lesson=lesson, state_dir=tmp_path)
    async with app.run_test(size=(MIN_WIDTH, MIN_HEIGHT)) as pilot:
        screen = app.lesson_screen()
        while screen.tour.step.id != step:
            await pilot.press("n")
        await pilot.pause()
        keys_bar, body = screen.query_one("#keys"), screen.query_one("#body")
        seen, places = set(), {(body.region, keys_bar.region)}
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
            seen.add(len(page_layout.footer_lines(screen.footer, MIN_WIDTH)))
            places.add((body.region, keys_bar.region))
            assert keys_bar.content.plain.splitlines()[-1].lstrip().startswith("n ")  # the moving keys: at the bottom
        assert len(places) == 1
        if lesson == "tokens":
            assert len(seen) > 1  # the footer alone would change its height: the case this test is for


async def test_a_new_row_is_marked_and_in_view(tmp_path):
    app = make_app(lang="en", lesson="context", state_dir=tmp_path)
    async with app.run_test(size=(MIN_WIDTH, MIN_HEIGHT)) as pilot:
        await pilot.pause()
        screen = app.lesson_screen()
        for _ in range(2):  # prompt 4096 -> 32768 -> 200000: a length the table did not hold
            await pilot.press("1")
        assert "prompt=200000" in screen.query_one("#keys").content.plain
        tables = screen.query_one("#page").content
        assert underlined(tables, "200,000")
        assert body_fits(app)[0]


async def test_the_message_line_shows_the_headline_figure_before_and_after(tmp_path):
    app = make_app(lang="en", lesson="attention", state_dir=tmp_path)
    async with app.run_test(size=(MIN_WIDTH, MIN_HEIGHT)) as pilot:
        await pilot.pause()
        app.open_lesson("attention", [s.id for s in app.tour.lesson.steps].index("scaled"))
        await pilot.pause()
        await pilot.press("1")  # d 8 -> 64
        message = app.lesson_screen().query_one("#message").content.plain
        assert message.startswith("[1] d 8 -> 64") and " -> " in message.split(":", 1)[1]


async def test_after_computing_the_message_shows_the_last_press(tmp_path):
    from tui import tour_state
    tour_state._CACHE.clear()
    app = make_app(lang="en", lesson="tokens", state_dir=tmp_path)
    async with app.run_test(size=(MIN_WIDTH, MIN_HEIGHT)) as pilot:
        lesson = app.tour.lesson
        app.open_lesson(lesson.id, next(i for i, s in enumerate(lesson.steps) if s.view == "bpe"))
        await app.workers.wait_for_complete()
        await pilot.pause()
        pair = next(x for x in lesson.experiments if x.param == "pair")
        await pilot.press(pair.key)
        await app.workers.wait_for_complete()
        await pilot.pause()
        message = app.lesson_screen().query_one("#message").content.plain
        assert message.startswith(f"[{pair.key}] pair {pair.values[0]} -> {pair.values[1]}")
        assert "Computing" not in message


async def test_the_slow_views_are_computed_off_the_ui_thread(tmp_path, monkeypatch):
    """The BPE view learns its merges from every lesson's text the first time (a fraction of a second
    here): the key must not freeze the screen, so the view is computed in a worker while a notice shows."""
    import threading

    from engine.records import replace
    from engine.views import VIEWS, get_view
    from tui import tour_state

    threads = []
    slow = get_view("bpe")

    def compute(**kw):
        threads.append(threading.current_thread() is threading.main_thread())
        return slow.compute(**kw)

    monkeypatch.setitem(VIEWS, "bpe", replace(slow, compute=compute))
    tour_state._CACHE.clear()
    app = make_app(lang="en", lesson="tokens", state_dir=tmp_path)
    async with app.run_test(size=(MIN_WIDTH, MIN_HEIGHT)) as pilot:
        lesson = app.tour.lesson
        app.open_lesson(lesson.id, next(i for i, s in enumerate(lesson.steps) if s.view == "bpe"))
        await app.workers.wait_for_complete()
        await pilot.pause()
        merges = next(x for x in lesson.experiments if x.param == "merges")
        await pilot.press(merges.key)
        await app.workers.wait_for_complete()
        await pilot.pause()
        message = app.lesson_screen().query_one("#message").content.plain
        assert message.startswith(f"[{merges.key}] merges 0 -> {merges.values[1]}"), message
    assert threads and not any(threads), threads
    tour_state._CACHE.clear()


async def test_a_notice_does_not_follow_the_learner_to_the_next_step(tmp_path):
    app = make_app(lang="en", lesson="attention", state_dir=tmp_path)
    async with app.run_test(size=(MIN_WIDTH, MIN_HEIGHT)) as pilot:
        await pilot.press("0")
        message = app.lesson_screen().query_one("#message")
        assert "Nothing to reset" in message.content.plain
        await pilot.press("n")
        assert "Nothing to reset" not in message.content.plain


@pytest.mark.slow
async def test_the_code_key_shows_code_on_every_step(tmp_path):
    from tui.screens.code import CodeScreen
    app = make_app(lang="en", lesson=LESSONS[0].id, state_dir=tmp_path)
    async with app.run_test(size=(MIN_WIDTH, MIN_HEIGHT)) as pilot:
        for lesson in LESSONS:
            for i, step in enumerate(lesson.steps):
                app.open_lesson(lesson.id, i)
                await pilot.press("c")
                assert isinstance(app.screen, CodeScreen), (lesson.id, step.id)
                code = app.screen.query("Static").last().content
                assert "def " in getattr(code, "code", ""), (lesson.id, step.id)
                await pilot.press("escape")


async def test_every_lesson_ends_with_its_recap(tmp_path):
    app = make_app(lang="zh", lesson="heads", state_dir=tmp_path)
    async with app.run_test(size=(MIN_WIDTH, MIN_HEIGHT)) as pilot:
        lesson = app.tour.lesson
        for _ in lesson.steps:
            await pilot.press("n")
        assert app.tour.on_recap() and app.tour.lesson.id == "heads"
        text = app.lesson_screen().query_one("#page").content.plain
        assert "值得记住" in text and lesson.pitfalls[0].zh[:12] in text.replace("\n", "")
        assert "第 5 课" in text  # what comes next
        await pilot.press("n")
        assert app.tour.lesson.id == "ffn" and app.tour.step_index == 0


async def test_a_restart_says_where_it_resumes(tmp_path):
    app = make_app(lang="en", lesson="kvcache", state_dir=tmp_path)
    async with app.run_test(size=(MIN_WIDTH, MIN_HEIGHT)) as pilot:
        await pilot.press("n", "q")
    again = make_app(state_dir=tmp_path)
    async with again.run_test(size=(MIN_WIDTH, MIN_HEIGHT)) as pilot:
        await pilot.pause()
        await pilot.pause()
        message = again.lesson_screen().query_one("#message").content.plain
        assert "Resuming at lesson 7" in message and "step 2" in message


# --- a learner's own lesson that is too long ----------------------------------------------------

def test_check_lessons_refuses_a_step_that_cannot_fit():
    out = run_cli("check-lessons", str(FIXTURES / "too_long"))
    assert out.returncode == 2, out.stdout
    assert "01-long.toml" in out.stderr and "step 'wordy'" in out.stderr and "over" in out.stderr
    assert "at 80x24 the step needs" in out.stderr


async def test_a_page_that_must_scroll_says_so_and_scrolls_from_its_top(tmp_path):
    lessons, _ = load_lessons(FIXTURES / "too_long")
    app = make_app(lang="en", state_dir=tmp_path, lessons=lessons)
    async with app.run_test(size=(MIN_WIDTH, MIN_HEIGHT)) as pilot:
        await pilot.pause()
        await pilot.pause()
        body = app.lesson_screen().query_one("#body")
        assert body.max_scroll_y > 0 and body.has_class("-overflow") and "Up/Down" in body.border_subtitle
        assert app.focused is None  # the keys are the screen's, and Up and Down scroll the body
        await pilot.press("down", "down")
        assert body.scroll_y > 0
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        await pilot.resize_terminal(MIN_WIDTH, MIN_HEIGHT)
        await pilot.pause()
        assert body.scroll_y == 0  # a resize starts the page from its top
        await pilot.press("down", "n", "p")
        await pilot.pause()
        assert body.scroll_y == 0 and isinstance(app.screen, LessonScreen)


def test_code_wraps_with_its_indentation():
    from tui.screens.code import wrap_code
    source = ("def f(x):  # [n_seq, d_model] -> [n_seq, d_model], a shape comment far too long to fit\n"
              "    # a comment line that is also far too long for the narrow window it is shown in\n"
              "    return x")
    lines = wrap_code(source, 40).splitlines()
    assert all(len(line) <= 40 for line in lines)
    assert lines[0] == "def f(x):" and lines[1].startswith("    # [n_seq, d_model]")
    assert all(line.startswith("    # ") for line in lines[1:-1]) and lines[-1] == "    return x"


async def test_the_rest_of_a_table_is_one_key_away(tmp_path):
    from tui.screens.tables import TablesScreen
    app = make_app(lang="en", lesson="params", state_dir=tmp_path)
    async with app.run_test(size=(MIN_WIDTH, MIN_HEIGHT)) as pilot:
        app.open_lesson("params", [s.id for s in app.tour.lesson.steps].index("norms"))
        await pilot.pause()
        shown = app.lesson_screen().query_one("#page").content.plain
        assert "..." in shown and "attention W_q" not in shown  # the norm rows, not the 13 of them
        await pilot.press("t")
        assert isinstance(app.screen, TablesScreen)
        everything = "\n".join(str(getattr(w.content, "plain", w.content)) for w in app.screen.query("Static"))
        assert "attention W_q" in everything and "final RMSNorm" in everything
        await pilot.press("escape")
        assert isinstance(app.screen, LessonScreen)
        app.open_lesson("residual", [s.id for s in app.tour.lessons[0].steps].index("mask"))
        await pilot.press("t")  # the mask step shows its whole view: t has nothing more to show
        assert isinstance(app.screen, LessonScreen) and "already shows" in app.lesson_screen().query_one(
            "#message").content.plain


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_training_panel_fits_80_columns_at_its_widest(lang, tmp_path):
    """Every line the live-training panel can show, with its widest numbers, fits the page's width."""
    from rich.cells import cell_len

    from engine import tiny
    from tui.i18n import t
    from tui.layout.screen import PAD

    app = make_app(lang=lang, lesson="heads", state_dir=tmp_path)
    cfg = tiny.CONFIGS["big"]
    curve = {"loss": [[s, 10.0 - s / 100] for s in range(20, cfg.steps + 1, 20)],  # a whole run's curves
             "spread": [[s, 1.0 + s / 100] for s in range(0, cfg.steps + 1, 100)]}
    reading = {"agr": "1.000", "spread": "10.00", "curve": curve}
    running = app.training.lines(cfg, reading, step=cfg.steps, loss=10.0, left=999.0)
    done = app.training.lines(cfg, reading, step=cfg.steps, loss=10.0)[:2]
    ends = [t(key, lang, s=999.0, key="4") for key in ("training_done", "training_stopped")]
    for line in [t("training_start", lang), *running, *done, *ends]:
        text = getattr(line, "plain", line)
        assert cell_len(text) <= MIN_WIDTH - 2 * PAD, text
    assert "left" not in done[1].plain and "剩" not in done[1].plain
    assert "left" in running[1].plain or "剩" in running[1].plain
    braille = [sum(0x2800 <= ord(ch) <= 0x28FF for ch in line.plain) for line in running[1:]]
    assert min(braille) >= 36, braille  # both curves drawn across the run (they start at step 20 and 0)


def _no_space(text: str) -> str:
    """The characters of a source a reader must see, in order: whitespace, the #s a wrapped comment repeats
    and the continuation marks left out."""
    import re
    return re.sub(r"\s|#", "", re.sub(r" \\$", "", text, flags=re.M))


@pytest.mark.parametrize("columns", [80, 120])
def test_every_code_window_shows_every_character_of_its_source(columns):
    """What c shows is the source, broken to the window's width: no line wider than the window, and not one
    character dropped (a broken code line ends with a continuation mark)."""
    from engine.views import VIEWS
    from tui.screens.code import code_width, sources, wrap_code

    width = code_width(columns)
    for view in VIEWS:
        source = sources(view)
        shown = wrap_code(source, width)
        assert max(len(line) for line in shown.splitlines()) <= width, view
        assert _no_space(shown) == _no_space(source), view


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_code_is_broken_for_the_width_the_window_has(tmp_path, size):
    from tui.screens.code import code_width
    app = make_app(lang="en", lesson="attention", state_dir=tmp_path)
    async with app.run_test(size=size) as pilot:
        await pilot.press("c")
        await pilot.pause()
        room = app.screen.query_one("#code").content_region.width  # 2 more when the code needs no scroll bar
        assert code_width(size[0]) <= room <= code_width(size[0]) + 2
