"""Hang-ups: the tour on a real pty, the way sshd runs it, and the pty's other end closed (the SSH link
dropped), or SIGHUP or SIGTERM sent to it. It saves the place and is gone within a second (tui/app.py:
XfTourApp.hang_up; tui/hangup.py), with 128 + the signal's number as its exit status, as a shell gives.

The pty (Terminal) is tests/helpers/pty.py's; the `terminal` fixture is tests/conftest.py's."""

import json
import os
import pty
import signal

import pytest
from helpers.marks import WALL_CLOCK
from helpers.pty import EXIT_S, FIRST, SECOND, START_S

from tui.hangup import hung_up
from tui.progress import Store


def on_second_step(terminal, ctty=True):
    """The attention lesson on a pty, moved on one step with n: the step the saved place must name."""
    term = terminal("--lesson", "attention", "--lang", "en", ctty=ctty)
    term.wait_for(FIRST, timeout=START_S)
    mark = term.mark()
    term.press(b"n")
    term.wait_for(SECOND, mark)
    return term


def assert_saved_on_second_step(tmp_path):
    folder = tmp_path / "state"
    data = json.loads((folder / "progress.json").read_text(encoding="utf-8"))
    assert (data["lesson"], data["step"]) == ("attention", 1)
    assert data["visited"]["attention"] == ["qkv", "softmax"]
    store = Store(folder)
    progress = store.load()  # the file reads back whole
    assert store.problem is None and (progress.lesson, progress.step) == ("attention", 1)
    assert not list(folder.glob("crash-*")), "a hang-up is not a crash"
    assert not list(folder.glob(".progress-*")), "no half-written save left behind"


@pytest.mark.slow
@WALL_CLOCK
def test_closing_the_terminal_saves_and_ends_within_a_second(terminal, tmp_path):
    term = on_second_step(terminal)
    term.hang_up()  # the kernel hangs the pty up: SIGHUP, then SIGCONT, to the tour's session
    status, seconds = term.wait_exit(5 * EXIT_S)
    assert status == 128 + signal.SIGHUP, f"exit status {status} after {seconds:.3f} s"
    assert seconds < EXIT_S
    assert_saved_on_second_step(tmp_path)


@pytest.mark.slow
@WALL_CLOCK
def test_a_dead_terminal_without_sighup_ends_it_too(terminal, tmp_path):
    """The pty is not the tour's controlling terminal: closing its other end sends no signal, and reads
    give end-of-file, on which Textual's input thread alone would spin for ever. The tour sees the hang-up
    itself."""
    term = on_second_step(terminal, ctty=False)
    term.hang_up()
    status, seconds = term.wait_exit(5 * EXIT_S)
    assert status == 128 + signal.SIGHUP, f"exit status {status} after {seconds:.3f} s"
    assert seconds < EXIT_S
    assert_saved_on_second_step(tmp_path)


@pytest.mark.parametrize("number", [signal.SIGHUP, signal.SIGTERM])
@pytest.mark.slow
@WALL_CLOCK
def test_a_signal_with_the_terminal_still_there_saves_and_gives_the_terminal_back(terminal, tmp_path, number):
    term = on_second_step(terminal)
    mark = term.mark()
    term.proc.send_signal(number)
    status, seconds = term.wait_exit(5 * EXIT_S)
    assert status == 128 + number, f"exit status {status} after {seconds:.3f} s"
    assert seconds < EXIT_S
    assert_saved_on_second_step(tmp_path)
    after = term.drained()[mark:]
    assert b"\x1b[?1049l" in after, "the terminal's own screen is back (the alternate screen left)"
    assert b"Traceback" not in after and b"Error" not in after


def test_hung_up_tells_a_dead_terminal_from_a_live_one():
    master, slave = pty.openpty()
    try:
        assert not hung_up(slave)
        os.close(master)
        master = None
        assert hung_up(slave)
    finally:
        os.close(slave)
        if master is not None:
            os.close(master)
    read, write = os.pipe()  # not a terminal at all: not a hang-up
    try:
        assert not hung_up(read)
    finally:
        os.close(read)
        os.close(write)
