"""`xf-tour serve` in a subprocess on a free loopback port, and a browser session over its websocket, spoken
as textual-serve's textual.js speaks it. Needs the serve extra (CI installs .[test,serve])."""

import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager

import aiohttp

from .procs import children, command_line

ESCAPE = re.compile(rb"\x1b(\[[0-9;?$]*[ -/]*[@-~]|\][^\x07]*\x07|[()][0-9A-B])")  # CSI, OSC and charset codes
START = 60  # seconds for a server to start, or a session to show its first frame, on a loaded CI machine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def first_lesson():
    from lessons.loader import SHIPPED, load_lessons

    lessons, _ = load_lessons(SHIPPED)
    return min(lessons, key=lambda x: x.order)


def read_line(stream, deadline: float) -> str:
    """One line from a subprocess pipe, or AssertionError when none comes by `deadline` (time.monotonic)."""
    with selectors.DefaultSelector() as sel:
        sel.register(stream, selectors.EVENT_READ)
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            assert left > 0 and sel.select(left), f"no line by the deadline; so far {line!r}"
            chunk = os.read(stream.fileno(), 1)
            assert chunk, f"the stream ended; so far {line!r}"
            line += chunk
        return line.decode()


@contextmanager
def serving(tmp_path, *flags):
    """`xf-tour serve --port P FLAGS` running until the block ends; yields (process, port, stderr lines seen
    before the start line)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES", "LANG")}
    env.update({"LANG": "C.UTF-8", "XF_TOUR_STATE_DIR": str(tmp_path / "state"), "TEXTUAL_ANIMATIONS": "none",
                "PYTHONIOENCODING": "utf-8"})
    proc = subprocess.Popen([sys.executable, "-m", "tui", "serve", "--port", str(port), *flags], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = read_line(proc.stdout, time.monotonic() + START)
        assert line.startswith("xf-tour serve: http://") and f":{port}/" in line, line
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()


async def first_frame(port: int, words: str, size=(100, 30)):
    """Open a session as textual.js does (websocket with the size in the query, then a resize message) and read
    its output until `words` appear in the text; the open websocket, its client session, and the text."""
    client = aiohttp.ClientSession()
    width, height = size
    ws = await client.ws_connect(f"http://127.0.0.1:{port}/ws?width={width}&height={height}")
    await ws.send_json(["resize", {"width": width, "height": height}])
    received, deadline = b"", time.monotonic() + START
    while words not in ESCAPE.sub(b"", received).decode("utf-8", "replace"):
        left = deadline - time.monotonic()
        assert left > 0, f"no {words!r} by the deadline; got {ESCAPE.sub(b'', received)[-600:]!r}"
        message = await ws.receive(timeout=left)
        assert message.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), message
        if message.type == aiohttp.WSMsgType.BINARY:
            received += message.data
    return client, ws, ESCAPE.sub(b"", received).decode("utf-8", "replace")


def session_of(server: int) -> int:
    """The one tour child process of the server."""
    kids = [pid for pid in children(server) if "tui.cli.serve" in command_line(pid)]
    assert len(kids) == 1, [command_line(pid) for pid in children(server)]
    return kids[0]
