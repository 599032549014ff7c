"""How the screens look: SVG snapshots at 80x24 and 120x40, in zh and en.

Update after a deliberate change with `python -m pytest tests/test_snapshots.py --snapshot-update`,
then look at the SVGs in tests/__snapshots__/ before committing them. The pytest-xdist workers write the new
SVGs; only with -n 0 (one process) does syrupy also list, and with --snapshot-update delete, the SVGs no test
uses any more.
"""

import pytest

from lessons.loader import load_lessons
from tui.app import make_app


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("lesson", ["positional", "attention", "heads"])
def test_lesson_first_step(snap_compare, tmp_path, lesson, lang, size):
    app = make_app(lang=lang, lesson=lesson, state_dir=tmp_path, colors="color")
    assert snap_compare(app, terminal_size=size)


def press_to(lesson_id: str, step_id: str) -> list[str]:
    """The n presses from a lesson's first step to one of its steps."""
    lessons, _ = load_lessons()
    lesson = next(x for x in lessons if x.id == lesson_id)
    return ["n"] * [s.id for s in lesson.steps].index(step_id)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_attention_scaled_step_after_an_experiment(snap_compare, tmp_path, lang):
    """Scaled beside unscaled, at d=64: the heat marks, the changed cells underlined, before -> after."""
    app = make_app(lang=lang, lesson="attention", state_dir=tmp_path, colors="color")
    assert snap_compare(app, press=press_to("attention", "scaled") + ["1"], terminal_size=(80, 24))


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_new_row_after_an_experiment(snap_compare, tmp_path, lang):
    """The prefill table at prompt=200000: the row the press added is in view and underlined."""
    app = make_app(lang=lang, lesson="context", state_dir=tmp_path, colors="color")
    assert snap_compare(app, press=["1", "1"], terminal_size=(80, 24))


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_recap_page(snap_compare, tmp_path, lang):
    app = make_app(lang=lang, lesson="heads", state_dir=tmp_path, colors="color")
    lessons, _ = load_lessons()
    steps = len(next(x for x in lessons if x.id == "heads").steps)
    assert snap_compare(app, press=["n"] * steps, terminal_size=(80, 24))


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("colors", ["color", "ansi", "mono"], ids=["truecolor", "16-colours", "no-colour"])
@pytest.mark.parametrize("lesson,step", [("attention", "scaled"), ("positional", None), ("residual", "mask"),
                                         ("positional", "speeds"), ("attention", "sweep"),
                                         ("params", "llama3-shares")])
def test_pictures(snap_compare, tmp_path, monkeypatch, lesson, step, colors, lang):
    """Heatmaps (attention weights, sinusoidal positions, the causal mask) and charts (strips of waves, two
    line charts, a stacked bar) for a truecolor terminal, for 16 colours, and under NO_COLOR, where bold and
    dim marks and ASCII markers stand in for colour."""
    if colors == "mono":
        monkeypatch.setenv("NO_COLOR", "1")  # as a learner sets it: the app picks the rendering itself
    app = make_app(lang=lang, lesson=lesson, state_dir=tmp_path, colors=None if colors == "mono" else colors)
    assert app.heat_colors == colors
    assert snap_compare(app, press=press_to(lesson, step) if step else [], terminal_size=(80, 24))
