"""Keys that come faster than the tour can act on them: a bound, a note that some were dropped, and an end
when the input itself ends.

Textual's driver reads the terminal in a thread of its own and posts every key it parses to the app's
message queue, which has no bound, and every n or p redraws the page. A paste of 200 KB of `np` (a learner
can send one with `ssh -tt host < file`; a browser sends one in a websocket frame) queued keys far faster
than the tour drew them: its memory passed 800 MB and q waited behind them all. So the driver posts a key
only while fewer than PENDING are on their way to the app (KeyGate.admit); a key beyond that is dropped,
unless it quits, and once the flood is over the screen says how many were. Parsing costs about 10 µs a
key, so while keys are being dropped the text is thinned before the parser as well (KeyGate.thin). Keys
held while a screen is built (XfTourApp.hold_keys) have a bound of their own, HELD.

The drivers here are Textual 8.2's, with their input loops (run_input_thread) written again around the
gate. They also end the tour when its input ends: Textual's Linux driver spins on end-of-file, and its web
driver (`xf-tour serve`) stops reading and leaves the tour running, its pipes gone, and takes SIGTERM for
an exit that does not save.
"""

import re
import time

from textual import events

PENDING = 16   # keys posted to the app and not yet arrived, beyond which a key that does not quit is dropped
MICE = 32      # mouse reports posted and not yet arrived, beyond which one is dropped (without a note: a
#                terminal sends one for every cell the pointer crosses, and the next one says where it is)
HELD = 32      # keys held while a screen is built, beyond which a key that does not quit is dropped
LIMIT = 256    # beyond this many, even a quitting key is dropped: nothing grows without bound
QUITS = frozenset({"q", "ctrl+c", "ctrl+q"})  # never dropped below LIMIT: a flood must not keep the learner in
QUIET_S = 0.3  # no key for this long: the flood is over, and the note that keys were dropped is said
SLICE = 1024   # characters fed to the parser at a time, the gate looked at before each
ESC = "\x1b"
SEQUENCE = 33  # an escape sequence is over by then: Textual's parser gives up on one of 33 characters, ESC included
NOT_QUITTING = re.compile(r"[^q\x03\x11]+")  # what a flood's plain text holds besides q, Ctrl+C and Ctrl+Q


class Lane:
    """Events of one kind (keys, or mouse reports) on their way from the driver's thread to the app, at most
    `bound` at a time. Each counter has one writer: `posted` and `dropped` the driver's thread, `arrived` the
    app's loop."""

    def __init__(self, bound: int):
        self.bound = bound
        self.posted = 0   # events posted; each carries its number (_gate_number)
        self.arrived = 0  # the number of the last posted event the app has received
        self.dropped = 0  # events dropped

    def pending(self) -> int:
        """Events posted that the app has not received yet."""
        return self.posted - self.arrived

    def admit(self, event, always: bool = False) -> bool:
        """In the driver's thread: number `event` and say to post it, or count it dropped. One that `always`
        goes is dropped only beyond LIMIT."""
        pending = self.posted - self.arrived
        if pending >= LIMIT or (pending >= self.bound and not always):
            self.dropped += 1
            return False
        self.posted += 1
        event._gate_number = self.posted
        return True

    def receive(self, event) -> None:
        """In the app's loop: `event` arrived (first from the driver, or back from the screen it went to). One
        the app never received (posted as the app closed) is passed over by the next one's number."""
        self.arrived = max(self.arrived, getattr(event, "_gate_number", 0))


class KeyGate:
    """Keys and mouse reports on their way from the driver's thread to the app: those beyond the bounds are
    dropped, and the learner told of the keys (tell). `since_escape` is the driver's thread's, the timer and
    the counts of held keys the app's loop's."""

    def __init__(self, app):
        self.app = app
        self.keys = Lane(PENDING)
        self.mice = Lane(MICE)  # a flood of mouse reports never costs a key
        self.held_dropped = 0  # keys dropped from a full hold
        self.told = 0          # dropped keys the learner has been told of
        self.since_escape = SEQUENCE  # characters read since the last ESC, up to SEQUENCE
        self.last_key = 0.0    # time.monotonic() when the app last received a key
        self._timer = None     # the timer that says the note once the keys stop (tell)

    def dropped(self) -> int:
        """Keys dropped so far, on their way or from a hold."""
        return self.keys.dropped + self.held_dropped

    def admit(self, message) -> bool:
        """In the driver's thread: whether to post `message` to the app."""
        if isinstance(message, events.Key):
            return self.keys.admit(message, always=message.key in QUITS)
        if isinstance(message, events.MouseEvent):
            return self.mice.admit(message)
        return True

    def thin(self, text: str):
        """In the driver's thread: `text` in slices for the parser, each thinned if PENDING keys are on their
        way when it comes: then only what may belong to an escape sequence (ESC and the SEQUENCE characters
        after it), q, Ctrl+C and Ctrl+Q are kept; every other character is a key that admit() would drop."""
        for start in range(0, len(text), SLICE):
            piece = text[start:start + SLICE]
            kept = self._thinned(piece) if self.keys.pending() >= PENDING else piece
            at = piece.rfind(ESC)
            self.since_escape = min(SEQUENCE, len(piece) - at - 1 if at >= 0 else self.since_escape + len(piece))
            if kept:
                yield kept

    def _thinned(self, piece: str) -> str:
        """`piece` without the characters that can only be keys, except the quitting ones; counted dropped."""
        parts, since = piece.split(ESC), self.since_escape
        for i, part in enumerate(parts):
            keep = max(0, SEQUENCE - (since if i == 0 else 0))  # the first part goes on from the last slice
            rest = part[keep:]
            quits = NOT_QUITTING.sub("", rest)
            self.keys.dropped += len(rest) - len(quits)
            parts[i] = part[:keep] + quits
        return ESC.join(parts)

    def receive(self, event: events.InputEvent) -> None:
        """In the app's loop: a key or a mouse report has arrived (Lane.receive)."""
        if isinstance(event, events.MouseEvent):
            self.mice.receive(event)
            return
        self.keys.receive(event)
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
    for piece in driver._app.key_gate.thin(text):
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
