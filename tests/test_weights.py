"""A learner's own weights (xf-tour --weights FILE.npz, or weights=FILE typed on the line): run=yours in every
trained-model view, beside the shipped runs. A file train wrote is taken whole, and computes exactly what the
same weights compute as a shipped run; anything else is refused in one line (exit 2), or inline in the app."""

import json
import shutil
import zipfile

import numpy as np
import pytest
from helpers.cli import run_cli
from helpers.pilot import at, type_line
from helpers.screen import note, plain, screen_text

from engine import tiny
from engine.errors import ParamError
from engine.views import run_view, tiny as tiny_views
from lessons.loader import SHIPPED, load_lessons
from tui import page
from tui.app import make_app
from tui.progress import Progress
from tui.tour_state import YOURS, Tour

SEED1 = tiny.RUNS["seed1"]


@pytest.fixture(autouse=True)
def _forget():
    """Each test starts and ends with no weights of the learner's: they live in the engine's module."""
    tiny_views.forget_yours()
    yield
    tiny_views.forget_yours()


@pytest.fixture
def mine(tmp_path):
    """The shipped seed1 run, copied where a learner's file would be: a file that train wrote."""
    return shutil.copy(SEED1, tmp_path / "mine.npz")


def rewritten(tmp_path, change):
    """seed1's weights and manifest after change(w, cfg, meta) -> (w, cfg, meta), saved as train saves."""
    w, cfg, meta = tiny.load(SEED1)
    w, cfg, meta = change({k: v.copy() for k, v in w.items()}, cfg, dict(meta))
    path = tmp_path / "changed.npz"
    tiny.save(path, w, cfg, {k: v for k, v in meta.items() if k != "config"})
    return path


def test_the_run_name_is_the_same_in_the_tour_and_the_engine():
    assert YOURS == tiny_views.YOURS


def test_your_weights_compute_exactly_what_the_same_shipped_run_does(mine):
    assert tiny_views.use_weights(str(mine)) == "mine.npz"
    for view in tiny_views.YOUR_VIEWS:
        yours, shipped = run_view(view, {"run": "yours"}), run_view(view, {"run": "seed1"})
        assert yours.tables == shipped.tables and yours.facts == shipped.facts, view
        assert yours.params["run"] == "yours"
    assert run_view("tiny-next", {"run": "yours"}).tables != run_view("tiny-next", {"run": "seed0"}).tables


def test_run_yours_without_weights_is_refused_in_one_line():
    with pytest.raises(ParamError, match="--weights FILE.npz"):
        run_view("tiny-loss", {"run": "yours"})


def test_other_weights_replace_what_was_computed_from_the_first(mine, tmp_path):
    tiny_views.use_weights(str(mine))
    before = run_view("tiny-sample", {"run": "yours"}).tables
    other = shutil.copy(tiny.RUNS["seed0"], tmp_path / "other.npz")
    tiny_views.use_weights(str(other))
    assert run_view("tiny-sample", {"run": "yours"}).tables == run_view("tiny-sample", {"run": "seed0"}).tables
    assert run_view("tiny-sample", {"run": "yours"}).tables != before


@pytest.mark.parametrize("make, said", [
    (lambda d: d / "absent.npz", "cannot open it"),
    (lambda d: d, "not a regular file"),
    (lambda d: (d / "junk.npz").write_text("not a zip") and d / "junk.npz", "not weights that xf-tour train wrote"),
    (lambda d: rewritten(d, lambda w, c, m: ({**w, "head": w["head"] * np.nan}, c, m)), "not finite"),
    (lambda d: rewritten(d, lambda w, c, m: (w, c, {k: v for k, v in m.items() if k != "probe"})),
     "manifest is not one xf-tour train wrote"),
], ids=["absent", "folder", "not-a-zip", "nan", "no-probe"])
def test_what_train_did_not_write_is_refused(tmp_path, make, said):
    path = make(tmp_path)
    with pytest.raises(ParamError, match=said):
        tiny_views.use_weights(str(path))
    with pytest.raises(ParamError):  # nothing of a refused file stays
        run_view("tiny-next", {"run": "yours"})


def test_another_config_is_refused(tmp_path):
    cfg = tiny.CONFIGS["small"]
    path = tmp_path / "small.npz"
    _, _, meta = tiny.load(SEED1)
    tiny.save(path, tiny.init(cfg, 0), cfg, {k: v for k, v in meta.items() if k != "config"})
    with pytest.raises(ParamError, match="d_model 16, 1 x 2 heads, d_ff 32, vocabulary 52: not the main config"):
        tiny_views.use_weights(str(path))


@pytest.mark.parametrize("change, said", [
    (lambda m: m.update(steps=[1]), "steps"),
    (lambda m: m["curve"].update(spread_every="\x1b[2J"), "curve.spread_every"),
    (lambda m: m["probe"].update(ids=m["probe"]["ids"] * 2), "probe"),
    (lambda m: m["probe"]["ids"][0].__setitem__(0, 99), "probe.ids"),
    (lambda m: m.update(ablation=m["ablation"][:3]), "ablation"),
    (lambda m: m.update(loss=float("nan")), "loss"),
], ids=["steps-a-list", "a-string", "probe-too-long", "probe-id", "ablation", "nan"])
def test_a_manifest_not_as_train_writes_it_is_refused(tmp_path, change, said):
    """Every figure a view reads or shows is a finite number of the right count: a string would reach a title,
    a list a number's format, and a long probe the UI thread."""
    import copy

    def edit(w, cfg, meta):
        meta = copy.deepcopy(meta)
        change(meta)
        return w, cfg, meta
    with pytest.raises(ParamError, match=f"manifest is not one xf-tour train wrote \\({said}\\)"):
        tiny_views.use_weights(str(rewritten(tmp_path, edit)))


