"""What the terminal benchmarks share: tmux sessions at a fixed size, their screens, and script(1) logs."""

import os
import subprocess
import sys
import time

PY = sys.executable
TARGETS = {"first_frame_ratio": 1.10, "key_ratio": 1.25, "key_bytes": 6 * 1024, "peak_mib": 90.0,
           "lessons_dir_ratio": 1.2}


def tmux(*args):
    return subprocess.run(["tmux", *args], capture_output=True, text=True)


def new_session(name, command, tries=5):
    """A detached tmux session at 80x24 running command. When the last session ends, the tmux server exits,
    and a session started at that moment can fail with the dying server: it is started again."""
    for _ in range(tries):
        out = tmux("new-session", "-d", "-s", name, "-x", "80", "-y", "24", command)
        if out.returncode == 0:
            return
        time.sleep(0.2)
    raise RuntimeError(f"tmux new-session failed {tries} times: {out.stderr.strip()}")


def screen(name):
    return tmux("capture-pane", "-p", "-t", name).stdout


def wait_for(name, rx, timeout=20.0):
    """Poll the pane until rx matches; the time it was first seen, or None."""
    end = time.perf_counter() + timeout
    while time.perf_counter() < end:
        if rx.search(screen(name)):
            return time.perf_counter()
        time.sleep(0.002)
    return None


def wait_quiet(path, quiet=0.2, timeout=5.0):
    """Wait until the log stops growing: its size then, and when it last grew (perf_counter)."""
    end, size, since = time.perf_counter() + timeout, -1, time.perf_counter()
    while time.perf_counter() < end:
        now = os.path.getsize(path)
        if now != size:
            size, since = now, time.perf_counter()
        elif time.perf_counter() - since >= quiet:
            break
        time.sleep(0.005)
    return size, since


def wait_idle(path, quiet=0.2, timeout=5.0):
    """Wait until the log stops growing; its size then."""
    return wait_quiet(path, quiet, timeout)[0]
