"""Input that comes faster than the tour can act on it: bounds, a note that keys were dropped, a bound on the
size the tour lays itself out at, and an end when the input itself ends.

Textual's driver reads the terminal in a thread of its own and posts every key, mouse report, paste, focus
change and resize it parses to the app's message queue, which has no bound, and every n or p redraws the
page. A paste of 200 KB of `np` (a learner can send one with `ssh -tt host < file`; a browser sends one in
a websocket frame) queued keys far faster than the tour drew them: its memory passed 800 MB and q waited
behind them all. So the driver posts an event only while fewer than a bound of its kind are on their way to
the app (Lane: keys and pastes, mouse reports, everything else); beyond it the event is dropped, unless it
quits, and once the flood is over the screen says how many keys were. Parsing costs about 10 µs a key, so
while any kind is at its bound the text is thinned before the parser as well (Sieve.thin). A bracketed
paste is closed after PASTE characters, and what follows comes as keys: an unclosed paste would grow for
ever and swallow the q that ends it. Keys held while a screen is built (XfTourApp.hold_keys) have a bound
of their own, HELD.

A terminal may say it is any size (a window, an SSH window-change, an in-band report typed by hand, a
browser's resize frame): the tour lays itself out at most MAX_SIZE, in the top left corner (bounded_resize).
At 20,000 x 20,000 it took 5 GB.

The drivers here are Textual 8.2's, with their input loops (run_input_thread) written again around the
gate. They also end the tour when its input ends: Textual's Linux driver spins on end-of-file, and its web
driver (`xf-tour serve`) stops reading and leaves the tour running, its pipes gone, and takes SIGTERM for
an exit that does not save.
"""

import re
import time

from textual import events
from textual.geometry import Size

PENDING = 16   # keys and pastes posted to the app and not yet arrived, beyond which one that does not quit is dropped
TYPING = 224   # the same while the learner types a line (e): a burst of typed text is as long as the line, 200
MICE = 32      # mouse reports posted and not yet arrived, beyond which one is dropped (without a note: a
#                terminal sends one for every cell the pointer crosses, and the next one says where it is)
OTHERS = 32    # other events (focus changes, resizes, replies) posted and not yet arrived, the same
HELD = 32      # keys held while a screen is built, beyond which a key that does not quit is dropped
LIMIT = 256    # beyond this many, even a quitting key is dropped: nothing grows without bound
QUITS = frozenset({"q", "ctrl+c", "ctrl+q"})  # never dropped below LIMIT: a flood must not keep the learner in
QUIET_S = 0.3  # no key for this long: the flood is over, and the note that keys were dropped is said
MAX_SIZE = Size(500, 200)  # the largest the tour lays itself out: wider than any screen's terminal, 100,000 cells
PASTE = 4096   # characters of one bracketed paste; beyond them it is closed, and the rest comes as keys
SLICE = 1024   # characters fed to the parser at a time, the gate looked at before each
ESC = "\x1b"
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
SEQUENCE = 33  # an escape sequence is over by then: Textual's parser gives up on one of 33 characters, ESC included
NOT_QUITTING = re.compile(r"[^q\x03\x11]+")  # what a flood's plain text holds besides q, Ctrl+C and Ctrl+Q
# a whole escape sequence: CSI (arrows, function keys, mouse, focus, replies), SS3, or Alt and one key
WHOLE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|O[ -~]|[^\[O\x1b])")
# the whole sequences each lane's flood takes out before the parser: keys (but paste marks, in-band sizes,
# mouse and focus reports), mouse reports, focus reports; a piece's in-band sizes but its last, which says
# the size. Paste marks stay: the parser's paste and the bound's must agree.
KEY_SEQUENCES = re.compile(r"\x1b(?:\[(?!20[01]~|48;|<|[IO])[0-?]*[ -/]*[@-~]|O[ -~]|[^\[O\x1b])")
MOUSE = re.compile(r"\x1b\[<[0-9;]*[Mm]")
FOCUS = re.compile(r"\x1b\[[IO]")
SIZES = re.compile(r"\x1b\[48;[0-9:;]*t")
KEEP = re.compile(r"\x1b\[(?:20[01]~|48;[0-9:;]*t)")  # paste marks and sizes
PASTES = re.compile(r"\x1b\[200~.*?\x1b\[201~", re.DOTALL)  # a whole paste, thinned whole in a flood


