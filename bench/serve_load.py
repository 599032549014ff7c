"""A class of 30 in the browser: 30 sessions at once through `xf-tour serve`, each pressing a key every 2 s.

It starts `xf-tour serve` on a free loopback port (state in a temporary folder) and opens all the sessions at
once, each as textual-serve's page does: a websocket to /ws?width=80&height=24, a resize message, then keys as
["stdin", KEY] messages. Once every session shows the first lesson's title, for --seconds every session presses
a key every 2 s, the presses spread evenly over the 2 s; the keys walk n n n p p p, a whole new step each time.

It reports:
  key latency   from sending a key on the websocket to the first output bytes the server sends back after it
                (p50, p95, max over every press); the screen is quiet before each press
  start         from opening the websocket to the first step's title, all sessions connecting at once
  memory        per session: RSS and PSS (shared pages split among their users) of its tour process, from /proc;
                and the server's own RSS (it relays every session)
  idle CPU      CPU seconds of all the tour processes over --idle s without keys, / --idle s / sessions;
                and of the server

Run from the repo root:  .venv/bin/python bench/serve_load.py   (options: --sessions 30 --seconds 60 --idle 10
--lang zh --json). It takes about 2 minutes. Needs the serve extra.
"""

import argparse
import asyncio
import json
import math
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
KEYS = "nnnppp"
ESCAPE = re.compile(rb"\x1b(\[[0-9;?$]*[ -/]*[@-~]|\][^\x07]*\x07|[()][0-9A-B])")
TICK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry))
    return kids


def tree(pid: int) -> list[int]:
    """pid and every process below it."""
    found, todo = [], [pid]
    while todo:
        found.append(todo.pop())
        todo += children(found[-1])
    return found


def cpu_seconds(pid: int, below: bool = True) -> float:
    """utime + stime of a process, and of the processes below it unless not `below`, in seconds."""
    total = 0
    for p in tree(pid) if below else [pid]:
        fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / TICK


def memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of a process in KiB, with the processes below it (none: serve execs the tour)."""
    rss = pss = 0
    for p in tree(pid):
        for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss += int(line.split()[1])
            elif line.startswith("Pss:"):
                pss += int(line.split()[1])
    return rss, pss


def percentile(values, q):
    """The q-th percentile, nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


class Learner:
    """One browser session."""

    def __init__(self, index: int, title: str):
        self.index, self.title = index, title
        self.latencies: list[float] = []
        self.start = None

    async def connect(self, client, port: int, deadline: float) -> None:
        began = time.monotonic()
        self.ws = await client.ws_connect(f"http://127.0.0.1:{port}/ws?width=80&height=24", max_msg_size=0)
        await self.ws.send_json(["resize", {"width": 80, "height": 24}])
        seen = b""
        while self.title not in ESCAPE.sub(b"", seen).decode("utf-8", "replace"):
            message = await self.ws.receive(timeout=max(0.1, deadline - time.monotonic()))
            if message.type == aiohttp.WSMsgType.BINARY:
                seen += message.data
            elif message.type != aiohttp.WSMsgType.TEXT:
                raise RuntimeError(f"session {self.index} closed before its first frame: {message}")
        self.start = time.monotonic() - began

    async def drain(self, until: float) -> None:
        """Read and drop output until the monotonic time `until`."""
        while (left := until - time.monotonic()) > 0:
            try:
                await self.ws.receive(timeout=left)
            except asyncio.TimeoutError:
                return

    async def press(self, begin: float, seconds: float, sessions: int) -> None:
        """A key every 2 s from begin + my share of the 2 s, for `seconds`."""
        at, k = begin + 2.0 * self.index / sessions, 0
        while at < begin + seconds:
            await self.drain(at)
            sent = time.monotonic()
            await self.ws.send_json(["stdin", KEYS[k % len(KEYS)]])
            while True:
                message = await self.ws.receive(timeout=10)
                if message.type == aiohttp.WSMsgType.BINARY:
                    self.latencies.append(time.monotonic() - sent)
                    break
                if message.type != aiohttp.WSMsgType.TEXT:
                    raise RuntimeError(f"session {self.index} closed: {message}")
            k, at = k + 1, at + 2.0


