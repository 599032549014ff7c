"""The typing line (e) on a real pty, as a learner over SSH meets it: a number out of range refused on the line, one
in range applied and marked, a word the tiny model does not know refused with the words it does know, and a
whole line arriving in one burst (a fast typist, a terminal without bracketed paste) taken whole, though keys
are otherwise bounded at 16 on their way (tui/keys.py); each apply repaints under 6 KB."""

import pytest
from helpers.pty import FIRST, START_S, terminals

pytestmark = pytest.mark.slow  # the tour on a pty

MAX_BYTES_PER_KEY = 6 * 1024


def press_and_see(term, keys: bytes, needle: str) -> int:
    """Press `keys` in one write and wait for `needle`: where the output stood before them."""
    mark = term.mark()
    term.press(keys)
    term.wait_for(needle, mark)
    return mark


def close_and_open(term, hint: str) -> None:
    """Esc, then e once Esc has acted (an e within the escape delay would make Alt+e): the line opens empty."""
    press_and_see(term, b"\x1b", "Try 1")
    press_and_see(term, b"e", hint)


def test_a_number_typed_over_a_pty_is_refused_out_of_range_then_applied(tmp_path):
    with terminals(tmp_path / "state") as start:
        term = start("--lesson", "attention", "--lang", "en")
        term.wait_for(FIRST, timeout=START_S)
        press_and_see(term, b"e", "Type name=value")
        press_and_see(term, b"d=0\r", "d must be a whole number from 1 to")
        close_and_open(term, "Type name=value")
        mark = term.mark()
        term.press(b"d=64")
        term.wait_for("d=64", mark)
        mark = term.mark()
        term.press(b"\r")
        term.wait_for("[e] d 8 -> 64", mark)
        applied = len(term.raw(mark))
        term.press(b"q")
        status, _ = term.wait_exit(5)
        assert status == 0
    assert applied < MAX_BYTES_PER_KEY, applied


def test_a_burst_of_typing_arrives_whole_and_an_unknown_word_gets_suggestions(tmp_path):
    with terminals(tmp_path / "state") as start:
        term = start("--lesson", "sampling", "--lang", "en")
        term.wait_for("1/10", timeout=START_S)  # the sampling lesson: 9 steps and its recap
        press_and_see(term, b"e", "Type your own sentence")
        press_and_see(term, b"the kitten near the dogs\r",  # 25 keys in one write
                      "'kitten' is not one of the tiny model's 52 tokens; try")
        close_and_open(term, "Type your own sentence")
        mark = term.mark()
        sentence = b"the big cats near the small dog"  # 31 keys, then Enter, in one write
        term.press(sentence + b"\r")
        term.wait_for("[e] prompt -> the big cats near the small dog", mark)  # a long old value gives way
        term.press(b"q")
        status, _ = term.wait_exit(5)
        assert status == 0
