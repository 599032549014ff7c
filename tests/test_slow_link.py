"""Slow links: the tour on a real pty (tests/helpers/pty.py's Terminal), keys whose bytes arrive in separate
packets, and the colours written for TERM=linux, TERM=xterm-256color and NO_COLOR.

Textual reads an escape sequence's bytes for ESCDELAY ms (its default: 100) after the ESC before it takes
the ESC for the Escape key; over SSH (SSH_CONNECTION set) the command line makes that 400 ms
(tui/cli/__init__.py: ssh_escape_delay). The pauses below are the deliberate gaps between the packets of one
key, not waits for the app: what the app does is read from the screen, with a deadline."""

import re
import time

import pytest
from helpers.marks import WALL_CLOCK
from helpers.pty import FIRST, SECOND, START_S

pytestmark = [pytest.mark.slow, WALL_CLOCK]  # the tour on a pty; escape delays read off the clock

SSH = {"SSH_CONNECTION": "192.0.2.7 50022 192.0.2.1 22"}  # what sshd sets: client address and port, server's
DEFAULT_DELAY_S, SSH_DELAY_S = 0.100, 0.400
SCALED = "Scaled beside unscaled"  # the attention lesson's fifth step: heatmaps of softmax weights
STEPS = (SECOND, "with the real softmax", "The causal mask on", SCALED)  # the titles after each n
HELP_END = "close a window such as this one"  # the help's last line
UNDER_HELP = "Three learned matrices"  # the first step's prose, hidden while the help is open


def start(terminal, env=None):
    term = terminal("--lesson", "attention", "--lang", "en", env=env)
    term.wait_for(FIRST, timeout=START_S)
    return term


def split_key(term, first: bytes, rest: bytes, gap: float) -> int:
    """Send one key as two packets `gap` seconds apart; the mark before it."""
    mark = term.mark()
    term.press(first)
    time.sleep(gap)  # the deliberate split between two packets of one key
    term.press(rest)
    return mark


def test_an_arrow_split_inside_the_default_delay_is_one_key(terminal):
    term = start(terminal)
    mark = split_key(term, b"\x1b[", b"C", 0.3 * DEFAULT_DELAY_S)  # Right: ESC [ C
    term.wait_for(SECOND, mark)
    mark = split_key(term, b"\x1b", b"[D", 0.3 * DEFAULT_DELAY_S)  # Left, split after the ESC
    term.wait_for(FIRST, mark)


def test_over_ssh_an_arrow_split_longer_than_the_default_delay_is_one_key(terminal):
    """A gap of 250 ms, which the default 100 ms would read as Escape, then "[", then "C"."""
    term = start(terminal, env=SSH)
    gap = 2.5 * DEFAULT_DELAY_S
    assert gap < SSH_DELAY_S
    mark = split_key(term, b"\x1b[", b"C", gap)
    term.wait_for(SECOND, mark)
    mark = split_key(term, b"\x1b", b"[D", gap)
    term.wait_for(FIRST, mark)


def lone_escape(term) -> float:
    """Open the help, close it with an Escape that arrives alone, then press n: the Escape acts on its own
    (the help closes), and the n after it is a key of its own (the next step), not Alt+n. The seconds the
    Escape took to act."""
    mark = term.mark()
    term.press(b"?")
    term.wait_for(HELP_END, mark)
    mark = term.mark()
    term.press(b"\x1b")
    took = term.wait_for(UNDER_HELP, mark)
    mark = term.mark()
    term.press(b"n")
    term.wait_for(SECOND, mark)
    return took


def test_a_lone_escape_is_not_glued_to_the_next_key(terminal):
    took = lone_escape(start(terminal))
    assert took >= DEFAULT_DELAY_S  # it waited for the rest of a sequence that never came


def test_over_ssh_a_lone_escape_waits_the_longer_delay_and_still_acts_alone(terminal):
    took = lone_escape(start(terminal, env=SSH))
    assert took >= SSH_DELAY_S


# --- colours --------------------------------------------------------------------------------------

SGR = re.compile(rb"\x1b\[([0-9;]*)m")


def colours(written: bytes):
    """Every colour set by the SGR escapes in `written`, as ("16", n), ("256", n) or ("rgb", r, g, b)."""
    found = set()
    for params in SGR.findall(written):
        codes = [int(c) if c else 0 for c in params.split(b";")]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c in (38, 48) and i + 1 < len(codes) and codes[i + 1] == 5:
                found.add(("256", codes[i + 2]))
                i += 3
                continue
            if c in (38, 48) and i + 1 < len(codes) and codes[i + 1] == 2:
                found.add(("rgb", *codes[i + 2:i + 5]))
                i += 5
                continue
            if 30 <= c <= 37 or 40 <= c <= 47:
                found.add(("16", c % 10))
            elif 90 <= c <= 97 or 100 <= c <= 107:
                found.add(("16", c % 10 + 8))
            i += 1
    return found


def grey(colour) -> bool:
    """Whether a colour has no hue: black, white, a grey (the 16 colours' 0, 7, 8, 15; the 256 colours'
    16, 231 and ramp 232-255, and the cube's r = g = b)."""
    kind, *value = colour
    if kind == "16":
        return value[0] in (0, 7, 8, 15)
    if kind == "256":
        n = value[0]
        if n < 16:
            return n in (0, 7, 8, 15)
        if n >= 232:
            return True
        n -= 16
        return n // 36 == (n // 6) % 6 == n % 6
    return value[0] == value[1] == value[2]


def scaled_step(terminal, env) -> bytes:
    """Everything the tour wrote on the way to the attention lesson's "scaled" step, on a pty with `env`."""
    term = start(terminal, env=env)
    for title in STEPS:
        mark = term.mark()
        term.press(b"n")
        term.wait_for(title, mark)
    return term.raw()


def test_term_linux_gets_sixteen_colours_only(terminal):
    written = scaled_step(terminal, {"TERM": "linux"})
    for escape in (b"38;5;", b"48;5;", b"38;2;", b"48;2;"):
        assert escape not in written
    found = colours(written)
    assert found and all(kind == "16" for kind, *_ in found)
    # the heatmap's 16-colour shading (tui/heat.py, "ansi"): black text on bright cyan, green, yellow
    assert {("16", 14), ("16", 10), ("16", 11)} <= found
    assert re.search(rb"\x1b\[(?:1;)?30;10[236]m", written)


def test_xterm_256color_gets_shaded_heatmaps(terminal):
    """The "color" shading: each weight's cell black or white text (16, 231) on a shade of its own."""
    written = scaled_step(terminal, {"TERM": "xterm-256color"})
    assert all(kind != "rgb" for kind, *_ in colours(written))  # 256 colours asked for, 256 given
    shades = {int(bg) for fg, bg in re.findall(rb"\x1b\[(?:1;)?38;5;(16|231);48;5;(\d+)m", written)}
    assert len({bg for bg in shades if not grey(("256", bg))}) >= 6, shades


def test_no_color_has_no_hue_anywhere(terminal):
    """NO_COLOR: Textual still paints its theme, in greys; the heatmaps mark cells with bold, dim and
    reverse only, so no escape the tour writes has a hue."""
    found = colours(scaled_step(terminal, {"TERM": "xterm-256color", "NO_COLOR": "1"}))
    assert found and all(grey(c) for c in found), sorted(c for c in found if not grey(c))
