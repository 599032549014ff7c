"""A seeded storm of keys and mouse clicks, posted the way the terminal driver posts them: bursts that land
before the app has handled the one before. It covers the lesson screen (several lessons, and params, where
w opens the workbench), the palette and the other windows, the workbench on its own (`xf-tour calc`), at
three sizes, and ends each round with a quit followed by more keys. Not one exception may reach Textual.

The storm is numpy.random.default_rng(SEED): a failure names its round and event, and replays exactly as
far as the app's own timing allows. The 2,000-key monkey test in test_app.py stays beside this one."""

import asyncio

import numpy as np
import pytest
from helpers.pilot import raw_clicks, raw_keys, until

from tui.app import make_app
from tui.screens.lesson import LessonScreen
from tui.workbench import Workbench

pytestmark = pytest.mark.slow  # about 15 s of seeded keys and clicks

SEED = 20261201  # the day this storm was written
KEYS = (list("np1234567890tclow") + ["question_mark", "escape", "enter", "up", "down", "left", "right", "tab",
                                     "ctrl+p", "pageup", "pagedown", "backspace", "space"]
        + [c for c in "abdefghijkmrsuvxyz"])  # no q: quitting ends a round (see storm_round)
# Ctrl+P is a priority binding: Textual handles it as it arrives, before a key typed earlier has bubbled
# back to the app's bindings. So after q it would open the palette and q would be lost: no crash, but the
# round would not end. The keys typed after q leave it out.
ROUNDS = [  # (lesson, or None for the workbench on its own; size; first keys; random events)
    ("params", (80, 24), ["w"], 160),  # the storm starts in the workbench opened from the lesson
    ("attention", (40, 10), [], 100),
    ("heads", (120, 40), ["c"], 120),  # from the code window: e opens a line that takes the keys after it
    ("positional", (80, 24), ["ctrl+p"], 80),
    (None, (80, 24), [], 100),
]


def draw_event(rng, size):
    """One event: a key (three times in four), or a click, double click or triple click somewhere."""
    if rng.random() < 0.75:
        return ("key", KEYS[rng.integers(len(KEYS))])
    return ("click", int(rng.integers(size[0])), int(rng.integers(size[1])), int(rng.integers(1, 4)))


async def storm_round(rng, lesson, size, first, events, state, seen: set) -> None:
    bench = Workbench.start("llama2-7b") if lesson is None else None
    app = make_app(lang=str(rng.choice(["en", "zh"])), lesson=lesson, state_dir=state, bench=bench)
    where = f"round {lesson or 'calc'} {size[0]}x{size[1]}"
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        raw_keys(app, *first)
        await until(pilot, lambda: app._held_keys is None)
        seen.add(type(app.screen).__name__ + ("" if lesson else " alone"))
        sent = 0
        while sent < events:
            burst = [draw_event(rng, size) for _ in range(int(rng.integers(1, 5)))]
            for event in burst:
                if event[0] == "key":
                    raw_keys(app, event[1])
                else:
                    raw_clicks(app, *event[1:])
            sent += len(burst)
            await asyncio.wait_for(pilot.pause(), 30)  # a hung app fails here instead of hanging the run
            assert app._exception is None and app.is_running, f"{where}, after event {sent}: {burst}"
            seen.add(type(app.screen).__name__ + ("" if lesson else " alone"))
        # The end of a round: back to the lesson (or stay in the workbench), quit, and keys typed after it.
        if lesson is not None:
            for _ in range(10):
                if isinstance(app.screen, LessonScreen) and not app.screen.editing:  # (q would be typed on the line)
                    break
                await asyncio.wait_for(pilot.press("escape"), 30)
                await until(pilot, lambda: app._held_keys is None)
            assert isinstance(app.screen, LessonScreen) and not app.screen.editing, \
                f"{where}: Esc does not lead back to the lesson"
        after = [key for key in (KEYS[i] for i in rng.integers(len(KEYS), size=3)) if key != "ctrl+p"]
        raw_keys(app, "q" if lesson is not None else "ctrl+q", *after)  # (see the note on ctrl+p above)

        async def quit_seen():
            while app.return_code is None:
                await asyncio.sleep(0.05)
        await asyncio.wait_for(quit_seen(), 30)
    assert app._exception is None and app.return_code == 0, where


async def test_storm_of_keys_and_clicks(tmp_path, monkeypatch):
    from engine import tiny
    from engine.records import replace
    monkeypatch.setitem(tiny.CONFIGS, "big", replace(tiny.CONFIGS["small"], steps=20))  # key 4 in heads trains
    rng = np.random.default_rng(SEED)
    seen = set()
    for i, (lesson, size, first, events) in enumerate(ROUNDS):
        await storm_round(rng, lesson, size, first, events, tmp_path / f"state{i}", seen)
    # what the storm reached, so that a change of keys or seed cannot quietly make it miss a screen
    assert {"LessonScreen", "WorkbenchScreen", "WorkbenchScreen alone", "Palette", "OverviewScreen", "HelpScreen",
            "CodeScreen"} <= seen, seen
