"""A flood of keys, as a paste over SSH delivers it: the tour's memory, and how soon q is answered after it.

In a tmux session at 80x24 the tour opens (state in a temporary folder); then `tmux send-keys -l` types
SIZE KiB of a mix (MIXES: "np", escape sequences, mouse and focus reports, pastes, sizes, junk) in chunks
as fast as tmux takes them, and q straight after, again every REPEAT_Q_S until the tour has gone. The tour's
resident size is read from /proc every 20 ms meanwhile; the kernel's own peak (VmHWM) is read just before q.
It prints the resident size before the paste, the peak, how long the paste took to send, and the seconds from
its end until the tour had answered q (its process gone), or that it had not by the timeout.

Run from the repo root:  .venv/bin/python bench/flood.py [--kib 200] [--mix np|...|all] [--timeout 60] [--json]
Needs tmux.
"""

import argparse
import json
import os
import re
import select
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.term import new_session, tmux, wait_for  # noqa: E402  (after the path is set)

XF_TOUR = str(ROOT / ".venv" / "bin" / "xf-tour")
CHUNK = 4096
# what the paste holds: one text repeated, or pieces drawn at random (seed 1) from a list, to the size
MIXES = {
    "np": ["np"],
    "mixed": ["n", "p", *"123456789", "c", "t", "o", "?", "l", "\x1b[A", "\x1b[B", "\x1b[C", "\x1b[D",
              "\x1b[<0;10;10M", "\x1b[200~hello np\x1b[201~"],
    "arrows": ["\x1b[A", "\x1b[B", "\x1b[C", "\x1b[D", "\x1b[1;5C"],
    "mouse": ["\x1b[<0;10;10M", "\x1b[<0;10;10m", "\x1b[<35;20;12M"],
    "focus": ["\x1b[I", "\x1b[O"],
    "pastes": ["\x1b[200~n\x1b[201~"],
    "open-paste": None,  # one bracketed paste that never closes
    "junk": ["\x1b[999;999;999;999;999;999;999;999", "\x1b]0;xx\x07", "\x1bP", "\x1b"],
    "sizes": ["\x1b[48;20000;20000;0;0t", "\x1b[48;24;80;0;0t"],
}
REPEAT_Q_S = 0.25  # q is sent again this often: a q right after an unfinished sequence ends it, and is no key


def paste_text(mix: str, size: int) -> str:
    """`size` characters of `mix` (MIXES)."""
    import random

    if MIXES[mix] is None:
        return "\x1b[200~" + "n" * size
    rng, out, n = random.Random(1), [], 0
    while n < size:
        piece = rng.choice(MIXES[mix])
        out.append(piece)
        n += len(piece)
    return "".join(out)


def status_kib(pid: int, field: str) -> int:
    """A size from /proc/PID/status (VmRSS, VmHWM) in KiB; 0 once the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def flood(kib: int = 200, timeout: float = 60.0, lang: str = "en", mix: str = "np") -> dict:
    """One run: the readings, in MiB and seconds."""
    name = f"xf-flood-{os.getpid()}"
    with tempfile.TemporaryDirectory() as state:
        new_session(name, f"exec env XF_TOUR_STATE_DIR={state} TEXTUAL_ANIMATIONS=none {XF_TOUR} --lang {lang}")
        try:
            pid = int(tmux("list-panes", "-t", name, "-F", "#{pane_pid}").stdout.split()[0])
            assert wait_for(name, re.compile(r"1/\d+"), 30), "no first frame"
            before = status_kib(pid, "VmRSS")
            peak, stop = [before], threading.Event()

            def sample() -> None:
                while not stop.wait(0.02):
                    peak[0] = max(peak[0], status_kib(pid, "VmRSS"))

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            text, started = paste_text(mix, kib * 1024), time.monotonic()
            for i in range(0, len(text), CHUNK):
                tmux("send-keys", "-t", name, "-l", text[i:i + CHUNK])
            pasted = time.monotonic()
            hwm = status_kib(pid, "VmHWM")
            fd, gone = os.pidfd_open(pid), False
            while not gone and time.monotonic() - pasted < timeout:
                tmux("send-keys", "-t", name, "q")
                gone = bool(select.select([fd], [], [], REPEAT_Q_S)[0])
            answered = time.monotonic() - pasted if gone else None
            os.close(fd)
            stop.set()
            sampler.join()
        finally:
            tmux("kill-session", "-t", name)
    mib = 1 / 1024
    return {"mix": mix, "kib": kib, "rss_before_mib": round(before * mib, 1),
            "rss_peak_mib": round(max(peak[0], hwm) * mib, 1),
            "paste_s": round(pasted - started, 2), "q_answered_s": None if answered is None else round(answered, 2),
            "timeout_s": timeout}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kib", type=int, default=200, help="how much to paste (KiB)")
    parser.add_argument("--mix", action="append", choices=[*MIXES, "all"],
                        help="what to paste (repeatable; default np): " + ", ".join(MIXES))
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for q to be answered")
    parser.add_argument("--lang", default="en")
    parser.add_argument("--json", action="store_true")
    a = parser.parse_args()
    mixes = list(MIXES) if "all" in (a.mix or []) else a.mix or ["np"]
    runs = [flood(a.kib, a.timeout, a.lang, mix) for mix in mixes]
    if a.json:
        print(json.dumps(runs, indent=2))
        return
    for r in runs:
        answered = f"{r['q_answered_s']} s" if r["q_answered_s"] is not None else f"not within {r['timeout_s']:.0f} s"
        print(f"{r['kib']} KiB of {r['mix']} in {r['paste_s']} s: resident {r['rss_before_mib']} MiB before, "
              f"peak {r['rss_peak_mib']} MiB; q answered {answered} after the paste ended")


if __name__ == "__main__":
    main()
