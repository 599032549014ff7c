"""Accounts and keys for the classroom host's tests (tests/test_classroom_host.py, tests/test_classroom_paths.py):
the unprivileged account the tour runs as, played by `nobody`, and `xf-tour classroom add` as root runs it."""

import os
import subprocess
from pathlib import Path

import pytest

from .cli import run_cli

NOBODY = 65534
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="playing another account needs root: this run is not "
                               "root, so it has no other uid to act as (and add crosses no account)")


def keygen(folder: Path, name: str, *kind: str) -> Path:
    """A fresh key pair (ed25519 unless `kind` says, e.g. "-t", "rsa", "-b", "4096"); its public half."""
    path = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", *kind, "-N", "", "-C", name, "-f", str(path)], check=True,
                   stdin=subprocess.DEVNULL)
    return path.with_name(name + ".pub")


def as_nobody(*argv: str) -> None:
    """Run argv as the unprivileged account, with no groups of root's: what the tour account could do."""
    subprocess.run(argv, user=NOBODY, group=NOBODY, extra_groups=[], check=True, timeout=30,
                   stdin=subprocess.DEVNULL)


def add(keys, pub, *more):
    """`xf-tour classroom add ann PUB --authorized-keys KEYS MORE`."""
    return run_cli("classroom", "add", "ann", str(pub), "--authorized-keys", str(keys), *more)


def one_line_error(done):
    """A refusal: exit status 2 and one line on stderr, no traceback; that line."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    return done.stderr
