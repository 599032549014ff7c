"""Hang-ups: the SSH link drops and the tour's terminal is gone.

Over SSH the tour's terminal is a pty. When the link drops, sshd closes the pty's other end and the kernel
hangs the terminal up: it sends SIGHUP (then SIGCONT) to the session, reads give end-of-file, writes and
termios calls fail with EIO. Left to Textual, SIGHUP would kill the tour unsaved, and without the signal
(the tour not the session's leader, SIGHUP blocked) its input thread would spin on end-of-file for ever.
So run_tour() handles SIGHUP and SIGTERM (HangUp), and a thread watches the terminal for the
hang-up itself (watch_terminal) and raises SIGHUP when it comes without one.

A browser session of `xf-tour serve` has two pipes for a terminal: when they close (the server is gone) its
input loop raises SIGHUP the same way (tui/keys.py), and the kernel sends it SIGTERM when the server dies
(die_with_parent).
"""

import os
import sys

HANGUP_EXIT_S = 0.75  # after a hang-up, the process is gone by then whatever Textual's shutdown does


class HangUp:
    """The handler of SIGHUP and SIGTERM while run_tour() runs `app` (an XfTourApp): save the place and end,
    with 128 + the signal's number as the exit status, as a shell gives (129, 143). After SIGHUP a dead
    terminal is swapped for /dev/null first, so that what Textual still writes and reads as it closes neither
    fails nor blocks, and Textual's SIGCONT handler, which would take the terminal back (the kernel sends
    SIGCONT after SIGHUP), is let go. Whatever the shutdown does, the process is gone HANGUP_EXIT_S after."""

    def __init__(self, app):
        self.app = app
        self.status = None   # 128 + the signal, once one came
        self.saved = False   # the app's loop saved the place after it
        self.timer = None    # the timer that ends the process (exit_after)

    def __call__(self, signum=None, frame=None) -> None:
        import asyncio
        import signal

        if signum != signal.SIGTERM:
            signal.signal(signal.SIGCONT, signal.SIG_DFL)
            release_dead_terminal()
        if self.status is not None:  # the kernel's SIGHUP and the watcher's may both come
            return
        self.status = 128 + (signum or signal.SIGHUP)
        self.timer = exit_after(HANGUP_EXIT_S, self.save_unsaved, self.status)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # the app is not running yet, or no longer: nothing new to save
            raise SystemExit(self.status) from None
        loop.call_soon_threadsafe(self.end)

    def end(self) -> None:
        """In the app's loop: quit saving (as q does), unless the app is ending already."""
        app = self.app
        if app.ending:
            return
        if app._bench is None:  # the tour, not the workbench alone
            app.save(say=False)
            app.keep_results()
        self.saved = True
        app.exit(return_code=self.status)

    def save_unsaved(self) -> None:
        """The place, saved from the timer if the app's loop never came to save it."""
        if not self.saved and self.app._bench is None:
            self.app.store.save(self.app.tour.progress)


def terminal_fds() -> list[int]:
    """The descriptors Textual reads and writes (stdin, stderr; stdout too) that are terminals now."""
    fds = []
    for stream in (sys.__stdin__, sys.__stdout__, sys.__stderr__):
        try:
            fd = stream.fileno()
        except (AttributeError, ValueError, OSError):
            continue
        if fd not in fds and os.isatty(fd):
            fds.append(fd)
    return fds


def hung_up(fd: int) -> bool:
    """Whether `fd` is a terminal that has hung up: termios calls on it fail with EIO."""
    import errno
    import termios

    try:
        termios.tcgetattr(fd)
    except termios.error as err:
        return bool(err.args) and err.args[0] == errno.EIO
    return False


def release_dead_terminal() -> None:
    """Put /dev/null where stdin, stdout and stderr were a terminal that has hung up: what is written after
    goes nowhere instead of failing (a writer thread that fails stops, and then a full queue blocks the app),
    and what is read is end-of-file. A terminal that still works is left alone, to be restored on the way out."""
    dead = [fd for fd in (0, 1, 2) if hung_up(fd)]
    if not dead:
        return
    null = os.open(os.devnull, os.O_RDWR)
    for fd in dead:
        os.dup2(null, fd)
    os.close(null)


def die_with_parent(parent: int) -> bool:
    """Have the kernel send SIGTERM to this process when its parent ends (Linux: PR_SET_PDEATHSIG; elsewhere
    the closing of its pipes does it). False when the parent is not `parent` any more: it ended before the
    request was made, and no signal will come."""
    import signal

    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)
    return os.getppid() == parent


def exit_after(seconds: float, save, status: int):
    """A daemon timer that ends the process `seconds` from now with `status`, calling save() first (the
    place, unless the app saved it already; an error in it is passed over). Left running on purpose: after a
    hang-up nothing must keep the process alive, not even an interpreter shutdown waiting on a thread."""
    import threading

    def give_up() -> None:
        try:
            save()
        except Exception:
            pass
        os._exit(status)

    timer = threading.Timer(seconds, give_up)
    timer.daemon = True
    timer.start()
    return timer


def watch_terminal():
    """Watch the terminal for a hang-up in a thread that sleeps in poll() until one comes (no timeouts, no
    cost while the learner reads), and send SIGHUP to the main thread then: a hang-up is handled the same way
    with or without the kernel's signal. Returns the function that stops the watching."""
    import select
    import signal
    import threading

    fds = terminal_fds()
    if not fds:
        return lambda: None
    wake_read, wake_write = os.pipe()
    poller = select.poll()
    for fd in fds:
        poller.register(fd, 0)  # no events asked for: poll() still reports POLLHUP and POLLERR
    poller.register(wake_read, select.POLLIN)
    main = threading.main_thread().ident
    gone = select.POLLHUP | select.POLLERR

    def watch() -> None:
        while True:
            ready = poller.poll()  # retried by Python on EINTR
            if any(fd == wake_read for fd, _ in ready):
                return
            if any(fd in fds and mask & gone for fd, mask in ready):
                signal.pthread_kill(main, signal.SIGHUP)
                return
            if ready:  # POLLNVAL: a descriptor was closed under us; nothing more to watch
                return

    thread = threading.Thread(target=watch, name="xf-tour-hangup", daemon=True)
    thread.start()

    def stop() -> None:
        os.write(wake_write, b"x")
        thread.join()
        os.close(wake_read)
        os.close(wake_write)

    return stop