def test_a_refused_file_leaves_the_weights_opened_before(mine, tmp_path):
    from tui import tour_state

    tiny_views.use_weights(str(mine))
    first = tour_state.run_view("tiny-next", {"run": "yours"})
    (tmp_path / "junk.npz").write_text("junk")
    with pytest.raises(ParamError):
        tour_state.open_weights(str(tmp_path / "junk.npz"))
    assert tour_state.run_view("tiny-next", {"run": "yours"}).tables == first.tables
    no_probe = rewritten(tmp_path, lambda w, c, m: (w, c, {**m, "ablation": []}))
    with pytest.raises(ParamError):
        tour_state.open_weights(str(no_probe))
    assert run_view("tiny-next", {"run": "yours"}).tables == first.tables  # the engine still has them


def test_the_tours_results_follow_new_weights(mine, tmp_path):
    """The tour keeps results by view and settings, and run=yours names whichever file is open: opening another
    drops what the first computed."""
    from tui import tour_state

    tour_state.open_weights(str(mine))
    first = tour_state.run_view("tiny-next", {"run": "yours"})
    tour_state.open_weights(shutil.copy(tiny.RUNS["seed0"], tmp_path / "other.npz"))
    again = tour_state.run_view("tiny-next", {"run": "yours"})
    assert again.tables != first.tables and again.tables == run_view("tiny-next", {"run": "seed0"}).tables


def test_a_file_too_big_or_unpacking_too_big_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "big.npz"
    with open(big, "wb") as f:
        f.truncate(tiny_views.MOST_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(ParamError, match="more than weights take"):
        tiny_views.use_weights(str(big))
    bomb = tmp_path / "bomb.npz"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("weights.npy", b"\0" * (tiny_views.MOST_BYTES + 1))
    assert bomb.stat().st_size < 100_000
    with pytest.raises(ParamError, match="unpacks to more than weights take"):
        tiny_views.use_weights(str(bomb))


def test_weights_go_with_the_tour_print_and_quiz_only(mine):
    out = run_cli("--weights", str(mine), "print", "tiny-next", "--set", "run=yours")
    assert out.returncode == 0 and "run=yours" in out.stdout, out.stderr
    out = run_cli("--weights", str(mine), "lessons")
    assert out.returncode == 2
    assert out.stderr.strip() == "xf-tour: error: --weights is for the tour itself, print and quiz"
    out = run_cli("quiz", "--lesson", "tokens", "--weights", str(mine), "--json")
    asked = json.loads(out.stdout)
    assert {q["evidence"]["before"].get("run") for q in asked if q["step"] in ("head", "loss")} == {"yours"}


def test_the_command_line_refuses_in_one_line_with_status_2(tmp_path, mine):
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 broken")
    for args in (["print", "tiny-next", "--weights", str(tmp_path / "junk.npz")],
                 ["--weights", str(tmp_path / "absent.npz"), "--lang", "zh"]):
        out = run_cli(*args)
        assert out.returncode == 2 and len(out.stderr.splitlines()) == 1 and "Traceback" not in out.stderr, out
    out = run_cli("print", "tiny-loss", "--weights", str(mine), "--set", "run=yours", "--json")
    assert out.returncode == 0, out.stderr
    yours = json.loads(out.stdout)["views"][0]
    shipped = json.loads(run_cli("print", "tiny-loss", "--set", "run=seed1", "--json").stdout)["views"][0]
    assert yours["params"]["run"] == "yours" and yours["facts"] == shipped["facts"]


def test_every_trained_model_step_fits_with_your_weights(mine):
    """One step, one screen, with run=yours and the note that says whose the numbers are, in zh and en."""
    tiny_views.use_weights(str(mine))
    lessons, _ = load_lessons(SHIPPED)
    seen = 0
    for lang in ("en", "zh"):
        tour = Tour(lessons, Progress(), lang, asks=False, weights="mine.npz")
        for li, lesson in enumerate(lessons):
            for si, step in enumerate(lesson.steps):
                tour.lesson_index, tour.step_index = li, si
                if tour.settings().get("run") != "yours":
                    continue
                seen += 1
                assert tour.result().params["run"] == "yours"
                built = page.build(tour, 80)
                assert built.lines <= 24, (lang, lesson.id, step.id, built.lines)
                assert "mine.npz" in page.idle_message(tour, 80)
    assert seen >= 2 * 8  # every lesson step on a trained-model view but those that pin a shipped run


def footer(app) -> str:
    return " ".join(plain(app.lesson_screen().query_one("#keys").content).split())


async def test_a_shared_session_opens_no_file(state, mine):
    """A learner over SSH (--learner) or in a browser (serve): weights= neither opens a file nor says anything
    of one (whether it is there, its size)."""
    app = make_app(lang="en", lesson="tokens", state_dir=state, open_files=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await at(pilot, app, "tokens", "loss")
        await type_line(pilot, app, f"weights={mine}")
        assert "A shared session opens no files" in note(app) and app.tour.weights is None


async def test_the_app_opens_your_weights_and_refuses_a_bad_file_inline(state, mine, tmp_path):
    app = make_app(lang="en", lesson="tokens", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await at(pilot, app, "tokens", "loss")
        assert "run=seed0" in footer(app)
        (tmp_path / "junk.npz").write_text("junk")
        await type_line(pilot, app, f"weights={tmp_path / 'junk.npz'}")
        assert app.lesson_screen().editing and "not weights that xf-tour train wrote" in note(app)
        await type_line(pilot, app, f"weights={mine}")
        assert not app.lesson_screen().editing
        assert "run=yours" in footer(app) and "[e] run seed0 -> yours" in screen_text(app)
        assert app.tour.weights == "mine.npz"
