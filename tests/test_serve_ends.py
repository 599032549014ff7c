"""How `xf-tour serve` sessions end. A session's tour must not outlive its client, its server, or its pipes, and
it ends soon, saving its place: after a flood and a disconnect, on SIGTERM or SIGKILL to the server (three
tabs open), when the server dies, when its stdin ends or its stdout breaks, and on SIGTERM to the tour
itself. The tours here are real: a real server in a subprocess and websocket clients (tests/helpers/serve.py),
or one session's command run directly on pipes, speaking textual-serve's packets."""

import asyncio
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers.cli import ROOT
from helpers.marks import WALL_CLOCK
from helpers.procs import children, command_line, status_kib, wait_gone
from helpers.serve import ESCAPE, START, first_frame, first_lesson, serving

pytestmark = [pytest.mark.slow, WALL_CLOCK]  # real servers and sessions, ended within seconds

ENDED_S = 2.0  # the bound, from the report: a session whose client has gone ends within 2 s; so does a stop
SESSION = [sys.executable, "-m", "tui.cli.serve"]
MIDDLE = ("import os, subprocess, sys; command = [os.getpid() if a == 'PARENT' else a for a in sys.argv[1:]]; "
          "p = subprocess.Popen([str(a) for a in command]); print(p.pid, file=sys.stderr, flush=True); p.wait()")


def tours_of(server: int) -> list[int]:
    return [pid for pid in children(server) if "tui.cli.serve" in command_line(pid)]


async def open_tabs(port: int, n: int):
    """n sessions up to their first frames; their websockets and clients, kept open by the caller (a browser
    keeps its tabs: a websocket no longer referenced is closed by the client, which hides a slow stop)."""
    title = first_lesson().title.en
    return [await first_frame(port, title) for _ in range(n)]


async def close_tabs(tabs) -> None:
    for client, ws, _ in tabs:
        await ws.close()
        await client.close()


async def test_a_flood_then_a_disconnect_ends_the_session_within_2_s(tmp_path):
    """One frame of 3 MiB of n, then the client goes: the tour kept running at 100 % CPU past 4 GB."""
    with serving(tmp_path, "--lang", "en") as (proc, port):
        (tab,) = await open_tabs(port, 1)
        (tour,) = tours_of(proc.pid)
        client, ws, _ = tab
        await ws.send_str(json.dumps(["stdin", "n" * (3 << 20)]))
        await close_tabs([tab])
        gone, peak = time.monotonic(), 0.0
        while time.monotonic() - gone < 10 and not wait_gone(tour, 0.01):
            peak = max(peak, (status_kib(tour, "VmHWM") or 0) / 1024)
        seconds = time.monotonic() - gone
        assert seconds < ENDED_S, f"the session's tour was alive {seconds:.1f} s after its client left"
        assert peak < 120, f"the tour's resident memory peaked at {peak:.0f} MiB"
        reaped = time.monotonic() + ENDED_S  # the server serves on, and has reaped the tour
        while tours_of(proc.pid) and time.monotonic() < reaped:
            time.sleep(0.01)
        assert proc.poll() is None and tours_of(proc.pid) == []
    assert not list((tmp_path / "state").glob("crash-*")), "the tour crashed instead of ending"


async def test_sigterm_ends_the_server_and_three_sessions_within_2_s(tmp_path):
    with serving(tmp_path, "--lang", "en") as (proc, port):
        tabs = await open_tabs(port, 3)
        try:
            tours = tours_of(proc.pid)
            assert len(tours) == 3
            start = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            status = await asyncio.to_thread(proc.wait, 30)
            seconds = time.monotonic() - start
            assert all(wait_gone(pid, 0) for pid in tours), "a session's tour outlived the server"
        finally:
            await close_tabs(tabs)
    assert status == 0 and seconds < ENDED_S, f"serve exited {status} after {seconds:.1f} s"
    assert not list((tmp_path / "state").glob("crash-*"))


async def test_sigkill_of_the_server_ends_its_sessions(tmp_path):
    """The tours were reparented to PID 1 and alive minutes later."""
    with serving(tmp_path, "--lang", "en") as (proc, port):
        tabs = await open_tabs(port, 3)
        try:
            tours = tours_of(proc.pid)
            proc.kill()
            proc.wait()
            start = time.monotonic()
            alive = [pid for pid in tours if not wait_gone(pid, max(0.0, start + ENDED_S - time.monotonic()))]
        finally:
            for pid in tours:
                if not wait_gone(pid, 0):
                    os.kill(pid, signal.SIGKILL)
            await close_tabs(tabs)
    assert alive == [], f"{len(alive)} of 3 tours alive {ENDED_S} s after the server was killed"