class Lane:
    """Events of one kind (keys and pastes, mouse reports, or the rest) on their way from the driver's thread
    to the app, at most `bound` at a time. Each counter has one writer: `posted` and `dropped` the driver's
    thread, `arrived` the app's loop."""

    def __init__(self, bound: int):
        self.bound = bound
        self.posted = 0   # events posted; each carries its lane and number (_gate)
        self.arrived = 0  # the number of the last posted event the app has received
        self.dropped = 0  # events dropped
        self.hot_until = 0.0  # time.monotonic() until which the lane counts as flooded: QUIET_S after a drop

    def pending(self) -> int:
        """Events posted that the app has not received yet."""
        return self.posted - self.arrived

    def flooded(self) -> bool:
        """Whether the lane is full, or dropped an event less than QUIET_S ago: a flood is thinned until it has
        stopped, not only while the lane is full (between, the parser would take it all again)."""
        return self.pending() >= self.bound or time.monotonic() < self.hot_until

    def drop(self, n: int = 1) -> None:
        """Count `n` events dropped, in the driver's thread."""
        if n:
            self.dropped += n
            self.hot_until = time.monotonic() + QUIET_S

    def admit(self, event, always: bool = False) -> bool:
        """In the driver's thread: number `event` and say to post it, or count it dropped. One that `always`
        goes is dropped only beyond LIMIT."""
        pending = self.posted - self.arrived
        if pending >= LIMIT or (pending >= self.bound and not always):
            self.drop()
            return False
        self.posted += 1
        event._gate = (self, self.posted)
        return True

    def receive(self, number: int) -> None:
        """In the app's loop: event `number` arrived (first from the driver, or back from the screen it went
        to). One the app never received (posted as the app closed) is passed over by the next one's number."""
        self.arrived = max(self.arrived, number)


