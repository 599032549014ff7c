"""How `xf-tour serve` sessions end: after a flood and a disconnect, on SIGTERM to the server, on SIGKILL to it.

Each part starts `python -m tui serve` on a free loopback port (state in a temporary folder) and opens sessions
as textual-serve's page does (a websocket to /ws, a resize message), waiting for each first frame:
  flood    one session sends one text frame ["stdin", "n" * 3 MiB] and disconnects; it reports the seconds
           until the session's tour process is gone (or that it was not by --wait), and its peak resident size
  sigterm  three sessions; SIGTERM to the server: the seconds until the server has exited and until its tours
           are gone
  sigkill  three sessions; SIGKILL to the server: how many of its tours are still alive --wait s later (then
           they are killed)

Run from the repo root:  .venv/bin/python bench/serve_ends.py [--root DIR] [--wait 10] [--json]
(--root runs another checkout's tui, such as an older commit's, with this venv.) Needs the serve extra.
"""

import argparse
import asyncio
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.flood import status_kib  # noqa: E402  (after the path is set)
from bench.serve_load import children, free_port  # noqa: E402


def tours(server: int) -> list[int]:
    """The server's child processes that run a session (python -m tui.cli.serve)."""
    found = []
    for pid in children(server):
        try:
            if b"tui.cli.serve" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:  # it ended meanwhile
            pass
    return found


def running(pid: int) -> bool:
    """Whether process `pid` exists and has not ended (a zombie has ended: PID 1 in a container may not reap)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def gone_within(pids, seconds: float) -> float | None:
    """The seconds until every process in `pids` has ended, or None if one has not within `seconds`."""
    start, fds = time.monotonic(), []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
        except ProcessLookupError:
            pass
    try:
        while fds:
            ready = select.select(fds, [], [], max(0.0, start + seconds - time.monotonic()))[0]
            if not ready:
                return None
            for fd in ready:
                fds.remove(fd)
                os.close(fd)
        return time.monotonic() - start
    finally:
        for fd in fds:
            os.close(fd)


class Serving:
    """`python -m tui serve` from `root` on a free port, its state in a temporary folder."""

    def __init__(self, root: Path):
        self.port, self.state = free_port(), tempfile.TemporaryDirectory()
        env = {**os.environ, "XF_TOUR_STATE_DIR": self.state.name, "TEXTUAL_ANIMATIONS": "none", "LANG": "C.UTF-8"}
        self.proc = subprocess.Popen([sys.executable, "-m", "tui", "serve", "--port", str(self.port), "--lang", "en"],
                                     cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert self.proc.stdout.readline().startswith(b"xf-tour serve: http://")
        self.client = None

    async def open(self, n: int):
        """n sessions, each up to its first frame (its first output); their websockets."""
        self.client = aiohttp.ClientSession()
        sockets = []
        for _ in range(n):
            ws = await self.client.ws_connect(f"http://127.0.0.1:{self.port}/ws?width=80&height=24",
                                              max_msg_size=0)
            await ws.send_json(["resize", {"width": 80, "height": 24}])
            received = 0
            while received < 2000:
                message = await ws.receive(timeout=60)
                assert message.type == aiohttp.WSMsgType.BINARY, message
                received += len(message.data)
            sockets.append(ws)
        return sockets

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()
        for pid in tours(self.proc.pid):
            os.kill(pid, signal.SIGKILL)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.state.cleanup()


async def flood(root: Path, wait: float) -> dict:
    serving = Serving(root)
    try:
        (ws,) = await serving.open(1)
        (tour,) = tours(serving.proc.pid)
        await ws.send_str(json.dumps(["stdin", "n" * (3 << 20)]))
        await ws.close()
        closed = time.monotonic()
        peak = 0.0
        while time.monotonic() - closed < wait and running(tour):
            peak = max(peak, status_kib(tour, "VmHWM") / 1024)
            await asyncio.sleep(0.01)
        ended = None if running(tour) else time.monotonic() - closed
        return {"session_end_s": None if ended is None else round(ended, 2), "tour_peak_mib": round(peak, 1)}
    finally:
        await serving.close()


async def stop(root: Path, number: int, wait: float) -> dict:
    serving = Serving(root)
    try:
        sockets = await serving.open(3)  # kept open, as a browser keeps its tabs', until the end
        kids = tours(serving.proc.pid)
        start = time.monotonic()
        serving.proc.send_signal(number)
        server_s = await asyncio.to_thread(gone_within, [serving.proc.pid], wait)
        tours_s = await asyncio.to_thread(gone_within, kids, max(0.0, wait - (time.monotonic() - start)))
        alive = [pid for pid in kids if running(pid)]
        for ws in sockets:
            await ws.close()
        return {"sessions": len(kids), "server_exit_s": None if server_s is None else round(server_s, 2),
                "tours_gone_s": None if tours_s is None else round(time.monotonic() - start, 2),
                "tours_alive_after_wait": len(alive)}
    finally:
        await serving.close()


async def main_async(root: Path, wait: float) -> dict:
    return {"flood": await flood(root, wait), "sigterm": await stop(root, signal.SIGTERM, wait),
            "sigkill": await stop(root, signal.SIGKILL, wait)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose tui runs (default: this one)")
    parser.add_argument("--wait", type=float, default=10.0, help="seconds to wait for each ending")
    parser.add_argument("--json", action="store_true")
    a = parser.parse_args()
    r = asyncio.run(main_async(a.root.resolve(), a.wait))
    if a.json:
        print(json.dumps(r, indent=2))
        return
    f, term, kill = r["flood"], r["sigterm"], r["sigkill"]
    end = f"{f['session_end_s']} s" if f["session_end_s"] is not None else f"not within {a.wait:.0f} s"
    print(f"flood of 3 MiB, then disconnect: the session ended {end}; its tour peaked at {f['tour_peak_mib']} MiB")
    print(f"SIGTERM with {term['sessions']} sessions: server exited in {term['server_exit_s']} s, tours gone in "
          f"{term['tours_gone_s']} s; alive after {a.wait:.0f} s: {term['tours_alive_after_wait']}")
    print(f"SIGKILL with {kill['sessions']} sessions: tours gone in {kill['tours_gone_s']} s; alive after "
          f"{a.wait:.0f} s: {kill['tours_alive_after_wait']}")


if __name__ == "__main__":
    main()
