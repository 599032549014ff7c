"""The heads lesson's live training, in a child process.

numpy's many small operations hold the GIL, so training in a thread of the app made the two take turns:
keys waited on the loop and the loop on the screen. Here `python -m tui.training` trains and writes a
reading a few times a second, one JSON line each, to its stdout; the app reads them in a thread that
waits on the pipe (waiting holds no GIL). A line "stop" on the child's stdin ends the run early. The
child also ends when its stdin closes, so it never outlives the app, even one that was killed. It
trains on two cores like `xf-tour train` (engine/helper_process.py): it watches its stdin between steps rather
than in a thread, so that train() may fork its helper, and its readings of agreement and spread are
train()'s own, so that no evaluation stalls the two processes. `LiveTraining` is the app's side: the panel
on the heads lesson's training step, the run it starts, stops and follows.
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
        from engine.records import asdict

        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}  # the products are small: a second BLAS thread only spins
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tui.training", json.dumps(asdict(cfg)), str(seed)],
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


class LiveTraining:
    """The heads lesson's live-training panel in the app: its key starts training the big tiny Llama in a child
    process (LiveRun), stops it, or closes the finished panel; a worker thread follows the run's readings.
    `state` is the run on show (running, stop, key, lines, run), None when no panel is; tui/page.py lays out
    the panel's lines."""

    def __init__(self, app):
        self.app = app
        self.state = None

    @property
    def running(self) -> bool:
        return self.state is not None and self.state["running"]

    def panel(self):
        """The live-training panel's text, or None when no run is going or finished."""
        if self.state is None:
            return None
        from .layout.screen import training_panel
        return training_panel(self.state["lines"])

    def toggle(self, key: str = "4") -> None:
        """Start training the big tiny Llama in a child process; stop it; or close the finished panel.
        `key` is the key that does this, named by the panel."""
        from .i18n import t

        state = self.state
        if state is not None and state["running"]:
            state["stop"] = True
            state["run"].stop()
            return
        if state is not None:  # a finished run: close its panel
            self.state = None
            self.app.redraw_lessons()
            return
        from engine import tiny

        run = LiveRun(tiny.CONFIGS["big"], seed=0)
        self.state = {"running": True, "stop": False, "key": key, "lines": [t("training_start", self.app.tour.lang)],
                      "run": run}
        self.app.redraw_lessons()
        self.app.run_worker(self._follow, thread=True, exclusive=True, group="train")

    def _show(self, lines: list) -> None:
        if self.state is not None:
            self.state["lines"] = lines
            self.app.redraw_lessons()

    def _follow(self) -> None:
        """Runs in a worker thread: shows each reading of the child process that trains the big config in
        memory only; it never writes a file. A quit cancels the worker, which ends the child."""
        from textual.worker import get_current_worker

        from engine import tiny

        from .i18n import t

        app, state, cfg, worker = self.app, self.state, tiny.CONFIGS["big"], get_current_worker()
        reading, progress, started = {"agr": "-", "spread": "-", "curve": {}}, {"step": 0, "loss": float("nan")}, \
            time.perf_counter()
        ended = None
        try:
            for r in state["run"].readings(cancelled=lambda: worker.is_cancelled):
                ended = r.get("end")
                reading.update({k: r[k] for k in reading if k in r})
                progress.update(step=r["step"], loss=r["loss"])
                if "end" not in r:
                    app.call_from_thread(self._show, self.lines(cfg, reading, left=r["left"], **progress))
        finally:
            state["run"].kill()
            state["running"] = False
        if worker.is_cancelled:
            return
        end = t("training_done" if ended == "done" else "training_stopped", app.tour.lang,
                s=time.perf_counter() - started, key=state["key"])
        app.call_from_thread(self._show, self.lines(cfg, reading, **progress)[:2] + [end])

    def end(self) -> None:
        """The app is closing: a live training run ends with it."""
        if self.running:
            self.state["run"].kill()

    def lines(self, cfg, reading, step, loss, left=None) -> list:
        """The panel: the step, loss and agreement; then the loss and the head-entropy spread as curves drawn
        while they come in (train() records them: the mean loss of every 20 steps, the spread every 100), the
        time left after the loss. Without `left`, the run is over."""
        from rich.cells import cell_len
        from rich.text import Text

        from .i18n import t
        from .layout.charts import sparkline

        lang = self.app.tour.lang
        curve = reading["curve"]
        names = [t("training_loss", lang), t("training_spread_name", lang)]
        pad = max(cell_len(n) for n in names) + 1
        tail = [t("training_left", lang, s=left) if left is not None else "", reading["spread"]]
        lines = [t("training_line", lang, step=step, total=cfg.steps, loss=loss, agr=reading["agr"])]
        for name, key, end in zip(names, ("loss", "spread"), tail):
            line = Text(name + " " * (pad - cell_len(name)))
            line.append_text(sparkline(curve.get(key, []), cfg.steps, 40, self.app.heat_colors))
            line.append(f"  {end}")
            lines.append(line)
        return lines


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