class Sieve:
    """What the driver's thread reads, before the parser sees it: a bracketed paste closed after PASTE
    characters (bound_paste), and, while a lane is full, every character that could only be an event the lane
    would drop taken out (thin). Counts what it takes out in the gate's lanes."""

    def __init__(self, gate: "KeyGate"):
        self.gate = gate
        self.since_escape = SEQUENCE  # characters read since the last ESC, up to SEQUENCE
        self.pasting = False  # within a bracketed paste, as the parser will be
        self.pasted = 0       # characters of that paste so far
        self.tail = ""        # the last characters read before: a paste mark may begin there

    def pieces(self, text: str):
        """`text` in slices for the parser, each with its paste bounded and, in a flood, thinned."""
        for start in range(0, len(text), SLICE):
            piece = self.bound_paste(text[start:start + SLICE])
            kept = self.thin(piece) if self.gate.flooding() else piece
            at = piece.rfind(ESC)
            self.since_escape = min(SEQUENCE, len(piece) - at - 1 if at >= 0 else self.since_escape + len(piece))
            if kept:
                yield kept

    def bound_paste(self, piece: str) -> str:
        """`piece` with a paste mark put in to end a paste that has reached PASTE characters: what comes after
        is parsed as keys, which the gate bounds (a paste never closed would grow without end, and a q typed
        after it would be pasted, not pressed). A mark may have begun in the piece before (the tail)."""
        off = len(self.tail)
        text = self.tail + piece
        self.tail = text[-(len(PASTE_START) - 1):]
        out, done, at = [], off, 0  # text[off:done] is in out; marks are looked for from `at`
        counted = off  # the paste's characters before this are counted in self.pasted
        while True:
            if not self.pasting:
                m = text.find(PASTE_START, at)
                if m < 0:
                    break
                self.pasting, self.pasted = True, 0
                at = counted = m + len(PASTE_START)
                continue
            m = text.find(PASTE_END, at)
            stop = len(text) if m < 0 else max(m, counted)
            if self.pasted + stop - counted > PASTE:
                cut = counted + PASTE - self.pasted
                out.append(text[done:cut] + PASTE_END)
                self.pasting, done, at, counted = False, cut, cut, cut
                continue
            self.pasted += stop - counted
            if m < 0:
                break
            self.pasting = False
            at = counted = m + len(PASTE_END)
        out.append(text[done:])
        return "".join(out)

    def thin(self, piece: str) -> str:
        """`piece` without what can only be events that a flooded lane would drop: while keys are flooded,
        whole pastes, key sequences and plain characters but q, Ctrl+C and Ctrl+Q; while mouse reports or the
        rest are, theirs. Paste marks stay, and so do the SEQUENCE characters after an ESC at either end, which
        may belong to a sequence cut in two. Whole sequences go by regular expression, in one pass each."""
        gate = self.gate
        keys = gate.keys if gate.keys.flooded() else None

        def take(pattern: re.Pattern, lane: Lane, text: str, keep_last: bool = False) -> str:
            count = len(pattern.findall(text)) - keep_last if keep_last else 0
            text, n = pattern.subn("", text, count=count) if keep_last else pattern.subn("", text)
            lane.drop(n)
            return text

        if keys is not None:
            piece = take(KEY_SEQUENCES, keys, take(PASTES, keys, piece))
        if gate.mice.flooded():
            piece = take(MOUSE, gate.mice, piece)
        if gate.others.flooded():
            piece = take(FOCUS, gate.others, piece)
            if len(SIZES.findall(piece)) > 1:
                piece = take(SIZES, gate.others, piece, keep_last=True)
        if keys is None:
            return piece

        def stays(seq: str) -> bool:
            """A paste mark, a size, or a mouse or focus report whose lane is not flooded."""
            return bool(KEEP.fullmatch(seq) or MOUSE.fullmatch(seq) and not gate.mice.flooded()
                        or FOCUS.fullmatch(seq) and not gate.others.flooded())

        def plain(part: str) -> str:
            quits = NOT_QUITTING.sub("", part)
            keys.drop(len(part) - len(quits))
            return quits

        first, *rest = piece.split(ESC)  # what is left of the sequences: few, once a lane's have gone
        keep = max(0, SEQUENCE - self.since_escape)  # it goes on from the piece before
        out = [first[:keep] + plain(first[keep:])]
        for i, part in enumerate(rest):
            m = WHOLE.match(ESC + part)
            if m is not None and stays(m.group()):
                out.append(m.group() + plain(part[m.end() - 1:]))
            elif m is not None:  # made by taking out what stood between an ESC and what follows
                keys.drop()
                out.append(plain(part[m.end() - 1:]))
            elif i == len(rest) - 1:  # it may go on in the next piece
                out.append(ESC + part[:SEQUENCE] + plain(part[SEQUENCE:]))
            else:  # a sequence the parser would give up on and type out as keys
                keys.drop()
                out.append(plain(part))
        return "".join(out)


