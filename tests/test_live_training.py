"""The heads lesson's live training runs in a child process: it reports, stops when asked, and never outlives the
app."""

import os
import signal
import subprocess
import sys
import time

import pytest
from helpers.pilot import at_trained_heads

from engine import tiny
from engine.records import replace
from tui.app import make_app
from tui.training import LiveRun

ENDLESS = replace(tiny.CONFIGS["small"], steps=100_000)


def _gone(pid: int, within: float = 10.0) -> bool:
    """Whether process `pid` has ended (and been reaped, or is not our child) within `within` seconds."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            if os.waitpid(pid, os.WNOHANG) != (0, 0):
                return True
        except ChildProcessError:  # not our child: it is alive, as kill(0) said
            pass
        time.sleep(0.05)
    return False


def test_a_run_reports_then_stops_when_asked():
    run = LiveRun(ENDLESS, seed=0)
    try:
        readings = run.readings()
        first = next(readings)
        assert first["step"] >= 1 and first["left"] > 0 and len(first["layers"]) == ENDLESS.n_layer
        run.stop()
        last = list(readings)[-1]
        assert last["end"] == "stopped" and last["step"] < ENDLESS.steps
        assert run.proc.wait(10) == 0
    finally:
        run.kill()


@pytest.mark.slow
def test_a_run_ends_when_its_parent_is_killed():
    """No orphan even when the app is killed and cannot clean up: the child sees its stdin close."""
    code = ("import sys, time; from engine import tiny; from engine.records import replace; "
            "from tui.training import LiveRun;"
            "run = LiveRun(replace(tiny.CONFIGS['small'], steps=100_000)); print(run.proc.pid, flush=True);"
            "next(run.readings()); print('running', flush=True); time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        child = int(parent.stdout.readline())
        assert parent.stdout.readline().strip() == "running"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        assert _gone(child), "the training child outlived its killed parent"
    finally:
        parent.kill()
        parent.wait()


@pytest.mark.slow
async def test_stopping_and_quitting_the_app_leave_no_child(state, monkeypatch):
    monkeypatch.setitem(tiny.CONFIGS, "big", ENDLESS)
    pids = []
    app = make_app(lang="en", lesson="heads", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        screen, here = await at_trained_heads(app, pilot)
        screen.action_experiment("4")  # start
        pids.append(app.training.state["run"].proc.pid)
        await pilot.pause(1.0)
        screen.action_experiment("4")  # stop
        await app.workers.wait_for_complete()
        assert not app.training.running and _gone(pids[0])
        await pilot.press("4")  # close the panel
        screen.action_experiment("4")  # start again, then quit while it runs
        pids.append(app.training.state["run"].proc.pid)
        await pilot.pause(0.5)
        assert app.training.running
        await pilot.press("q")
    assert _gone(pids[1], within=5.0), "the training child outlived the app"
