"""Floods of keys: a paste of 200 KB over SSH, and what reaches the app from Textual's driver thread. Keys that
come faster than the tour can act are dropped (tui/keys.py): memory stays flat, q is answered at once after
the flood, and the screen says how many keys were dropped."""

import asyncio
import os
import threading
import time

import pytest
from helpers.marks import WALL_CLOCK
from helpers.pilot import raw_keys, until
from helpers.procs import status_kib
from helpers.pty import FIRST, START_S
from textual._xterm_parser import XTermParser
from textual.drivers.headless_driver import HeadlessDriver
from textual.geometry import Size

from tui.app import make_app
from tui.keys import HELD, MICE, PENDING, QUIET_S, gated, post_input
from tui.screens.lesson import LessonScreen

PASTE = b"np" * (100 * 1024)  # 200 KiB, as in the report
PEAK_MIB = 120  # the bound on the tour's resident memory through the paste
ANSWER_S = 1.0  # q is answered this soon after the paste has been written


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view[:4096]):]


@pytest.mark.slow
@WALL_CLOCK
def test_a_paste_of_200_kb_keeps_memory_flat_and_q_is_answered_at_once(terminal):
    term = terminal("--lesson", "attention", "--lang", "en")
    term.wait_for(FIRST, timeout=START_S)
    pid, peak, stop = term.proc.pid, [0], threading.Event()

    def watch() -> None:  # VmHWM is the kernel's own peak: the last reading before the end is the largest
        while not stop.wait(0.02):
            peak[0] = max(peak[0], status_kib(pid, "VmHWM") or 0)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        write_all(term.master, PASTE)  # as fast as the tour reads it
        pasted = time.monotonic()
        term.press(b"q")
        status, _ = term.wait_exit(10)
        answered = time.monotonic() - pasted
    finally:
        stop.set()
        watcher.join()
    assert status == 0, f"q not answered within 10 s of the paste (peak {peak[0] / 1024:.0f} MiB)"
    assert answered < ANSWER_S, f"q answered {answered:.2f} s after the paste"
    assert peak[0] / 1024 < PEAK_MIB, f"peak resident memory {peak[0] / 1024:.0f} MiB"


def flood(app, text: str) -> threading.Thread:
    """Send `text` to the app as the terminal driver's input thread does (parsed, gated, posted from a thread
    of its own), in a thread that is started and returned."""
    driver, parser = gated(HeadlessDriver)(app), XTermParser()
    thread = threading.Thread(target=post_input, args=(driver, parser, text), daemon=True)
    thread.start()
    return thread