class KeyGate:
    """Keys, pastes, mouse reports and the driver's other events on their way from its thread to the app: those
    beyond the bounds are dropped, and the learner told of the keys (tell). The sieve is the driver's
    thread's, the timer and the counts of held keys the app's loop's."""

    def __init__(self, app):
        self.app = app
        self.keys = Lane(PENDING)
        self.mice = Lane(MICE)  # a flood of mouse reports never costs a key
        self.others = Lane(OTHERS)
        self.sieve = Sieve(self)
        self.held_dropped = 0  # keys dropped from a full hold
        self.told = 0          # dropped keys the learner has been told of
        self.last_key = 0.0    # time.monotonic() when the app last received a key
        self._timer = None     # the timer that says the note once the keys stop (tell)

    def typing(self, on: bool) -> None:
        """While a line is open for typing, a burst of keys as long as the line goes through whole: each key
        only adds a character to the line. The bound is an int, read by the driver's thread as it stands."""
        self.keys.bound = TYPING if on else PENDING

    def dropped(self) -> int:
        """Keys dropped so far, on their way or from a hold."""
        return self.keys.dropped + self.held_dropped

    def flooding(self) -> bool:
        """Whether a lane is flooded: the sieve thins what comes next."""
        return self.keys.flooded() or self.mice.flooded() or self.others.flooded()

    def admit(self, message) -> bool:
        """In the driver's thread: whether to post `message` to the app. A message that is not an event (a
        terminal's reply to a query) is rare and small, and goes."""
        if isinstance(message, (events.Key, events.Paste)):
            return self.keys.admit(message, always=getattr(message, "key", None) in QUITS)
        if isinstance(message, events.MouseEvent):
            return self.mice.admit(message)
        if isinstance(message, events.Event):
            return self.others.admit(message)
        return True

    def receive(self, event: events.Event) -> None:
        """In the app's loop: an event has arrived; one the gate posted counts in its lane (Lane.receive)."""
        lane, number = getattr(event, "_gate", (None, 0))
        if lane is not None:
            lane.receive(number)
        if isinstance(event, (events.Key, events.Paste)):  # the gate's, or held keys a screen gives back
            self.last_key = time.monotonic()
            if self.dropped() > self.told and self._timer is None:
                self._timer = self.app.set_timer(QUIET_S, self.tell)

    def hold(self, held: list, key: events.Key) -> None:
        """Keep `key` in `held` (keys held while a screen is built), unless HELD are held and it does not quit."""
        if len(held) >= LIMIT or (len(held) >= HELD and key.key not in QUITS):
            self.held_dropped += 1
        else:
            held.append(key)

    def tell(self) -> None:
        """Once no key has come for QUIET_S, say how many were dropped: on the lesson's message lines, or in a
        notification over a screen that has none. Until then, look again later."""
        self._timer = None
        app = self.app
        quiet = time.monotonic() - self.last_key
        if app.ending:
            return
        if quiet < QUIET_S or self.keys.pending() > 0:
            self._timer = app.set_timer(QUIET_S - min(quiet, QUIET_S) + 0.05, self.tell)
            return
        from .i18n import t
        from .screens.lesson import LessonScreen

        dropped = self.dropped()
        text = t("keys_dropped", app.tour.lang, n=dropped - self.told)
        self.told = dropped
        if isinstance(app.screen, LessonScreen):
            app.screen.say(tail=text)
        else:
            app.notify(text, timeout=5)


def bounded_resize(event: events.Resize) -> bool:
    """Make a terminal's resize one the tour can lay out: each side a whole number from 1 to MAX_SIZE's, set
    in `event` itself. False for one whose sides are not whole numbers (a browser may send anything): drop it."""
    try:
        width, height = event.size
    except (TypeError, ValueError):
        return False
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (width, height)):
        return False
    size = Size(min(max(width, 1), MAX_SIZE.width), min(max(height, 1), MAX_SIZE.height))
    event.size = event.virtual_size = event.container_size = size
    return True


def gated(driver_class):
    """`driver_class` (Textual's driver for this terminal) with the app's KeyGate on its input, and an end when
    the input ends; a driver of another kind than Linux's or the web's only has the gate on what it posts.
    (Known by name: importing the web driver to compare would slow every start.)"""
    loops = {"textual.drivers.web_driver.WebDriver": _WebInput,
             "textual.drivers.linux_driver.LinuxDriver": _LinuxInput}
    names = (f"{c.__module__}.{c.__qualname__}" for c in driver_class.__mro__)
    loop = next((loops[name] for name in names if name in loops), _Gated)
    return type(f"Gated{driver_class.__name__}", (loop, driver_class), {"__module__": __name__})


def post_input(driver, parser, text: str) -> None:
    """In the driver's thread: parse what the terminal sent and post it to the app, through the app's gate."""
    for piece in driver._app.key_gate.sieve.pieces(text):
        for event in parser.feed(piece):
            driver.process_message(event)


