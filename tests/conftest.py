"""The fixtures the tests share. The harness they share (ptys, the server, what the screen shows, processes) is
the package tests/helpers; the loopback sshd is bench/sshd.py, which bench/classroom_load.py drives too."""

import atexit
import functools
import os
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from helpers.classroom import NOBODY, keygen
from helpers.cli import ROOT, cli_environ, run_cli  # noqa: F401  (tests that predate tests/helpers import them here)
from helpers.pty import terminals

os.environ["TEXTUAL_ANIMATIONS"] = "none"  # snapshots and pilots must not depend on timing
# The lessons' questions wait before a key acts; the tests of the keys and screens press keys as before, and
# tests/test_quiz_app.py (make_app(asks=True)) and tests/test_quiz_pty.py ask them
os.environ["XF_TOUR_QUESTIONS"] = "off"
# The real model's tests dequantize as before, each process its own copy: a shared float32 copy would be written,
# 538 MB, into every test process's state folder. tests/test_weights_cache.py turns it on where it tests it
os.environ["XF_TOUR_WEIGHTS_CACHE"] = "off"
# A state folder of this test process's own, for the app and the commands a test runs without one of its own:
# never the user's, and never another pytest-xdist worker's (the caches in it are written by whoever comes first)
os.environ["XF_TOUR_STATE_DIR"] = tempfile.mkdtemp(prefix="xf-tour-state-")
atexit.register(shutil.rmtree, os.environ["XF_TOUR_STATE_DIR"], ignore_errors=True)


@pytest.fixture(autouse=True)
def _seeded():
    """The engine draws from explicit seeds; the global generator is seeded too, so nothing drifts."""
    np.random.seed(0)


@functools.cache
def _smollm() -> str:
    from bench.smollm import smollm_path
    return str(smollm_path())


@pytest.fixture(autouse=True)
def _real_model(request, monkeypatch):
    """A test marked real_model runs with XF_TOUR_MODEL naming SmolLM2-135M's file, which `xf-tour model get`
    fetches once into the folder the runs share (bench/smollm.py)."""
    if request.node.get_closest_marker("real_model"):
        monkeypatch.setenv("XF_TOUR_MODEL", _smollm())


@pytest.fixture
def state(tmp_path):
    """A progress folder of the test's own, not yet made: the app creates it."""
    return tmp_path / "state"


@pytest.fixture
def terminal(tmp_path):
    """terminal(ARGS, env=..., ctty=...): the tour on a pty of its own (tests/helpers/pty.py), its state in
    tmp_path / "state"; ended and closed after the test."""
    with terminals(tmp_path / "state") as start:
        yield start


@pytest.fixture
def shared(tmp_path):
    """A folder in /tmp that `nobody` may traverse (pytest's own are 0700 root): a root-owned victim file
    and the account's home, `home`, owned by nobody, with its `.ssh`. Removed afterwards."""
    base = Path(tempfile.mkdtemp(dir="/tmp", prefix="xf-host-"))
    try:
        os.chmod(base, 0o755)
        home = base / "home"
        (home / ".ssh").mkdir(parents=True, mode=0o700)
        if os.geteuid() == 0:
            for path in (home, home / ".ssh"):
                os.chown(path, NOBODY, NOBODY)
        victim = base / "victim"
        victim.write_text("root's own file\n")
        os.chmod(victim, 0o644)
        yield SimpleNamespace(base=base, home=home, ssh=home / ".ssh", keys=home / ".ssh" / "authorized_keys",
                              victim=victim, pub=keygen(tmp_path, "ann"))
    finally:
        shutil.rmtree(base)
