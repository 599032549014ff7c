"""The sizing workbench at 80x24: its title whole, and no number of its table cut, for every preset,
alone and pinned beside another, in both languages."""

from types import SimpleNamespace

import pytest
from rich.cells import cell_len

from engine import sizing
from tui.i18n import t
from tui.layout.flatten import flatten
from tui.screens.workbench import FIELDS_WIDTH, WorkbenchScreen, share
from tui.workbench import Workbench

OUTPUTS = 80 - FIELDS_WIDTH - 3  # the outputs column at 80 columns, as the screen lays it out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_title_fits_80_columns(lang):
    assert cell_len(t("workbench_title", lang)) <= 80 - 2


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("pinned", [False, True], ids=["alone", "pinned"])
def test_every_count_is_whole_at_80_columns(lang, pinned):
    """Every count and share shows whole: no ellipsis in the table, each count the report's own."""
    for preset in sizing.PRESETS:
        bench = Workbench.start(preset)
        if pinned:
            bench.pin()
            bench.set("preset", "llama3-70b")
        s = bench.sizing
        text = flatten(WorkbenchScreen._items(SimpleNamespace(bench=bench), s, lang, ""), OUTPUTS).plain
        assert "…" not in text and "..." not in text, (preset, text)
        assert all(cell_len(line) <= OUTPUTS for line in text.splitlines())
        if not pinned:
            assert f"{s.report['total']:,}" in text and f"{s.report['items']['ffn/gate']:,}" in text


def test_a_share_keeps_six_cells():
    assert [share(x) for x in (1.0, 0.234, 0.0005, 0.00004, 0.0)] == ["100.0%", "23.4%", "0.1%", "<0.1%", "0.0%"]
