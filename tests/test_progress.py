"""The progress file under stress: a full disk, a read-only folder, two tours at once, killed saves,
repeated damage, and a progress.json that is not a file at all."""

import errno
import json
import os
import stat
import subprocess
import sys
import tempfile
import time

import pytest
from helpers.cli import ROOT
from helpers.marks import WALL_CLOCK
from helpers.screen import screen_text
from rich.cells import cell_len

from tui.app import make_app
from tui.i18n import TEXTS, t
from tui.progress import MAX_BYTES, OTHER_PAGES, Progress, Store
from tui.screens.lesson import LessonScreen


def denied(*args, **kwargs):
    raise PermissionError(errno.EACCES, "Permission denied")


# --- saving ------------------------------------------------------------------------------------

def test_two_tours_at_once_keep_every_step_either_saw(tmp_path):
    one, two = Store(tmp_path), Store(tmp_path)
    a, b = one.load(), two.load()
    a.lesson = "heads"
    a.visit("heads", "s1")
    assert one.save(a)
    b.lesson, b.step, b.lang = "kvcache", 1, "zh"
    b.visit("heads", "s2")
    b.visit("kvcache", "k1")
    assert two.save(b)
    a.lang = "en"
    a.visit("heads", "s3")
    assert one.save(a)  # the last to save keeps its place and language, and the other's steps
    saved = Store(tmp_path).load()
    assert (saved.lesson, saved.step, saved.lang) == ("heads", 0, "en")
    assert {k: sorted(v) for k, v in saved.visited.items()} == {"heads": ["s1", "s2", "s3"], "kvcache": ["k1"]}


