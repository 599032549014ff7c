"""The heads lesson's live training, in a child process.

numpy's many small operations hold the GIL, so training in a thread of the app made the two take turns:
keys waited on the loop and the loop on the screen. Here `python -m tui.training` trains and writes a
reading a few times a second, one JSON line each, to its stdout; the app reads them in a thread that
waits on the pipe (waiting holds no GIL). A line "stop" on the child's stdin ends the run early. The
child also ends when its stdin closes, so it never outlives the app, even one that was killed. It
trains on two cores like `xf-tour train` (engine/helper_process.py): it watches its stdin between steps rather
than in a thread, so that train() may fork its helper, and its readings of agreement and spread are
train()'s own, so that no evaluation stalls the two processes.
"""

import json
import os
import select
import subprocess
import sys
import time

READING_EVERY = 0.5  # seconds between readings: twice a second is enough to watch
PROBE = 200          # held-out sentences train() measures agreement and spread on, every 100 steps
NICE = 15            # the child yields to the app: on a busy machine a key comes before a training step


class LiveRun:
    """One training run in a child process: `readings()` yields what it reports, `stop()` asks it to end,
    `kill()` ends it at once."""

    def __init__(self, cfg, seed: int = 0):
        import dataclasses

        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}  # the products are small: a second BLAS thread only spins
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tui.training", json.dumps(dataclasses.asdict(cfg)), str(seed)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), text=True, bufsize=1)

    def readings(self, cancelled=lambda: False):
        """Each reading the child writes, as a dict, until it ends or `cancelled()` turns True (then it is killed).
        Waits at most a quarter of a second at a time, so a cancel is seen at once."""
        import selectors

        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while True:
                if cancelled():
                    self.kill()
                    return
                if not sel.select(timeout=0.25):
                    continue
                line = self.proc.stdout.readline()
                if not line:  # the child ended: after its last reading, or in a crash
                    if self.proc.wait() != 0:
                        raise RuntimeError(f"live training ended with exit status {self.proc.returncode}")
                    return
                yield json.loads(line)

    def stop(self) -> None:
        """Ask the child to stop after its current step; it then sends its last reading and ends."""
        try:
            self.proc.stdin.write("stop\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):  # it has ended already
            pass

    def kill(self) -> None:
        """End the child now and reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass


def steady_heap() -> None:
    """Keep memory freed at the top of the heap for the next training step instead of giving it back.

    Each step allocates the same few hundred arrays, many over glibc's 128 KiB mmap threshold; glibc
    returned them to the system and took them back page by page, some 1,200 page faults a step and a
    quarter of its time. 32 MiB of padding stops that (M_TOP_PAD, which also fixes the thresholds).
    glibc only; elsewhere this does nothing."""
    import ctypes

    try:
        ctypes.CDLL(None).mallopt(-2, 32 << 20)  # -2 is M_TOP_PAD in glibc's malloc.h
    except (OSError, AttributeError):
        pass


def _child(cfg_json: str, seed: int) -> int:
    """The child's side: train, writing a reading every READING_EVERY seconds and one at the end."""
    steady_heap()
    if hasattr(os, "nice"):
        os.nice(NICE)
    from engine import tiny

    cfg = tiny.TrainedLlamaConfig(**json.loads(cfg_json))
    stopped = False

    def stop():  # "stop" on stdin, or the app gone (stdin closed): either ends the run
        """Looked at before each step without waiting, rather than by a thread: train() forks a helper
        process only where no other thread runs (tiny.can_fork)."""
        nonlocal stopped
        while not stopped and select.select([0], [], [], 0)[0]:
            got = os.read(0, 4096)
            stopped = not got or b"stop" in got
        return stopped
    started, last, reading = time.perf_counter(), 0.0, {}
    curve = {"loss": [], "spread": []}  # [step, value] as train() records them: each reading sends them all

    def on_curve(name, step, value):
        curve[name].append([step, value])

    def say(**fields):
        print(json.dumps(fields), flush=True)

    def on_reading(step, e):  # train()'s own, every 100 steps: an evaluation here would stall both processes
        reading.update(agr=f"{e['agreement']:.3f}", spread=f"{tiny.spread(e['head_entropy']):.2f}",
                       layers=e["head_entropy"])

    def on_step(step, loss, w):
        nonlocal last
        now = time.perf_counter()
        if now - last < READING_EVERY and step != cfg.steps - 1:
            return
        last = now
        left = (time.perf_counter() - started) / (step + 1) * (cfg.steps - step - 1)  # from the speed so far
        say(step=step + 1, loss=loss, left=left, curve=curve, **reading)

    _, summary = tiny.train(cfg, seed, on_step=on_step, stop=stop, n_eval=PROBE, on_curve=on_curve,
                            on_reading=on_reading, probe=False)
    say(end="stopped" if summary["steps"] < cfg.steps else "done", step=summary["steps"],
        loss=summary["train_loss"], curve=curve, **reading)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(_child(sys.argv[1], int(sys.argv[2])))
    except (BrokenPipeError, KeyboardInterrupt):  # the app went away: nothing left to tell
        os._exit(0)
