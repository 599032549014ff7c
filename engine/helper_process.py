"""A helper process for training: forked once, it computes part of each step's gradient (and every other chunk
of an evaluation) while the trainer computes the rest, so that training uses a second core.

engine/tiny.py's train() uses it through batch_grads() and evaluate(); everything here is plain processes
and shared memory, with the work itself passed in as functions (so this module needs nothing from tiny.py).
"""

import os
import pickle
import struct
from typing import NamedTuple

import numpy as np

F32 = np.float32


def shared_zeros(n: int, dtype=F32) -> np.ndarray:
    """[n] zeros in anonymous shared memory: a process forked after this sees its writes and writes back
    into it."""
    import mmap

    dtype = np.dtype(dtype)
    return np.frombuffer(mmap.mmap(-1, max(dtype.itemsize * n, 1)), dtype, n)


def can_fork() -> bool:
    """Whether a Helper may run here: Linux (fork is unsafe under macOS's system libraries), two cores this
    process may use, and no other thread (a thread holding a lock at the fork would leave it held forever
    in the child)."""
    import sys
    import threading

    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return sys.platform.startswith("linux") and cores >= 2 and threading.active_count() == 1


class Work(NamedTuple):
    """What a part of a batch costs the training pass, counted in the numbers its arrays are written with
    (training_pass.work): per computed row (each distinct prefix; about the real positions less two a sentence,
    since every sentence begins "<bos> the"), per position of the sentences' layout attention runs in, per
    attention score, and, for the helper's part alone, the handoff: its gradient passed back. A count of the
    work, not a time, so it holds on any machine and for any config; bench/HISTORY.md has how it balances."""

    row: float
    position: float
    score: float
    handoff: float


def parts(ids, pad: int, work: Work):  # [B, T] -> [k, T1], [B - k, T2]
    """A batch's sentences (token ids, padded with pad), shortest first, cut in two parts of about equal work,
    each trimmed to its longest sentence: [k, T1] and [B - k, T2]. The work of a part is counted by `work`: the
    rows that every sentence shares weigh nothing, the longer sentences' attention weighs more, and the second
    part (the helper's) carries the handoff. Padding comes after a sentence's end, where
    causal attention never looks, and is no target, so trimming changes no loss or gradient."""
    return split_batches(ids[None], pad, work)[0]


def split_batches(batches, pad: int, work: Work) -> list[tuple]:  # [S, B, T] -> S pairs of parts
    """parts() of each batch, with the cuts chosen for all of them at once (train() draws 50 batches together)."""
    S, n, _ = batches.shape
    lengths = (batches != pad).sum(2)  # [S, B]
    order = np.argsort(lengths, axis=1, kind="stable")
    lengths = np.take_along_axis(lengths, order, 1)
    if n < 2:
        return [(b[:, :max(2, int(b_len.max()))], b[:0]) for b, b_len in zip(batches, lengths)]
    k = np.arange(1, n)  # the first part's sentences, each way of cutting
    rows = np.cumsum(lengths - 3, axis=1)  # real positions (length - 1) less the two shared ones, first j + 1
    span = np.maximum(lengths - 1, 1)  # a part's positions per sentence if it ends with this one

    def cost(count, rows, span):
        return work.row * rows + count * span * (work.position + work.score * span)

    first = cost(k, rows[:, :-1], span[:, :-1])
    second = cost(n - k, rows[:, -1:] - rows[:, :-1], span[:, -1:]) + work.handoff
    cut = 1 + np.argmin(np.maximum(first, second), axis=1)  # [S]
    out = []
    for b, o, b_len, k in zip(batches, order, lengths, cut.tolist()):
        b = b[o]
        out.append((b[:k, :max(2, int(b_len[k - 1]))], b[k:, :max(2, int(b_len[-1]))]))
    return out


