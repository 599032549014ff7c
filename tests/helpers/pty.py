"""The tour on a real pty, the way sshd runs it: `python -m tui ARGS` in a session of its own, 80 x 24, a
thread draining what it writes. tests/test_hangup.py hangs it up; the slow-link, flood, typing-line and question
tests press keys into it and read what it prints."""

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import threading
import time
from contextlib import contextmanager

from .cli import ROOT

START_S = 10.0  # the first frame, on a busy machine
EXIT_S = 1.0  # the bound on ending after a hang-up or SIGTERM: the process is gone within a second
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