async def test_a_flood_from_the_driver_is_bounded_and_said(state):
    app = make_app(lang="zh", lesson="attention", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        thread, most = flood(app, "np" * 20_000), 0
        while thread.is_alive():  # the app's queue: keys on their way, and the same keys back from the screen
            most = max(most, app._message_queue.qsize())
            await asyncio.sleep(0.002)
        keys = app.key_gate.keys
        assert keys.dropped > 39_000 and keys.posted == 40_000 - keys.dropped
        assert most <= 4 * PENDING, most
        message = app.screen.query_one("#message")
        await until(pilot, lambda: "丢掉了" in message.content.plain)
        assert f"丢掉了 {keys.dropped} 个" in message.content.plain
        assert app.key_gate.told == keys.dropped and isinstance(app.screen, LessonScreen)
        step = app.tour.step_index
        await pilot.press("n")  # the tour follows keys again, and the note goes with the next one
        assert app.tour.step_index == step + 1
        assert "丢掉了" not in message.content.plain
        thread = flood(app, "n" * 5_000 + "q")  # q is never dropped: it comes after the flood
        await until(pilot, lambda: app.return_code is not None)
    assert app.return_code == 0 and app._exception is None


async def test_a_flood_of_mouse_reports_is_bounded_and_costs_no_key(state):
    """A terminal reports every cell the pointer crosses; sent in a flood, the reports are bounded on their own
    (MICE), silently, and a key among them still arrives."""
    app = make_app(lang="en", lesson="attention", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        moves = "".join(f"\x1b[<35;{10 + i % 50};{5 + i % 10}M" for i in range(5_000))
        thread, most = flood(app, moves + "n" + moves), 0
        while thread.is_alive():
            most = max(most, app._message_queue.qsize())
            await asyncio.sleep(0.002)
        mice = app.key_gate.mice
        assert mice.dropped > 5_000 and most <= 2 * (MICE + PENDING), (mice.dropped, most)
        await until(pilot, lambda: app.tour.step_index == 1)  # the n
        assert app.key_gate.dropped() == 0 and app._exception is None


async def test_keys_held_while_the_workbench_opens_are_bounded(state):
    """w and then a burst of keys at once: the keys held while the workbench is built are bounded by HELD, and
    the workbench, which has no message lines, says in a notification how many were dropped."""
    app = make_app(lang="en", lesson="params", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        longest, deadline = 0, time.monotonic() + 30
        raw_keys(app, "w", *(["1"] * 500))
        while type(app.screen).__name__ != "WorkbenchScreen" or app._held_keys is not None:
            longest = max(longest, len(app._held_keys or []))
            assert time.monotonic() < deadline, "the workbench did not open"
            await asyncio.sleep(0)
        assert longest <= HELD and app.key_gate.held_dropped >= 500 - HELD
        await asyncio.sleep(QUIET_S)
        await until(pilot, lambda: any("were dropped" in n.message for n in app._notifications))
        assert type(app.screen).__name__ == "WorkbenchScreen" and app._exception is None


# --- what else a terminal or a browser can send: sizes, focus reports, pastes, escape sequences ---------------

async def test_a_terminal_that_says_it_is_huge_is_laid_out_at_the_bound(state):
    """An in-band size report typed by hand (20,000 x 20,000 took 5 GB) and a browser's resize whose sides are
    not numbers: the first is laid out at MAX_SIZE, the second is dropped, and the tour runs on."""
    from textual import events

    from tui.keys import MAX_SIZE

    app = make_app(lang="en", lesson="attention", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        flood(app, "\x1b[48;20000;20000;0;0t").join()
        await until(pilot, lambda: app.size != (80, 24))
        assert app.size == MAX_SIZE and app.screen.size == MAX_SIZE
        app.post_message(events.Resize(("x", -5), ("x", -5)))
        app.post_message(events.Resize(Size(0, -3), Size(0, -3)))
        await until(pilot, lambda: app.size == (1, 1))  # "too small": then a true size again
        app.post_message(events.Resize(Size(80, 24), Size(80, 24)))
        await until(pilot, lambda: app.size == (80, 24))
        await pilot.press("n")
        assert app.tour.step_index == 1 and app._exception is None


async def test_a_flood_of_focus_reports_is_bounded(state):
    """Focus-in and focus-out reports (ESC [ I, ESC [ O) are neither keys nor mouse reports: they have a bound of
    their own, and a key after them still arrives."""
    from tui.keys import OTHERS

    app = make_app(lang="en", lesson="attention", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        thread, most = flood(app, "\x1b[I\x1b[O" * 20_000 + "n"), 0
        while thread.is_alive():
            most = max(most, app._message_queue.qsize())
            await asyncio.sleep(0.002)
        others = app.key_gate.others
        assert others.dropped > 30_000 and most <= 2 * (OTHERS + PENDING), (others.dropped, most)
        await until(pilot, lambda: app.tour.step_index == 1)
        assert app._exception is None


async def test_a_paste_never_closed_ends_at_the_bound_and_q_still_quits(state):
    """An opened bracketed paste that never closes grew without end and swallowed the q that would end it: it
    is closed after PASTE characters, and what follows is keys."""
    from textual import events

    from tui.keys import PASTE

    app = make_app(lang="en", lesson="attention", state_dir=state)
    pastes, receive = [], app.key_gate.receive

    def received(event) -> None:  # what reaches the app
        if isinstance(event, events.Paste):
            pastes.append(event.text)
        receive(event)

    app.key_gate.receive = received
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        flood(app, "\x1b[200~" + "n" * 50_000).join()
        flood(app, "q").join()
        await until(pilot, lambda: app.return_code is not None)
    assert app.return_code == 0 and app._exception is None
    assert pastes and len(pastes[0]) == PASTE, [len(x) for x in pastes]


async def test_a_flood_of_short_pastes_is_bounded(state):
    app = make_app(lang="en", lesson="attention", state_dir=state)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        thread, most = flood(app, "\x1b[200~n\x1b[201~" * 20_000 + "q"), 0
        while thread.is_alive():
            most = max(most, app._message_queue.qsize())
            await asyncio.sleep(0.002)
        assert app.key_gate.keys.dropped > 19_000 and most <= 4 * PENDING, most
        await until(pilot, lambda: app.return_code is not None)
    assert app.return_code == 0 and app._exception is None


async def test_keys_sent_as_escape_sequences_are_thinned_too(state):
    """Arrows, mouse reports and sequences the parser gives up on: in a flood they are dropped before the
    parser, so a q after them is not kept waiting behind them."""
    from tui.keys import OTHERS

    app = make_app(lang="en", lesson="attention", state_dir=state)
    junk = "\x1b[A\x1b[<0;10;10M\x1b[999;999;999;999;999;999;999;999\x1b]0;x\x07\x1bP\x1b[1;5C"
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        thread, most = flood(app, junk * 20_000), 0
        while thread.is_alive():
            most = max(most, app._message_queue.qsize())
            await asyncio.sleep(0.002)
        gate = app.key_gate
        assert gate.keys.dropped > 60_000 and most <= 2 * (PENDING + MICE + OTHERS), (gate.keys.dropped, most)
        flood(app, "q").join()
        await until(pilot, lambda: app.return_code is not None)
    assert app.return_code == 0 and app._exception is None


def test_the_sieve_finds_paste_marks_cut_between_two_reads():
    """A paste mark split between two reads still opens and closes the bound's paste, as it does the parser's."""
    from tui.keys import PASTE, PASTE_END, KeyGate

    sieve = KeyGate(app=None).sieve
    assert sieve.bound_paste("ab\x1b[2") == "ab\x1b[2" and not sieve.pasting
    assert sieve.bound_paste("00~xyz") == "00~xyz" and sieve.pasting and sieve.pasted == 3
    out = sieve.bound_paste("n" * PASTE)
    assert out == "n" * (PASTE - 3) + PASTE_END + "nnn" and not sieve.pasting
    sieve.bound_paste("\x1b[200~ab\x1b")
    assert sieve.pasting and sieve.bound_paste("[201~q") == "[201~q" and not sieve.pasting
