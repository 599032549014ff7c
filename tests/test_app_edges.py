"""The Textual app at its edges: keys and clicks that land while a screen opens, closes or the app
quits, and the exit status and crash report as the command line runs the app."""

import asyncio
import json

import pytest
from helpers.pilot import raw_clicks, raw_keys, settled, until

from tui.app import make_app
from tui.palette import Palette
from tui.screens.lesson import LessonScreen

# --- input that lands while a screen opens, closes or the app quits -------------------------------
# Pilot's press and click wait for each event to be handled. A learner's fast keys and double clicks do
# not: the driver queues them all before the first is handled. tests/helpers/pilot.py posts events as the
# driver does, all at once.

def palette_ready(app) -> bool:
    from textual.command import CommandList
    return isinstance(app.screen, Palette) and app.screen.query_one(CommandList).option_count > 0


@pytest.mark.parametrize("times", [1, 2, 3])
async def test_clicks_outside_the_palette_close_it_and_only_it(state, times):
    app = make_app(lang="en", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+p")
        await until(pilot, lambda: palette_ready(app))
        assert app.get_widget_at(2, 23)[0] is app.screen  # the bottom row is the palette's background
        raw_clicks(app, 2, 23, times)
        await pilot.pause()
        assert [type(s) for s in app.screen_stack] == [LessonScreen]
        await pilot.press("n")
        assert app.tour.step_index == 1 and app._exception is None


@pytest.mark.parametrize("x, y", [(36, 12), (2, 23)])
async def test_typing_into_the_palette_as_it_is_clicked_away(state, x, y):
    """Ctrl+P, a letter and a triple click, all at once (the storm found it): the letter's search started on
    a palette already closing, whose list was gone (NoMatches in a worker)."""
    app = make_app(lang="en", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        raw_keys(app, "ctrl+p", "l")
        raw_clicks(app, x, y, 3)
        await until(pilot, lambda: not Palette.is_open(app))
        await pilot.press("n")
        assert app.tour.step_index == 1 and app._exception is None


@pytest.mark.parametrize("first, keys", [("o", ["enter", "enter"]), ("ctrl+p", ["enter", "enter"]),
                                         ("question_mark", ["escape", "escape"]), ("w", ["escape", "escape"])])
async def test_a_screen_closed_twice_at_once_leaves_the_lesson_under_it(state, first, keys):
    app = make_app(lang="en", lesson="params", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(first)
        await until(pilot, lambda: palette_ready(app) if first == "ctrl+p" else app._held_keys is None)
        raw_keys(app, *keys)
        await settled(pilot)
        assert LessonScreen in [type(s) for s in app.screen_stack]
        while not isinstance(app.screen, LessonScreen):
            await pilot.press("escape")
        await pilot.press("n")
        assert app.tour.step_index == 1 and app._exception is None


@pytest.mark.parametrize("key", ["c", "o", "t", "w", "question_mark", "n", "1", "l"])
async def test_a_key_typed_just_after_q_opens_nothing(state, key):
    app = make_app(lang="en", lesson="params", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        raw_keys(app, "q", key)

        async def quit_seen():  # q quits; what the key after it does happens while the app closes
            while app.return_code is None:
                await asyncio.sleep(0.05)
        await asyncio.wait_for(quit_seen(), 30)
    assert app._exception is None and app.return_code == 0
    assert json.loads((state / "progress.json").read_text())["step"] == 0  # saved where q was pressed


async def test_keys_typed_while_the_workbench_opens_twice_wait_for_it(state):
    """w, Esc, w, Esc at once: the keys held for the first workbench are handled in turn; the second w opens
    another one, and the keys after it wait for that one too instead of closing it before it is built."""
    app = make_app(lang="en", lesson="params", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        raw_keys(app, "w", "escape", "w", "escape")
        await settled(pilot)
        assert [type(s) for s in app.screen_stack] == [LessonScreen] and app._exception is None
        await pilot.press("n")
        assert app.tour.step_index == 1


# --- the exit status and the crash report, as the command line runs the app ------------------------

def headless(monkeypatch, script) -> None:
    """Make XfTourApp.run(), as the command line calls it, run without a terminal, driven by `script`."""
    from functools import partial

    from tui.app import XfTourApp
    run = XfTourApp.run
    monkeypatch.setattr(XfTourApp, "run", lambda self: run(self, headless=True, size=(80, 24),
                                                            auto_pilot=partial(script, self)))


def tour_command(monkeypatch, state, *argv) -> int:
    """`xf-tour ARGV` in this process, as from a terminal, with its state in `state`."""
    import sys

    from tui.cli import main
    monkeypatch.setenv("XF_TOUR_STATE_DIR", str(state))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    return main(list(argv))


def test_a_normal_quit_exits_0(state, monkeypatch, capsys):
    async def script(app, pilot):
        await pilot.press("n", "q")
    headless(monkeypatch, script)
    assert tour_command(monkeypatch, state, "--lang", "en", "--lesson", "params") == 0
    assert capsys.readouterr().err == "" and not list(state.glob("crash-*"))
    assert json.loads((state / "progress.json").read_text())["step"] == 1


@pytest.mark.parametrize("debug", ["", "1"])
def test_a_crash_exits_1_and_says_in_one_line_where_the_report_is(state, monkeypatch, capsys, debug):
    def broken(self):
        raise RuntimeError("injected \x1b]0;pwned\x07 failure")  # control characters must not reach stderr

    async def script(app, pilot):
        await pilot.press("n")
    monkeypatch.setattr(LessonScreen, "action_next", broken)
    monkeypatch.setenv("XF_TOUR_DEBUG", debug)
    headless(monkeypatch, script)
    assert tour_command(monkeypatch, state, "--lang", "en") == 1
    err = capsys.readouterr().err
    [report] = state.glob("crash-*.txt")
    line = err.splitlines()[-1]
    assert line.startswith("xf-tour: the tour stopped on an internal error: RuntimeError: injected ")
    assert line.endswith(f"The full report is in {report}") and "\x1b" not in line and "\x07" not in line
    assert (len(err.splitlines()) == 1) != bool(debug)  # XF_TOUR_DEBUG=1: Textual's traceback as well, raw
    text = report.read_text()
    assert "Traceback (most recent call last)" in text and "in broken" in text and "RuntimeError" in text
    assert "\x1b" not in text


def test_the_crash_line_speaks_chinese(state, monkeypatch, capsys):
    monkeypatch.setattr(LessonScreen, "action_next", lambda self: 1 / 0)

    async def script(app, pilot):
        await pilot.press("n")
    headless(monkeypatch, script)
    assert tour_command(monkeypatch, state, "--lang", "zh") == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("xf-tour：导览因内部错误而停止：ZeroDivisionError") and "完整报告在" in line


def test_crash_reports_go_to_the_state_folder_or_else_a_temporary_file(tmp_path, monkeypatch):
    import tempfile

    from tui.app import write_crash_report
    try:
        raise ValueError("boom")
    except ValueError as err:
        error = err
    first, second = write_crash_report(error, tmp_path / "state"), write_crash_report(error, tmp_path / "state")
    assert first.parent == tmp_path / "state" and first.name.startswith("crash-") and first != second
    assert "ValueError: boom" in first.read_text() and "ValueError: boom" in second.read_text()
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the state folder should be")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    fallback = write_crash_report(error, blocker / "state")
    assert fallback.parent == tmp_path and fallback.name.startswith("xf-tour-crash-")
    assert "ValueError: boom" in fallback.read_text()
    monkeypatch.setattr(tempfile, "tempdir", str(blocker))  # not a folder either: no report, and no error
    assert write_crash_report(error, blocker / "state") is None


def test_ctrl_c_as_a_signal_while_the_app_closes_is_ignored(state, monkeypatch, capsys):
    """Ctrl+C reaches the app as SIGINT only while the terminal is not raw: as it starts, and as it closes.
    asyncio's handler then cancelled the shutdown half-way: a CancelledError traceback, and no clean exit."""
    import os
    import signal

    async def script(app, pilot):
        await pilot.press("w")  # as reported: the workbench was closing
        await until(pilot, lambda: app._held_keys is None)
        app.set_timer(60, lambda: None)  # a timer left at exit: stopping it is where the shutdown was cut
        stop = app.animator.stop

        async def interrupted():  # the first step of the shutdown: the signal lands here
            os.kill(os.getpid(), signal.SIGINT)
            await stop()
        app.animator.stop = interrupted
        await pilot.press("escape", "ctrl+c")
    headless(monkeypatch, script)
    assert tour_command(monkeypatch, state, "--lang", "en", "--lesson", "params") == 0
    assert capsys.readouterr().err == ""


def test_ctrl_c_as_a_signal_while_the_tour_runs_quits_saving(state, monkeypatch):
    import os
    import signal

    async def script(app, pilot):
        await pilot.press("n")
        app.tour.next()  # moved, not yet saved: the signal must save it
        os.kill(os.getpid(), signal.SIGINT)
    headless(monkeypatch, script)
    assert tour_command(monkeypatch, state, "--lang", "en", "--lesson", "params") == 0
    assert json.loads((state / "progress.json").read_text())["step"] == 2


# --- what a start loads before the first frame --------------------------------------------------------

def run_python(code: str, env: dict) -> str:
    """Run `code` in a fresh interpreter at the repository root; its stdout."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"} | env
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                         cwd=Path(__file__).resolve().parent.parent)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_a_start_after_the_first_lays_out_its_step_without_numpy(tmp_path):
    """A start as the command line makes it. The first parses every lesson file and computes its step, which it
    keeps; the next reads no TOML (the lessons parsed are recalled) and lays out its whole first page without
    importing numpy or any topic of views (the step's results are recalled), as its first frame does."""
    code = ("import sys\nfrom types import SimpleNamespace\nfrom lessons.cache import RESULTS_NAME, Results\n"
            "from tui import page\nfrom tui.app import make_app\nfrom tui.cli.lessons import lessons_for\n"
            "app = make_app(lang='en', lesson='positional', lessons=lessons_for(SimpleNamespace(), deep=False))\n"
            "app.recall(Results(app.store.folder / RESULTS_NAME))\n"
            "page.build(app.tour, 80, lit=app.tour.takes)\n"
            "print('numpy' in sys.modules, *sorted(m for m in sys.modules if m.startswith('engine.views.')\n"
            "                                      or m == 'tomllib'))\n"
            "app.tour.confirm()\napp.keep_results()\n")
    env = {"XF_TOUR_STATE_DIR": str(tmp_path), "LANG": "C.UTF-8"}
    first = run_python(code, env).split()
    assert first[0] == "True" and "tomllib" in first and "engine.views.positions" in first
    assert run_python(code, env).split() == ["False", "engine.views.core"]


@pytest.mark.parametrize("given, used", [(None, "1"), ("2", "2")])
def test_the_tour_asks_numpy_for_one_blas_thread_unless_told_otherwise(tmp_path, given, used):
    """The views' products are small: a second BLAS thread, started with numpy, only spins, and on a busy
    machine slows the start. The tour sets OPENBLAS_NUM_THREADS=1 before numpy loads, as print and train do,
    and keeps a value the user gave. (Without a terminal the tour then refuses to start: exit status 2.)"""
    code = ("import os\nfrom tui.cli import main\nstatus = main(['--lesson', 'positional'])\n"
            "print(status, os.environ.get('OPENBLAS_NUM_THREADS'))")
    env = {"XF_TOUR_STATE_DIR": str(tmp_path), "LANG": "C.UTF-8"} | ({} if given is None else
                                                                     {"OPENBLAS_NUM_THREADS": given})
    assert run_python(code, env).split() == ["2", used]


def shown(app) -> list:
    """What the lesson screen's parts show: each part's text and styles."""
    screen = app.lesson_screen()
    return [(part.plain, part.spans) for part in (screen.query_one(f"#{w}").content
                                                  for w in ("title", "page", "message", "keys"))]


def test_a_start_draws_its_first_frame_from_what_the_last_start_kept(state, monkeypatch):
    """The command line keeps what the step it quits at computed; the next start opening there draws its first
    frame from that, before numpy loads, and shows the same screen."""
    from tui.tour_state import Tour
    recalled, screens, recall = [], [], Tour.recall
    monkeypatch.setattr(Tour, "recall", lambda self, results: recalled.append(recall(self, results)) or recalled[-1])

    async def script(app, pilot):
        await pilot.pause()
        screens.append(shown(app))
        await pilot.press("n", "q")  # quits at step 2: kept for the start after
    headless(monkeypatch, script)
    for _ in range(2):
        assert tour_command(monkeypatch, state, "--lang", "en", "--lesson", "attention") == 0
    assert tour_command(monkeypatch, state, "--lang", "en") == 0  # resumes at step 2
    assert recalled == [False, True, True] and screens[0] == screens[1]


async def test_a_kept_result_the_engine_does_not_give_is_replaced_after_the_first_frame(state, monkeypatch):
    from lessons.cache import RESULTS_NAME, Results
    from tui.app import XfTourApp

    def start():
        app = make_app(lang="en", lesson="positional", state_dir=state)
        app.recall(Results(state / RESULTS_NAME))
        return app

    app = start()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        computed = shown(app)
    kept = state / RESULTS_NAME
    assert "0.8414709848078965" in kept.read_text()  # sin 1, shown as +0.841
    kept.write_text(kept.read_text().replace("0.8414709848078965", "0.25"))
    first, confirm = [], XfTourApp._confirm_results
    monkeypatch.setattr(XfTourApp, "_confirm_results", lambda self: first.append(shown(self)) or confirm(self))
    app = start()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "+0.250" in first[0][1][0] and "+0.841" not in first[0][1][0]  # drawn from the kept copy
        assert shown(app) == computed and not app.tour.recalled  # then computed, and drawn again
    assert "0.8414709848078965" in kept.read_text()  # and kept right


def test_a_broken_or_stale_results_file_is_ignored_and_written_anew(tmp_path):
    from engine.views import get_view
    from lessons.cache import RESULTS_NAME, Results

    path, settings = tmp_path / RESULTS_NAME, {"n": 4}
    result = get_view("positional").run(settings)
    for text in ('{"stamp": "another code", "entries": {}', '{"stamp": "another code", "entries": {}}'):
        path.write_text(text)
        results = Results(path)
        assert results.recall("positional", settings) is None
        results.keep("positional", settings, result)
        assert results.save() and Results(path).recall("positional", settings)[0] == result


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("lesson", ["positional", "kvcache", "misconceptions"])
async def test_the_all_tables_window_never_wraps_a_row_at_80_columns(state, lesson, lang):
    """t shows every table of the view, the numbers a chart or a short step leaves out: at 80x24 each table
    row stays one line (a table wider than the window scrolls sideways instead of wrapping)."""
    from rich.cells import cell_len
    from textual.widgets import Static

    app = make_app(lang=lang, lesson=lesson, state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("t")
        await pilot.pause()
        box = app.screen.query_one("#tables-box")
        tables = list(box.query(Static))[1]
        widest = max(cell_len(line) for line in tables.render().plain.split("\n"))
        assert tables.size.width >= widest, (tables.size.width, widest)
        assert tables.size.height == len(tables.render().plain.split("\n"))  # no line wrapped


# --- a slow view computed in a thread, and the learner moving on meanwhile ---------------------------

async def test_a_slow_view_done_after_its_step_was_left_is_dropped_and_the_tour_runs_on(state, monkeypatch):
    """n from the rmsnorm recap opens the first tokens step, whose BPE view computes in a thread; p at once goes
    back to the recap. The thread is held until then (no sleeps): it must compute the step it started for,
    not read the tour that has moved on (the recap has no step: AttributeError, and the tour crashed), and
    its result must not be drawn on the recap. The step computed is remembered: n shows it at once."""
    import threading

    from tui import tour_state

    gate, real = threading.Event(), tour_state.run_view

    def held(view_id, settings):  # the slow view waits for the test; a view on the UI thread never does
        if threading.current_thread() is not threading.main_thread():
            assert gate.wait(30)
        return real(view_id, settings)

    def tour(self):  # a thread reading the tour does it only after the learner has moved on
        if threading.current_thread() is not threading.main_thread():
            assert gate.wait(30)
        return self.app.tour

    monkeypatch.setattr(tour_state, "_CACHE", {})  # the BPE view not computed yet in this process
    monkeypatch.setattr(tour_state, "run_view", held)
    monkeypatch.setattr(LessonScreen, "tour", property(tour))
    app = make_app(lang="en", lesson="rmsnorm", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        app.open_lesson("rmsnorm", app.tour.pages() - 1)
        await pilot.pause()
        screen, recap = app.lesson_screen(), shown(app)
        raw_keys(app, "n", "p")
        await until(pilot, lambda: app.tour.lesson.id == "rmsnorm" and app.tour.on_recap() and screen._computing)
        gate.set()
        await until(pilot, lambda: not screen._computing or app._exception is not None)
        await pilot.pause()
        assert app._exception is None and app.tour.on_recap() and shown(app) == recap
        await pilot.press("n")
        assert app.tour.lesson.id == "tokens" and not app.tour.pending() and not screen._computing
        assert "The tokens after" in app.lesson_screen().query_one("#page").content.plain


def test_a_crash_in_a_worker_is_reported_with_the_workers_own_traceback(tmp_path):
    """Textual hands a worker's error to the app wrapped in a WorkerFailed that was never raised: its own
    traceback is one line. The report holds the error inside it, with the lines where it happened."""
    from textual.worker import WorkerFailed

    from tui.app import write_crash_report

    def deep_in_the_worker():
        return None.view

    try:
        deep_in_the_worker()
    except AttributeError as err:
        report = write_crash_report(WorkerFailed(err), tmp_path)
    text = report.read_text()
    assert "WorkerFailed" in text and "in deep_in_the_worker" in text and "return None.view" in text
    assert text.count("AttributeError: 'NoneType' object has no attribute 'view'") == 1


def test_crash_reports_are_private_never_follow_a_link_and_only_the_newest_20_stay(tmp_path):
    import os
    import stat
    import time

    from tui.app import write_crash_report

    folder, victim = tmp_path / "state", tmp_path / "victim.txt"
    folder.mkdir()
    victim.write_text("not the tour's")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (folder / f"crash-{stamp}.txt").symlink_to(victim)  # the name the report would take now
    (folder / "crash-19990101-000000-x.txt").symlink_to(victim)  # a link is never pruned through
    for i in range(25):
        old = folder / f"crash-20000101-0000{i:02d}.txt"
        old.write_text(f"old {i}")
        os.utime(old, (946684800 + i, 946684800 + i))
    os.umask(old_mask := os.umask(0))  # the report is private whatever the umask
    try:
        report = write_crash_report(ValueError("boom"), folder)
    finally:
        os.umask(old_mask)
    assert report.parent == folder and report.name != f"crash-{stamp}.txt" and not report.is_symlink()
    assert stat.S_IMODE(report.stat().st_mode) == 0o600 and "ValueError: boom" in report.read_text()
    assert victim.read_text() == "not the tour's"
    kept = sorted(p.name for p in folder.glob("crash-*.txt") if not p.is_symlink())
    assert len(kept) == 20 and report.name in kept
    assert kept[:19] == [f"crash-20000101-0000{i:02d}.txt" for i in range(6, 25)]  # the oldest six went
    assert (folder / f"crash-{stamp}.txt").is_symlink() and (folder / "crash-19990101-000000-x.txt").is_symlink()