async def run(args) -> dict:
    from lessons.loader import SHIPPED, load_lessons

    lessons, _ = load_lessons(SHIPPED)
    first = min(lessons, key=lambda x: x.order)
    title = first.title.zh if args.lang == "zh" else first.title.en
    port = free_port()
    with tempfile.TemporaryDirectory() as state:
        env = dict(os.environ, XF_TOUR_STATE_DIR=state, TEXTUAL_ANIMATIONS="none")
        server = subprocess.Popen([sys.executable, "-m", "tui", "serve", "--port", str(port), "--lang", args.lang],
                                  cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            server.stdout.readline()  # the start line: it listens
            learners = [Learner(i, title) for i in range(args.sessions)]
            timeout = aiohttp.ClientTimeout(total=None)
            async with aiohttp.ClientSession(timeout=timeout) as client:
                deadline = time.monotonic() + 120
                await asyncio.gather(*(x.connect(client, port, deadline) for x in learners))
                tours = children(server.pid)
                assert len(tours) == args.sessions, f"{len(tours)} tour processes for {args.sessions} sessions"
                assert all(b"tui.cli.serve" in Path(f"/proc/{p}/cmdline").read_bytes() for p in tours)
                begin = time.monotonic() + 1.0
                busy0 = sum(cpu_seconds(p) for p in tours), cpu_seconds(server.pid, below=False), time.monotonic()
                await asyncio.gather(*(x.press(begin, args.seconds, args.sessions) for x in learners))
                busy1 = sum(cpu_seconds(p) for p in tours), cpu_seconds(server.pid, below=False), time.monotonic()
                await asyncio.gather(*(x.drain(time.monotonic() + 2.0) for x in learners))  # the last keys' frames
                memory = [memory_kib(p) for p in tours]
                server_rss = int(Path(f"/proc/{server.pid}/status").read_text().split("VmRSS:")[1].split()[0])
                idle0 = sum(cpu_seconds(p) for p in tours), cpu_seconds(server.pid, below=False)
                await asyncio.gather(*(x.drain(time.monotonic() + args.idle) for x in learners))
                idle1 = sum(cpu_seconds(p) for p in tours), cpu_seconds(server.pid, below=False)
                for x in learners:
                    await x.ws.close()
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
    latencies = [t * 1000 for x in learners for t in x.latencies]
    starts = [x.start for x in learners]
    active = busy1[2] - busy0[2]
    return {
        "sessions": args.sessions, "seconds": args.seconds, "lang": args.lang, "presses": len(latencies),
        "key_latency_ms": {"p50": round(percentile(latencies, 50), 1), "p95": round(percentile(latencies, 95), 1),
                           "max": round(max(latencies), 1)},
        "start_s": {"median": round(statistics.median(starts), 2), "max": round(max(starts), 2)},
        "memory_mib_per_session": {"rss": round(statistics.mean(m[0] for m in memory) / 1024, 1),
                                   "pss": round(statistics.mean(m[1] for m in memory) / 1024, 1)},
        "server_rss_mib": round(server_rss / 1024, 1),
        "cpu_busy_per_session": round((busy1[0] - busy0[0]) / active / args.sessions, 4),
        "cpu_busy_server": round((busy1[1] - busy0[1]) / active, 4),
        "cpu_idle_per_session": round((idle1[0] - idle0[0]) / args.idle / args.sessions, 4),
        "cpu_idle_server": round((idle1[1] - idle0[1]) / args.idle, 4),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--idle", type=float, default=10.0)
    parser.add_argument("--lang", choices=("zh", "en"), default="zh")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    load = os.getloadavg()
    result = asyncio.run(run(args))
    result["load_average_before"] = [round(x, 2) for x in load]
    result["cpus"] = os.cpu_count()
    if args.json:
        print(json.dumps(result))
        return 0
    lat, mem = result["key_latency_ms"], result["memory_mib_per_session"]
    print(f"{result['sessions']} browser sessions through xf-tour serve, {result['presses']} key presses "
          f"over {result['seconds']:g} s, {result['cpus']} CPUs, load average before {result['load_average_before']}")
    print(f"key latency   p50 {lat['p50']} ms   p95 {lat['p95']} ms   max {lat['max']} ms")
    print(f"start         median {result['start_s']['median']} s   max {result['start_s']['max']} s")
    print(f"memory        per session RSS {mem['rss']} MiB   PSS {mem['pss']} MiB;   server RSS "
          f"{result['server_rss_mib']} MiB")
    print(f"CPU, keys     per session {result['cpu_busy_per_session']:.4f} s/s;   "
          f"server {result['cpu_busy_server']:.4f} s/s")
    print(f"CPU, idle     per session {result['cpu_idle_per_session']:.4f} s/s;   "
          f"server {result['cpu_idle_server']:.4f} s/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