class Session:
    """One session's command (`python -m tui.cli.serve ARGS`) on pipes, as textual-serve runs it, but its
    pipes held by this test: keys go in as textual-serve's packets; a thread collects what comes out. With
    `parent`, a Python process in between starts it and is its parent."""

    def __init__(self, state: Path, *args, parent: bool = False):
        env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES", "LANG")}
        env.update({"LANG": "C.UTF-8", "XF_TOUR_STATE_DIR": str(state), "TEXTUAL_ANIMATIONS": "none",
                    "TEXTUAL_DRIVER": "textual.drivers.web_driver:WebDriver", "COLUMNS": "80", "ROWS": "24"})
        command = [*SESSION, *args]
        if parent:  # the middle process starts the session with the pipes it was given, as --server PARENT,
            command = [sys.executable, "-c", MIDDLE, *command]  # says the session's pid, and waits
        self.proc = subprocess.Popen(command, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.pid = int(self.proc.stderr.readline()) if parent else self.proc.pid
        self.out, self._stop = bytearray(), threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        fd = self.proc.stdout.fileno()
        while not self._stop.is_set():  # select with a timeout: a read in progress would keep the pipe open
            if select.select([fd], [], [], 0.02)[0]:
                data = os.read(fd, 1 << 16)
                if not data:
                    return
                self.out += data

    def stop_reading(self) -> None:
        """Close this end of the session's stdout: its next write finds no reader."""
        self._stop.set()
        self._reader.join()
        self.proc.stdout.close()

    def wait_for(self, text: str, timeout: float = START) -> None:
        """Wait until the session has written `text` (escape codes aside)."""
        deadline = time.monotonic() + timeout
        while text.encode() not in ESCAPE.sub(b"", bytes(self.out)):
            assert self.proc.poll() is None, f"the session ended ({self.proc.returncode}) before {text!r}"
            assert time.monotonic() < deadline, f"no {text!r} in {timeout} s"
            time.sleep(0.01)

    def send(self, kind: bytes, payload: bytes) -> None:
        self.proc.stdin.write(kind + len(payload).to_bytes(4, "big") + payload)
        self.proc.stdin.flush()

    def keys(self, text: str) -> None:
        self.send(b"D", text.encode())

    def exit_within(self, seconds: float):
        """The session's exit status and the seconds it took, or None and `seconds`."""
        start = time.monotonic()
        try:
            return self.proc.wait(seconds), time.monotonic() - start
        except subprocess.TimeoutExpired:
            return None, seconds

    def close(self) -> None:
        for pid in {self.pid, self.proc.pid}:
            if not wait_gone(pid, 0):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except BrokenPipeError:
                pass


@pytest.fixture
def session(tmp_path):
    started = []

    def start(*args, parent=False):
        started.append(Session(tmp_path / "state", *args, "--lang", "en", parent=parent))
        started[-1].send(b"M", json.dumps({"type": "resize", "width": 80, "height": 24}).encode())
        started[-1].wait_for("1/")  # the first step's counter
        return started[-1]

    yield start
    for one in started:
        one.close()


def saved_step(tmp_path) -> int:
    return json.loads((tmp_path / "state" / "progress.json").read_text(encoding="utf-8"))["step"]


def test_sigterm_to_a_session_saves_and_exits_143(session, tmp_path):
    """Textual's web driver took SIGTERM for an exit that neither saved nor said it was a signal (status 0)."""
    tour = session()
    tour.keys("n")
    tour.wait_for("2/")
    tour.proc.send_signal(signal.SIGTERM)
    status, seconds = tour.exit_within(5)
    assert status == 128 + signal.SIGTERM and seconds < 1.0, (status, seconds)
    assert saved_step(tmp_path) == 1 and not list((tmp_path / "state").glob("crash-*"))


def test_a_session_whose_stdin_ends_exits(session, tmp_path):
    """The server's end of the pipe closed: the tour lingered."""
    tour = session()
    tour.keys("n")
    tour.wait_for("2/")
    tour.proc.stdin.close()
    status, seconds = tour.exit_within(5)
    assert status == 128 + signal.SIGHUP and seconds < 1.0, (status, seconds)
    assert saved_step(tmp_path) == 1 and not list((tmp_path / "state").glob("crash-*"))


def test_a_session_whose_stdout_breaks_exits_at_its_next_write(session, tmp_path):
    tour = session()
    tour.stop_reading()
    tour.keys("n")  # the next frame is written into a pipe nobody reads
    status, seconds = tour.exit_within(5)
    assert status == 128 + signal.SIGHUP and seconds < 1.0, (status, seconds)
    assert not list((tmp_path / "state").glob("crash-*"))


def test_a_session_dies_with_its_server(session):
    """Killed, the server closes no pipe of a session here (this test holds them): only the kernel's
    parent-death signal can end the session."""
    tour = session("--server", "PARENT", parent=True)
    tour.proc.kill()  # the middle process, the session's parent
    tour.proc.wait()
    assert wait_gone(tour.pid, ENDED_S), "the session outlived its parent"


def test_a_session_whose_server_is_gone_already_does_not_start(session, tmp_path):
    """The server died before the session asked to die with it (its parent is another process by then): no
    signal would come, so it ends at once."""
    run = subprocess.run([*SESSION, "--server", str(os.getppid()), "--lang", "en"], cwd=ROOT, capture_output=True,
                         env={**os.environ, "TEXTUAL_DRIVER": "textual.drivers.web_driver:WebDriver",
                              "XF_TOUR_STATE_DIR": str(tmp_path / "state")}, timeout=60)
    assert run.returncode == 128 + signal.SIGTERM and run.stdout == b"", run
