"""Adam on one flat buffer: the optimizer engine/tiny.py trains with."""

import math

import numpy as np

from .helper_process import shared_zeros


class Adam:
    """Adam on one flat buffer (in w's dtype, float32 in training): init moves w's arrays into it (w keeps its
    keys, each a view of its slice), so that each step is a handful of whole-buffer operations instead of a
    handful per weight. shared=True puts the buffer in memory that a process forked later shares
    (helper_process.Helper reads the weights there)."""

    def __init__(self, w, b1=0.9, b2=0.99, eps=1e-8, shared=False):
        self.keys = list(w)
        size, dtype = sum(a.size for a in w.values()), np.result_type(*w.values())
        self.flat = shared_zeros(size, dtype) if shared else np.empty(size, dtype)
        at = 0
        for k, a in w.items():
            self.flat[at:at + a.size] = a.ravel()
            w[k] = self.flat[at:at + a.size].reshape(a.shape)
            at += a.size
        self.m, self.v, self._scratch = (np.zeros_like(self.flat) for _ in range(3))
        self.b1, self.b2, self.eps, self.t = b1, b2, eps, 0

    def flatten(self, g, out=None):  # {name: gradient} -> [size], in the buffer's order
        return np.concatenate([g[k].ravel() for k in self.keys], out=out)

    def step(self, g, lr: float, clip: float) -> float:
        """One update of the weights given to init, with gradients (a dict like w, or flat as flatten gives
        them; a flat array is used as scratch) clipped to a global norm; returns the norm before clipping."""
        gk = np.asarray(self.flatten(g) if isinstance(g, dict) else g, self.flat.dtype)  # (a copy if it must)
        norm = math.sqrt(float(gk @ gk))
        if (scale := clip / (norm + 1e-12)) < 1.0:  # (times 1.0 would change nothing)
            gk *= scale
        self.t += 1
        c1, c2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        tmp = self._scratch
        self.m *= self.b1
        self.m += np.multiply(gk, 1 - self.b1, out=tmp)
        self.v *= self.b2
        self.v += np.multiply(np.multiply(gk, 1 - self.b2, out=tmp), gk, out=tmp)
        step = np.sqrt(np.multiply(self.v, 1.0 / c2, out=tmp), out=tmp)  # the same sums as the textbook line
        step += self.eps  # flat -= (lr / c1) m / (sqrt(v / c2) + eps), in place: a pass less for each temporary
        np.divide(np.multiply(self.m, lr / c1, out=gk), step, out=step)
        self.flat -= step
        return norm
