"""Run a command, then write the peak resident memory of its process tree (MiB) to a file.

The peak is the larger of two readings: the largest sum of the resident sizes (VmRSS) of the command and all
its descendants, read every 20 ms from /proc (training runs in two processes, and the kernel's own figure,
below, is only the largest single one), and the kernel's peak of the largest single descendant
(RUSAGE_CHILDREN), which a short spike between two readings cannot escape. The sum counts pages the
processes share (the libraries loaded before a fork) once per process, so it errs high.

Usage: python bench/maxrss.py OUT_FILE COMMAND...
"""

import resource
import subprocess
import sys
import time
from pathlib import Path


def tree(pid: int) -> list[int]:
    """pid and its descendants, as /proc lists them now (Linux)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:  # it ended meanwhile
            pass
    return out


def resident_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


out, cmd = sys.argv[1], sys.argv[2:]
proc = subprocess.Popen(cmd)
summed = 0
while proc.poll() is None:
    summed = max(summed, sum(resident_kib(p) for p in tree(proc.pid)))
    time.sleep(0.02)
single = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # Linux reports KiB
with open(out, "w") as f:
    f.write(f"{max(summed, single) / 1024:.1f}\n")
sys.exit(proc.returncode)
