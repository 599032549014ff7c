"""Where the first frame's time goes: what start-up imports, and what mounts before the first frame.

Imports: the tour starts in a tmux session at 80x24 under script(1) with `python -X importtime`, opening
at the positional lesson, after one start that fills its state folder (the parsed lessons, the results it
opens on), as every start after the first finds it. Python writes its import times on stderr, the terminal
the tour draws on (stderr is not redirected: Textual draws there too), so script(1)'s log holds them; they
are read from the log, up to the first frame in it. Listed: the modules with the largest cumulative import
time, and the project's own.
Mounts: the same app, built as the command line builds it (lessons_for, make_app, recall), runs headless
at 80x24 (App.run_test) in a fresh process, twice with one state folder; it reports, for the second, the
time to import the app, to build it (lessons loaded), and to its first frame, whether that frame was drawn
from the results the first start kept, and the widgets mounted by then, by class.

Run from the repo root:  .venv/bin/python bench/startup.py [--top 15] [--json]
(bench/tui_bench.py --startup runs it too). Needs tmux and script(1).
"""

import argparse
import json
import re
import shlex
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.term import PY, new_session, screen, tmux, wait_for  # noqa: E402  (after the path is set)

LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)([\w.]+)")
PROJECT = ("engine", "lessons", "tui")


def imports_in_terminal(lesson="positional", ready=r"\+0\.841") -> list[dict]:
    """Every import of a real start, up to the first frame: {module, self_ms, cumulative_ms, depth}."""
    name = "imports-" + uuid.uuid4().hex[:8]
    log = tempfile.NamedTemporaryFile(prefix="imports-", suffix=".log", delete=False).name
    state = tempfile.mkdtemp(prefix="imports-state-")
    for importtime in (False, True):  # the first start fills the state folder
        cmd = [PY, *(["-X", "importtime"] if importtime else []), "-m", "tui", "--lang", "en", "--lesson", lesson]
        inner = (f"env -u PYTHONDONTWRITEBYTECODE XF_TOUR_STATE_DIR={shlex.quote(state)} TEXTUAL_ANIMATIONS=none "
                 f"LANG=C.UTF-8 script -qfc {shlex.quote(shlex.join(cmd))} {shlex.quote(log)}")
        new_session(name, inner)
        try:
            if wait_for(name, re.compile(ready, re.MULTILINE), timeout=30) is None:
                raise RuntimeError(f"first frame not seen:\n{screen(name)}")
            time.sleep(0.3)
            text = Path(log).read_bytes().decode("utf-8", "replace")
        finally:
            tmux("send-keys", "-t", name, "q")
            time.sleep(0.3)
            tmux("kill-session", "-t", name)
            Path(log).unlink(missing_ok=True)
    frame = re.search(ready, text)  # the log holds the frame too: what is imported after it is not counted
    text = text[:frame.start()] if frame else text
    return [{"module": m[4], "self_ms": int(m[1]) / 1000, "cumulative_ms": int(m[2]) / 1000,
             "depth": len(m[3]) // 2} for m in LINE.finditer(text)]


def probe() -> dict:
    """Run in a fresh process: the app headless at 80x24, built as the command line builds it, the time of
    each phase, what is mounted."""
    import asyncio
    from collections import Counter
    from types import SimpleNamespace

    t0 = time.perf_counter()
    from lessons.cache import RESULTS_NAME, Results
    from tui.app import make_app
    from tui.cli.lessons import lessons_for
    t1 = time.perf_counter()
    app = make_app(lang="en", lesson="positional", lessons=lessons_for(SimpleNamespace(), deep=False))
    app.recall(Results(app.store.folder / RESULTS_NAME))
    t2 = time.perf_counter()
    out = {"recalled": bool(app.tour.recalled)}

    async def run():
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            out["first_frame_s"] = time.perf_counter() - t2
            widgets = list(app.screen.walk_children(with_self=True))
            out["screens"] = [type(s).__name__ for s in app.screen_stack]
            out["widgets"] = len(widgets)
            out["by_class"] = Counter(type(w).__name__ for w in widgets).most_common()

    asyncio.run(run())
    modules = sorted(sys.modules)
    return {"import_app_s": t1 - t0, "make_app_s": t2 - t1, **out, "modules": len(modules),
            "project_modules": [m for m in modules if m.split(".")[0] in PROJECT]}


def startup(top: int = 15) -> dict:
    """The import report of a real start and the mount report of a headless one."""
    imports = imports_in_terminal()
    roots = sorted((i for i in imports if i["depth"] == 0), key=lambda i: -i["cumulative_ms"])
    own = sorted((i for i in imports if i["module"].split(".")[0] in PROJECT), key=lambda i: -i["self_ms"])
    env = {"TEXTUAL_ANIMATIONS": "none", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
           "XF_TOUR_STATE_DIR": tempfile.mkdtemp(prefix="probe-state-")}
    for _ in range(2):  # the first start fills the state folder
        mounted = subprocess.run([PY, __file__, "--probe"], capture_output=True, text=True, cwd=ROOT, env=env)
        if mounted.returncode:
            raise RuntimeError(mounted.stderr[-2000:])
    return {"imports": len(imports), "import_ms": sum(i["self_ms"] for i in imports),
            "numpy": any(i["module"] == "numpy" for i in imports), "top_level": roots[:top], "own": own[:top],
            "mounts": json.loads(mounted.stdout)}


def report(result) -> str:
    """The start-up as Markdown."""
    m = result["mounts"]
    lines = [f"start-up imports (python -X importtime, a real start at 80x24): {result['imports']} modules, "
             f"{result['import_ms']:.0f} ms in all (importtime's own overhead included), numpy "
             f"{'among them' if result['numpy'] else 'not among them'}. A module loaded "
             "through importlib.import_module (engine's lazy names) is not listed: its time is its importer's self\n",
             "| top-level import | cumulative ms |", "|---|---:|"]
    lines += [f"| {i['module']} | {i['cumulative_ms']:.1f} |" for i in result["top_level"]]
    lines += ["", "| the project's modules | self ms |", "|---|---:|"]
    lines += [f"| {i['module']} | {i['self_ms']:.1f} |" for i in result["own"]]
    classes = ", ".join(f"{name} {n}" for name, n in m["by_class"])
    drawn = "from the results the last start kept" if m["recalled"] else "computed"
    lines += ["", f"headless at 80x24: import tui.app {1000 * m['import_app_s']:.0f} ms, make_app (lessons loaded) "
              f"{1000 * m['make_app_s']:.0f} ms, first frame ({drawn}) {1000 * m['first_frame_s']:.0f} ms after that "
              f"(and what runs right after it); screens {' > '.join(m['screens'])}; {m['widgets']} widgets mounted: "
              f"{classes}"]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.probe:
        print(json.dumps(probe()))
        return
    result = startup(a.top)
    print(json.dumps(result, indent=2) if a.json else report(result))


if __name__ == "__main__":
    main()
