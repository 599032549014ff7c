"""Hang-ups: the tour on a real pty, the way sshd runs it, and the pty's other end closed (the SSH link
dropped), or SIGHUP or SIGTERM sent to it. It saves the place and is gone within a second (tui/app.py:
XfTourApp.hang_up; tui/hangup.py), with 128 + the signal's number as its exit status, as a shell gives.

The harness here (Terminal) is used by tests/test_slow_link.py too."""

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from contextlib import contextmanager

import pytest
from conftest import ROOT

from tui.hangup import hung_up
from tui.state import Store

EXIT_S = 1.0  # the bound: after a hang-up, the process is gone within a second
START_S = 10.0  # the first frame, on a busy machine
# what a terminal does not print: CSI (colours, cursor moves, modes), OSC (titles), two-byte escapes
ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]")
CONTROLLING_TERMINAL = ("import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
                        "os.execv(sys.argv[1], sys.argv[1:])")
FIRST, SECOND = "What I seek, what I offer", "From scores to weights"  # the attention lesson's steps 1 and 2


class Terminal:
    """`python -m tui ARGS` on a pty of its own, 80 x 24, as sshd runs it: in a session of its own whose
    controlling terminal the pty is (ctty=False: the pty is only its stdin, stdout and stderr, so closing the
    other end sends no SIGHUP). A thread drains what it writes, so it never blocks on a full pty."""

    def __init__(self, args, env, ctty=True, rows=24, cols=80):
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        drop = ("LC_", "SSH_", "TEXTUAL_", "XF_TOUR_")
        environ = {k: v for k, v in os.environ.items() if not k.startswith(drop) and k not in
                   ("LANG", "TERM", "COLORTERM", "NO_COLOR", "ESCDELAY", "COLUMNS", "LINES")}
        environ.update({"LANG": "C.UTF-8", "TERM": "xterm-256color", "TEXTUAL_ANIMATIONS": "none", **env})

        command = [sys.executable, "-m", "tui", *args]
        if ctty:  # in the new session, make the pty its terminal, then become the tour (the same process)
            command = [sys.executable, "-c", CONTROLLING_TERMINAL, *command]
        self.proc = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, env=environ,
                                     start_new_session=True)
        os.close(slave)
        self.written = bytearray()
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        # select with a timeout, never a blocking read: a read in progress would keep the master open
        # after os.close(), and then closing it would not hang the terminal up
        while not self._stop.is_set():
            if not select.select([self.master], [], [], 0.02)[0]:
                continue
            try:
                data = os.read(self.master, 1 << 16)
            except OSError:  # EIO: the child closed its end
                return
            if not data:
                return
            with self._lock:
                self.written += data

    def mark(self) -> int:
        """Where the output is now: text(mark) is what came after."""
        with self._lock:
            return len(self.written)

    def raw(self, since: int = 0) -> bytes:
        with self._lock:
            return bytes(self.written[since:])

    def text(self, since: int = 0) -> str:
        """What was printed since `since`, escapes taken out."""
        return ESCAPES.sub(b"", self.raw(since)).decode("utf-8", "replace")

    def wait_for(self, needle: str, since: int = 0, timeout: float = 5.0) -> float:
        """Wait until `needle` has been printed since `since`; the seconds it took."""
        start = time.monotonic()
        while needle not in self.text(since):
            if self.proc.poll() is not None:
                raise AssertionError(f"the tour ended ({self.proc.returncode}) before {needle!r}: "
                                     f"{self.text(since)[-1500:]!r}")
            if time.monotonic() - start > timeout:
                raise AssertionError(f"{needle!r} not printed in {timeout} s: {self.text(since)[-1500:]!r}")
            time.sleep(0.005)
        return time.monotonic() - start

    def press(self, data: bytes) -> None:
        os.write(self.master, data)

    def drained(self, timeout: float = 5.0) -> bytes:
        """Everything written, once the tour has ended and closed its end (the drain thread sees EIO)."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the pty was still open"
        return self.raw()

    def hang_up(self) -> None:
        """Close the pty's other end, as sshd does when the link drops."""
        self._stop.set()
        self._thread.join()
        os.close(self.master)
        self.master = None

    def wait_exit(self, timeout: float):
        """The exit status and the seconds it took, or None and the timeout."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            if self.proc.poll() is not None:
                return self.proc.returncode, time.monotonic() - start
            time.sleep(0.002)
        return None, timeout

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.master is not None:
            self._stop.set()
            self._thread.join()
            os.close(self.master)
            self.master = None


@contextmanager
def terminals(state):
    """start(args, env=..., ctty=...) starts the tour on a pty with `state` as its state folder; every tour
    started is ended and its pty closed on the way out."""
    started = []

    def start(*args, env=None, ctty=True):
        term = Terminal(args, {"XF_TOUR_STATE_DIR": str(state), **(env or {})}, ctty=ctty)
        started.append(term)
        return term

    try:
        yield start
    finally:
        for term in started:
            term.close()


@pytest.fixture
def terminal(tmp_path):
    with terminals(tmp_path / "state") as start:
        yield start


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


def test_closing_the_terminal_saves_and_ends_within_a_second(terminal, tmp_path):
    term = on_second_step(terminal)
    term.hang_up()  # the kernel hangs the pty up: SIGHUP, then SIGCONT, to the tour's session
    status, seconds = term.wait_exit(5 * EXIT_S)
    assert status == 128 + signal.SIGHUP, f"exit status {status} after {seconds:.3f} s"
    assert seconds < EXIT_S
    assert_saved_on_second_step(tmp_path)


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