def alternate(helper: "Helper | None", job: str, args: list[tuple], local) -> list:
    """[local(*a) for a in args], in order. With a helper, every second item is its job instead, run while this
    process does the one before it; the job must compute what local does, so the list is the same either way."""
    out = [None] * len(args)
    for i in range(0, len(args), 2):
        theirs = helper is not None and i + 1 < len(args)
        if theirs:
            helper.start(job, *args[i + 1])
        out[i] = local(*args[i])
        if i + 1 < len(args):
            out[i + 1] = helper.finish() if theirs else local(*args[i + 1])
    return out


class Helper:
    """A forked process that does part of training's work while this one does the rest, so that training
    uses two cores: the second part of each batch's gradient, and every other chunk of an evaluation
    (what it saves is measured in bench/train_time.py; bench/HISTORY.md keeps the figures).

    Before the fork, Adam's buffer (the weights) and this helper's gradient buffer are made in shared memory:
    the helper reads each update of the weights and writes a part's gradient there, flat in Adam's order.
    start(job, *args) sends a job's name and arguments over a socket pair; finish() waits for its result.
    The helper ends when its end of the pair closes, so it never outlives training, even a trainer that was
    killed. An error in a job comes back from finish() as a RuntimeError; a helper that died is one too.
    Messages are pickled: both ends are this code, in two processes forked from one."""

    def __init__(self, jobs: dict, adam):
        """jobs: name -> function. "grads" is special: grads(ids, n) -> (loss, {name: gradient}); the helper
        writes the gradient to self.grad and sends back the loss. Any other job's return value is sent back.
        adam (tiny.Adam, made with shared=True) holds the weights the jobs read and says the gradient's order."""
        import socket

        self.grad = shared_zeros(adam.flat.size, adam.flat.dtype)
        self.sock, theirs = socket.socketpair()
        self.pid = os.fork()
        if self.pid == 0:  # the helper: it never returns
            code = 1
            try:
                self.sock.close()
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):  # the trainer's pipes and terminal are not this process's to hold open
                    os.dup2(null, fd)
                code = _serve(theirs, jobs, adam, self.grad)
            finally:
                os._exit(code)
        theirs.close()

    def start(self, job: str, *args) -> None:
        """Begin a job; finish() gives its result."""
        try:
            _send(self.sock, pickle.dumps((job, args), pickle.HIGHEST_PROTOCOL))
        except OSError:
            raise RuntimeError("training's helper process ended unexpectedly") from None

    def finish(self):
        """Wait for the job started last: a grads job's loss (its gradient is then in self.grad), or what the
        job returned."""
        try:
            reply = _receive(self.sock)
        except OSError:
            reply = None
        if reply is None:
            raise RuntimeError("training's helper process ended unexpectedly")
        ok, value = pickle.loads(reply)
        if not ok:
            raise RuntimeError(f"training's helper process failed: {value}")
        return value

    def close(self) -> None:
        """End the helper and reap it (after the job it is on, if any)."""
        self.sock.close()
        os.waitpid(self.pid, 0)


def _send(sock, payload: bytes) -> None:
    sock.sendall(struct.pack("<q", len(payload)) + payload)


def _receive(sock):  # -> bytes, or None once the other end has closed
    def exactly(n):
        chunks = bytearray()
        while len(chunks) < n:
            got = sock.recv(n - len(chunks))
            if not got:
                return None
            chunks += got
        return bytes(chunks)

    head = exactly(8)
    return None if head is None else exactly(struct.unpack("<q", head)[0])


def _serve(sock, jobs, adam, out) -> int:  # the helper's loop; its exit status
    while (msg := _receive(sock)) is not None:
        job, args = pickle.loads(msg)
        try:
            if job == "grads":
                value, g = jobs["grads"](*args)
                adam.flatten(g, out=out)
            else:
                value = jobs[job](*args)
            reply = (True, value)
        except Exception as err:  # the trainer raises it; the helper is ready for the next job
            reply = (False, f"{job}: {type(err).__name__}: {err}")
        _send(sock, pickle.dumps(reply, pickle.HIGHEST_PROTOCOL))
    return 0