def end_of_input() -> None:
    """The input has ended (a hung-up terminal, the server's pipe closed): the tour ends as after a hang-up,
    saving its place (tui/hangup.py), from whatever thread sees it."""
    import signal
    import threading

    signal.pthread_kill(threading.main_thread().ident, signal.SIGHUP)


class _Gated:
    """What every gated driver does: post a key only if the app's gate admits it."""

    def send_message(self, message) -> None:
        """Post `message` to the app, unless it is a key that the app's gate drops."""
        if self._app.key_gate.admit(message):
            super().send_message(message)


class _LinuxInput(_Gated):
    """Textual 8.2's LinuxDriver input loop, with the gate; at end-of-file (where Textual's loop would spin)
    or a read error, reading stops and the tour ends."""

    def run_input_thread(self) -> None:
        """Read the terminal and post what it parses to the app, until the driver stops or the input ends."""
        import os
        import selectors
        from codecs import getincrementaldecoder

        from textual._parser import ParseError
        from textual._xterm_parser import XTermParser

        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        ended = False
        try:
            while not self.exit_event.is_set() and not ended:
                if selector.select(0.1):
                    try:
                        data = os.read(self.fileno, 4096)
                    except OSError:
                        data = b""
                    ended = not data
                    post_input(self, parser, decode(data, final=ended))
                for event in parser.tick():
                    self.process_message(event)
        finally:
            selector.close()
            try:
                for event in parser.feed(""):
                    pass
            except (EOFError, ParseError):
                pass
        if ended and not self.exit_event.is_set():
            end_of_input()


class _WebInput(_Gated):
    """Textual 8.2's WebDriver input loop (its stdin carries the browser's keys in packets from textual-serve),
    with the gate; when stdin ends or stdout breaks (the server is gone), the tour ends. SIGINT and SIGTERM
    stay with run_tour(), which saves the place: Textual's web driver takes them for an exit that does not."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        write, self._broken = self._write, False

        def write_or_end(data: bytes) -> None:
            if self._broken:
                return
            try:
                write(data)
            except OSError:  # EPIPE: the server is gone; what is written after goes nowhere
                self._broken = True
                end_of_input()

        self._write = write_or_end

    def start_application_mode(self) -> None:
        """Textual's, then the signal handlers it took back to where they were."""
        import asyncio
        import signal

        kept = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
        super().start_application_mode()
        loop = asyncio.get_running_loop()
        for number, handler in kept.items():
            loop.remove_signal_handler(number)
            signal.signal(number, handler)

    def on_meta(self, packet_type: str, payload: dict) -> None:
        """Textual's, but a resize, a focus and a blur go through the gate (Textual posts them straight to the
        app, where a flood of them queued without bound), and a resize's sides must be numbers."""
        if packet_type not in ("resize", "focus", "blur"):
            super().on_meta(packet_type, payload)
            return
        if packet_type == "resize":
            event = events.Resize(Size(0, 0), Size(0, 0))
            event.size = event.virtual_size = (payload.get("width"), payload.get("height"))
            if not bounded_resize(event):
                return
            self._size = tuple(event.size)
        else:
            event = events.AppFocus() if packet_type == "focus" else events.AppBlur()
        self.process_message(event)

    def run_input_thread(self) -> None:
        """Read the server's packets: keys to the parser, the rest to on_meta; until the driver stops or stdin
        ends."""
        from codecs import getincrementaldecoder

        from textual import log
        from textual._xterm_parser import XTermParser
        from textual.drivers._byte_stream import ByteStream
        from textual.drivers.web_driver import _ExitInput

        parser = XTermParser(debug=self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        stream = ByteStream()
        try:
            for data in self._input_reader:
                for kind, payload in stream.feed(data) if data else ():
                    if kind != "D":
                        self._on_meta(kind, payload)
                        continue
                    post_input(self, parser, decode(payload))
                for event in parser.tick():
                    self.process_message(event)
        except _ExitInput:
            pass
        except Exception:
            from traceback import format_exc
            log(format_exc())
        finally:
            self._input_reader.close()
        if not self.exit_event.is_set():  # the reader stopped at end-of-file: the server is gone
            end_of_input()