async def test_a_disk_that_fills_mid_session_is_said_once_and_the_tour_runs_on(state, monkeypatch):
    said = []
    real_say, real_fsync = LessonScreen.say, os.fsync

    def recording_say(self, head="", tail="", style="italic"):
        said.append(tail)
        real_say(self, head, tail, style)

    def no_space(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(LessonScreen, "say", recording_say)
    full = t("progress_save_full", "en")
    app = make_app(lang="en", lesson="attention", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        await pilot.pause()
        good = (state / "progress.json").read_bytes()
        assert json.loads(good)["step"] == 1
        monkeypatch.setattr(os, "fsync", no_space)
        await pilot.press("n")
        await pilot.pause()
        assert full in screen_text(app)  # inline, on the step it happened on
        await pilot.press("n", "n", "n")
        await pilot.pause()
        assert app.is_running and app.tour.step_index == 5
        assert full not in screen_text(app)  # said once: the next steps are quiet
        assert said.count(full) == 1
        assert (state / "progress.json").read_bytes() == good  # the last good save, whole
        assert sorted(p.name for p in state.iterdir()) == ["progress.json"]
        monkeypatch.setattr(os, "fsync", real_fsync)  # room again: the next step is saved, still quietly
        await pilot.press("n")
        await pilot.pause()
        assert json.loads((state / "progress.json").read_text())["step"] == 6
    assert said.count(full) == 1


async def test_a_save_problem_at_start_is_not_hidden_by_the_resume_line(state, monkeypatch):
    state.mkdir()
    (state / "progress.json").write_text(json.dumps(Progress("heads", 2, "en").to_json()))
    monkeypatch.setattr(os, "replace", denied)
    app = make_app(state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "Resuming at lesson 4" in text and t("progress_save_denied", "en") in text


# --- loading -----------------------------------------------------------------------------------

async def test_a_damaged_file_that_cannot_be_moved_aside_is_left_and_said_so(state, monkeypatch):
    state.mkdir()
    (state / "progress.json").write_bytes(b"{not json")
    state.chmod(0o555)
    if os.geteuid() == 0:  # root writes through a read-only mode: make the rename and the write fail instead
        monkeypatch.setattr(os, "replace", denied)
        monkeypatch.setattr(tempfile, "mkstemp", denied)
    try:
        app = make_app(lang="en", state_dir=state)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            text = screen_text(app)
            assert "cannot be moved aside" in text and "without saving" in text and "kept as" not in text
            await pilot.press("n", "n")
            assert app.is_running and app.tour.step_index == 2
    finally:
        state.chmod(0o755)
    assert sorted(p.name for p in state.iterdir()) == ["progress.json"]
    assert (state / "progress.json").read_bytes() == b"{not json"


def test_a_second_broken_file_keeps_the_first_copy(tmp_path, monkeypatch):
    monkeypatch.setattr(time, "strftime", lambda fmt, *when: "20250101-120000")  # all in the same second
    for garbage in (b"{first", b"{second", b"{third"):
        (tmp_path / "progress.json").write_bytes(garbage)
        store = Store(tmp_path)
        assert store.load() == Progress() and store.problem == "corrupt"
    kept = "progress.json.broken-20250101-120000"
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == {
        kept: b"{first", kept + "-1": b"{second", kept + "-2": b"{third"}


def test_an_oversized_file_is_moved_aside_unparsed(tmp_path):
    whole = json.dumps(Progress("heads", 1).to_json()).encode()
    (tmp_path / "progress.json").write_bytes(b" " * (2 << 20) + whole)  # valid JSON, but 2 MiB
    store = Store(tmp_path)
    assert store.load() == Progress() and store.problem == "corrupt"
    assert store.broken.read_bytes().endswith(whole)


def test_stale_temporary_files_of_killed_saves_are_cleaned_at_load(tmp_path):
    old = time.time() - 3600
    stale = []
    for _ in range(3):  # made the way a save makes them
        fd, name = tempfile.mkstemp(prefix=".progress-", suffix=".tmp", dir=tmp_path)
        os.close(fd)
        os.utime(name, (old, old))
        stale.append(name)
    fd, fresh = tempfile.mkstemp(prefix=".progress-", suffix=".tmp", dir=tmp_path)  # maybe a save in flight
    os.close(fd)
    others = [".progress-short.tmp", "progress-abcdefgh.tmp", ".progress-abcdefgh.tmp.keep", "notes.tmp",
              "progress.json.broken-20250101-120000"]
    for name in others:
        (tmp_path / name).write_text("keep me")
        os.utime(tmp_path / name, (old, old))
    (tmp_path / ".progress-folder00.tmp").mkdir()  # the right name, but not a file
    Store(tmp_path).load()
    assert not any(os.path.exists(name) for name in stale)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [*others, ".progress-folder00.tmp", os.path.basename(fresh)])


PROBE = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (256 << 20, 256 << 20))  # reading /dev/zero whole fails fast
from tui.progress import MAX_BYTES, OTHER_PAGES, Progress, Store
store = Store(sys.argv[1])
fresh = store.load() == Progress()
print(json.dumps({"problem": store.problem, "fresh": fresh, "saved": store.save(Progress("heads"))}))
"""


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero"])
def test_a_progress_file_that_is_not_a_file_is_neither_read_nor_saved_over(tmp_path, kind):
    path = tmp_path / "progress.json"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    try:  # in a child process, so that a hang fails the test instead of stopping the suite
        done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True, text=True,
                              cwd=ROOT, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"loading a {kind} as progress.json hung")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"problem": "special", "fresh": True, "saved": False}
    if kind == "fifo":
        assert stat.S_ISFIFO(os.lstat(path).st_mode)
    else:
        assert os.readlink(path) == "/dev/zero"
    assert [p.name for p in tmp_path.iterdir()] == ["progress.json"]


async def test_a_folder_named_progress_json_is_said_and_left(state):
    (state / "progress.json").mkdir(parents=True)
    app = make_app(lang="en", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "is not a regular file" in screen_text(app)
        await pilot.press("n")
        assert app.is_running and app.tour.step_index == 1
    assert (state / "progress.json").is_dir() and [p.name for p in state.iterdir()] == ["progress.json"]


# --- the notices -------------------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_progress_notice_is_one_line_of_at_most_78_cells(lang):
    keys = [key for key in TEXTS if key.startswith("progress_")]
    problems = ("corrupt", "corrupt_kept", "unreadable", "special")  # Store.problem after a load
    failures = ("full", "denied", "failed")                           # Store.why after a save
    assert {f"progress_{p}" for p in problems} | {f"progress_save_{w}" for w in failures} <= set(keys)
    for key in keys:
        text = t(key, lang, name="progress.json.broken-20250101-120000-99")
        assert "\n" not in text and cell_len(text) <= 78, (key, cell_len(text))


# --- a big progress file ---------------------------------------------------------------------------

def big_progress(folder, lesson: str, n: int = 100_000) -> bytes:
    """A progress.json under the reader's cap (0.89 MB) that names `n` steps seen of `lesson`, none of them
    real: what a learner sharing the account, or a tool gone wrong, can leave behind."""
    visited = {lesson: [f"x{i}" for i in range(n)]}
    visited.setdefault("attention", []).append("qkv")
    data = {"version": 1, "lesson": "attention", "step": 0, "lang": "en", "visited": visited}
    raw = json.dumps(data, separators=(",", ":")).encode()
    assert len(raw) < MAX_BYTES
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "progress.json").write_bytes(raw)
    return raw


@pytest.mark.parametrize("lesson", ["attention", "not-a-lesson"])
def test_a_progress_file_of_100000_steps_loads_moves_and_saves_at_once_and_reads_back(tmp_path, lesson):
    """Merging the steps another tour saw was quadratic: 100,000 of them took 52 s to save, and what was
    written (1.29 MB) was over the reader's own cap, so the next start called it damaged. Steps of a lesson
    the tour has are kept only if the lesson has them; a lesson it lacks is dropped when it would not fit."""
    from lessons.loader import load_lessons
    from tui.progress import _parse
    from tui.tour_state import Tour

    big_progress(tmp_path, lesson)
    lessons, _ = load_lessons()
    store, start = Store(tmp_path), time.perf_counter()
    tour = Tour(lessons, store.load(), "en")
    tour.resume()
    assert tour.next() and store.save(tour.progress)
    assert time.perf_counter() - start < 1.0
    raw = (tmp_path / "progress.json").read_bytes()
    saved = _parse(raw)
    assert len(raw) <= MAX_BYTES and Store(tmp_path).read() == saved
    assert (saved.lesson, saved.step) == ("attention", 1) and saved.visited.pop("attention") == ["qkv", "softmax"]
    assert saved.visited == ({} if lesson == "attention" else {lesson: [f"x{i}" for i in range(OTHER_PAGES)]})


def test_a_save_that_would_not_fit_leaves_out_the_lessons_the_tour_does_not_run_on(tmp_path):
    from lessons.loader import load_lessons
    from tui.tour_state import Tour

    progress = Progress(visited={f"{'z' * 400_000}{i}": ["s"] for i in range(3)})
    tour = Tour(load_lessons()[0], progress, "en")
    tour.resume()
    assert Store(tmp_path).save(progress) and Store(tmp_path).read().visited == {"residual": ["belt"]}


def test_a_save_the_reader_would_refuse_is_not_written_and_the_old_file_stays(tmp_path):
    """Without a tour to say which lessons are real, nothing can be dropped: the save is refused."""
    raw = big_progress(tmp_path, "not-a-lesson")
    store = Store(tmp_path)
    progress = store.load()
    progress.visit("not-a-lesson", "y" * 200_000)
    assert not store.save(progress) and store.why == "failed"
    assert (tmp_path / "progress.json").read_bytes() == raw
    assert not list(tmp_path.glob(".progress-*")), "no temporary file left behind"


def test_merging_keeps_the_order_each_step_was_first_seen(tmp_path):
    a, b = Progress(visited={"heads": ["s3", "s1"]}), Progress(visited={"heads": ["s2", "s1", "s4"], "ffn": ["f"]})
    a.merge(b)
    assert a.visited == {"heads": ["s3", "s1", "s2", "s4"], "ffn": ["f"]}


@pytest.mark.slow
@WALL_CLOCK
def test_with_a_progress_file_of_100000_steps_keys_work_and_sigterm_ends_the_tour_within_a_second(tmp_path):
    """The tour on a pty with that file: n moved nothing (the first save, after the first frame, held the app for
    a minute) and SIGTERM, whose timer saves the place before it ends the process, was not honoured for minutes."""
    import signal

    from helpers.pty import EXIT_S, FIRST, SECOND, START_S, terminals

    state = tmp_path / "state"
    big_progress(state, "attention")
    with terminals(state) as start:
        term = start("--lang", "en")
        term.wait_for(FIRST, timeout=START_S)
        mark = term.mark()
        term.press(b"n")
        term.wait_for(SECOND, mark)
        term.proc.send_signal(signal.SIGTERM)
        status, seconds = term.wait_exit(5 * EXIT_S)
    assert status == 128 + signal.SIGTERM and seconds < EXIT_S, f"exit status {status} after {seconds:.3f} s"
    saved = Store(state).read()
    assert (saved.lesson, saved.step) == ("attention", 1) and saved.visited == {"attention": ["qkv", "softmax"]}
