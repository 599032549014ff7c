"""A class of 30 on one machine: 30 learners at once through a loopback sshd, each pressing a key every 2 s.

It starts the sshd of bench/sshd.py, as tests/test_ssh.py does (Debian's openssh-server; .ci/run installs it),
gives each learner a key of their own with `xf-tour classroom add learnerNN KEY` (sshd takes the first line whose
key matches, so one shared key would make every session the same learner), and opens all the sessions at once,
half in zh, half in en, each an `ssh -tt` in an 80x24 pty. Then, for --seconds, every learner presses a key every
2 s, the learners' presses spread evenly over the 2 s; the keys walk n n n p p p, a whole new step each time.

It reports:
  key latency   from writing a key into the learner's pty to the first bytes ssh writes back after it
                (p50, p95, max over every press); the screen is quiet before each press
  start         from starting ssh to the first step's title on screen, all learners connecting at once
  memory        per session: RSS and PSS (shared pages split among their users) of its xf-tour process, and
                PSS of its two sshd processes, from /proc
  idle CPU      CPU seconds of all the xf-tour processes over 10 s without keys, / 10 s / learners

Run from the repo root, as root or the user sshd may log in as:  .venv/bin/python bench/classroom_load.py
Options: --learners 30 --seconds 60 --idle 10 --json. It takes about 2 minutes.
"""

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.sshd import Session, Sshd, add_learner, keygen, residual_steps  # noqa: E402  (after the path is set)

KEYS = b"nnnppp"


def pids_of(names):
    """name -> pid of the xf-tour process running --learner name."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            args = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--learner" in args:
            name = args[args.index(b"--learner") + 1].decode()
            if name in names and any(a.endswith(b"xf-tour") for a in args):
                found[name] = int(entry)
    return found


def children(pid):
    """Every process below pid."""
    kids = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            kids.setdefault(parent, []).append(int(entry))
    todo, seen = list(kids.get(pid, [])), []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo.extend(kids.get(p, []))
    return seen


def memory_kib(pid):
    """(RSS, PSS) of a process in KiB."""
    rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
               if line.startswith("VmRSS:"))
    pss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
               if line.startswith("Pss:"))
    return rss, pss


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(p / 100 * len(ordered)) - 1)]


def machine():
    mem = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
               if line.startswith("MemTotal:"))
    return os.cpu_count(), round(mem / 2**20)


def run(n, seconds, idle):
    load_before = os.getloadavg()
    first = residual_steps()[0]["title"]
    with tempfile.TemporaryDirectory(prefix="xf-classroom-") as folder:
        folder = Path(folder)
        sshd = Sshd(folder, folder / "state")
        sessions = []
        try:
            names = [f"learner{i + 1:02d}" for i in range(n)]
            for name in names:
                add_learner(sshd.authorized_keys, name, keygen(folder / name))
            langs = ["zh" if i % 2 == 0 else "en" for i in range(n)]
            started = time.monotonic()
            sessions = [Session(sshd, folder / name, lang="zh_CN.UTF-8" if lang == "zh" else "C.UTF-8")
                        for name, lang in zip(names, langs)]
            start_times = [0.0] * n

            def wait_first(i):
                sessions[i].wait_for(first[langs[i]], timeout=300)
                start_times[i] = time.monotonic() - started

            waiters = [threading.Thread(target=wait_first, args=(i,)) for i in range(n)]
            for w in waiters:
                w.start()
            for w in waiters:
                w.join()
            assert all(start_times), "some sessions never showed their first step"
            time.sleep(2)  # let the last frames finish before the first timed key

            # every learner presses every 2 s; learner i at i/n of the period
            events = sorted((k * 2.0 + 2.0 * i / n, i, KEYS[k % len(KEYS):k % len(KEYS) + 1])
                            for i in range(n) for k in range(int(seconds / 2)))
            t0, missed = time.monotonic(), 0
            for at, i, key in events:
                time.sleep(max(0.0, t0 + at - time.monotonic()))
                if sessions[i].pending is not None:  # the previous key of this learner never got an answer
                    missed += 1
                sessions[i].press(key)
            time.sleep(2)
            missed += sum(s.pending is not None for s in sessions)
            latencies = [x * 1000 for s in sessions for x in s.latencies]

            pids = pids_of(set(names))
            assert len(pids) == n, f"found {len(pids)} of {n} xf-tour processes"
            tour_mem = [memory_kib(p) for p in pids.values()]
            sshd_pss = sum(memory_kib(p)[1] for p in children(sshd.proc.pid) if p not in pids.values())
            before_bytes = [len(s.out) for s in sessions]
            cpu0 = sum(cpu_seconds(p) for p in pids.values())
            time.sleep(idle)
            cpu1 = sum(cpu_seconds(p) for p in pids.values())
            idle_bytes = sum(len(s.out) - b for s, b in zip(sessions, before_bytes))
            for s in sessions:
                s.press(b"q")
            codes = [s.close() for s in sessions]
        finally:
            for s in sessions:
                if s.proc.poll() is None:
                    s.proc.kill()
            sshd.close()
    return {
        "learners": n, "seconds": seconds, "presses": len(events), "answered": len(latencies), "missed": missed,
        "exit_codes_nonzero": sum(c != 0 for c in codes),
        "latency_ms": {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95), "max": max(latencies)},
        "start_s": {"p50": statistics.median(start_times), "max": max(start_times)},
        "tour_rss_mib": statistics.mean(r for r, _ in tour_mem) / 1024,
        "tour_pss_mib": statistics.mean(p for _, p in tour_mem) / 1024,
        "sshd_pss_mib": sshd_pss / n / 1024,
        "idle_cpu_percent": (cpu1 - cpu0) / idle / n * 100, "idle_seconds": idle, "idle_bytes": idle_bytes,
        "load_before": load_before, "load_after": os.getloadavg(), "cores_gib": machine(),
    }


def report(r):
    lat, cores, gib = r["latency_ms"], *r["cores_gib"]
    bound = math.ceil(lat["p95"] / 10) * 10
    print(f"{r['learners']} learners over a loopback sshd, a key every 2 s each for {r['seconds']} s "
          f"({r['presses']} presses, {r['answered']} answered, {r['missed']} unanswered)\n")
    print("| measure | value |")
    print("|---|---:|")
    print(f"| key latency p50 | {lat['p50']:.1f} ms |")
    print(f"| key latency p95 | {lat['p95']:.1f} ms |")
    print(f"| key latency max | {lat['max']:.1f} ms |")
    print(f"| start, all at once: median / slowest | {r['start_s']['p50']:.1f} s / {r['start_s']['max']:.1f} s |")
    print(f"| memory per session: xf-tour RSS | {r['tour_rss_mib']:.0f} MiB |")
    print(f"| memory per session: xf-tour PSS | {r['tour_pss_mib']:.0f} MiB |")
    print(f"| memory per session: sshd PSS | {r['sshd_pss_mib']:.1f} MiB |")
    print(f"| idle CPU per session ({r['idle_seconds']} s, {r['idle_bytes']} bytes written) "
          f"| {r['idle_cpu_percent']:.2f} % of a core |")
    print(f"\nload average before {r['load_before'][0]:.2f}, after {r['load_after'][0]:.2f} (1 min)")
    print(f"\none {cores}-core, {gib} GiB machine holds {r['learners']} learners at p95 under {bound} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=30)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--idle", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    a = parser.parse_args()
    result = run(a.learners, a.seconds, a.idle)
    print(json.dumps(result, indent=2)) if a.json else report(result)


if __name__ == "__main__":
    main()
