"""How the screens look: SVG snapshots at 80x24 and 120x40, in zh and en.

Update after a deliberate change with `python -m pytest tests/test_snapshots.py --snapshot-update`,
then look at the SVGs in tests/__snapshots__/ before committing them.
"""

import pytest

from tui.app import make_app


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("lesson", ["positional", "attention", "heads"])
def test_lesson_first_step(snap_compare, tmp_path, lesson, lang, size):
    app = make_app(lang=lang, lesson=lesson, state_dir=tmp_path)
    assert snap_compare(app, terminal_size=size)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_attention_scaled_step_after_an_experiment(snap_compare, tmp_path, lang):
    """Step 3, scaled beside unscaled, at d=64: the heat marks and the experiment's hint."""
    app = make_app(lang=lang, lesson="attention", state_dir=tmp_path)
    assert snap_compare(app, press=["n", "n", "1"], terminal_size=(80, 24))
