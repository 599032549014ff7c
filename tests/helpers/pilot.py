"""Driving the app under Pilot. Pilot's press and click wait for each event to be handled; a learner's fast keys
and double clicks do not: the driver queues them all before the first is handled. raw_keys and raw_clicks post
events as the driver does, all at once; until() waits for what they lead to."""

import asyncio

from textual.widgets import Input

from .screen import step_index


def raw_keys(app, *keys: str) -> None:
    """Queue key presses on the app the way the terminal driver does: without waiting for any."""
    from textual import events
    for key in keys:
        app.post_message(events.Key(key, "?" if key == "question_mark" else key if len(key) == 1 else None))


def raw_clicks(app, x: int, y: int, times: int) -> None:
    """Queue `times` clicks at one cell the way the driver does: a mouse down and up each; the app makes
    the Click (chained into a double or triple click) itself."""
    from textual import events
    for _ in range(times):
        for kind in (events.MouseDown, events.MouseUp):
            app.post_message(kind(None, x, y, 0, 0, 1, False, False, False, screen_x=x, screen_y=y))


async def until(pilot, condition) -> None:
    """Wait until condition() holds, the screen on top having handled its events; 30 s at most."""
    async def wait():
        await pilot.pause()
        while not condition():
            await pilot.pause(0.05)
    await asyncio.wait_for(wait(), 30)


async def settled(pilot) -> None:
    """Wait until no keys are held for a screen being built (see XfTourApp.hold_keys)."""
    await until(pilot, lambda: pilot.app._held_keys is None)


async def at(pilot, app, lesson: str, step: str):
    """Go to a step of a lesson, by their ids, as the palette does."""
    app.tour.goto(lesson, step_index(app, lesson, step))
    app.lesson_screen().arrived()
    await pilot.pause()


async def type_line(pilot, app, text: str):
    """e, the line set to `text`, Enter: as a learner types a setting or a sentence."""
    await pilot.press("e")
    await pilot.pause()
    app.lesson_screen().query_one("#editor", Input).value = text
    await pilot.press("enter")
    await pilot.pause()


async def at_trained_heads(app, pilot):
    """Open the heads lesson's step whose key 4 trains live; return the lesson screen and the step's index."""
    here = next(i for i, s in enumerate(app.tour.lesson.steps) if s.view == "tiny-heads")
    app.open_lesson("heads", here)
    await pilot.pause()
    return app.lesson_screen(), here
