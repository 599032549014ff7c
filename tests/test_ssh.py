"""The classroom SSH host of docs/teaching.md, for real: a loopback sshd (Debian's openssh-server, which .ci/run
installs), a learner's key written by `xf-tour classroom add`, and a learner pressing real keys through ssh in a pty.

The sshd here runs in the foreground on a free port of 127.0.0.1, as the user running the tests, with every file
in the test's own folder; it is no system service. Sshd, Session and keygen are bench/sshd.py's, which
bench/classroom_load.py drives too.
"""

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from bench.sshd import TOUR, Session, Sshd, add_learner, keygen, residual_steps

pytestmark = pytest.mark.slow  # a real sshd and ssh clients


def test_a_learner_walks_a_step_through_sshd(tmp_path):
    """alice's key, added with classroom add, opens the tour in her language; n shows the next step; q saves it."""
    state = tmp_path / "state"
    sshd = Sshd(tmp_path, state)
    try:
        line = add_learner(sshd.authorized_keys, "alice", keygen(tmp_path / "alice"))
        assert line.startswith(f'restrict,pty,command="{TOUR} --learner alice" ssh-ed25519 '), line
        first, second = residual_steps()
        learner = Session(sshd, tmp_path / "alice", lang="zh_CN.UTF-8")  # sent with SendEnv, taken by AcceptEnv
        try:
            learner.wait_for(first["title"]["zh"])
            learner.wait_for(second["title"]["zh"], start=learner.press(b"n"))
            learner.press(b"q")
            assert learner.close() == 0, learner.text()[-2000:]
        finally:
            learner.close()
    finally:
        sshd.close()
    saved = json.loads((state / "learners" / "alice" / "progress.json").read_text())
    assert saved["lesson"] == "residual" and saved["step"] == 1
    assert saved["visited"]["residual"] == [first["id"], second["id"]]
    assert not (state / "progress.json").exists()  # nothing in the shared folder itself


def test_no_shell_no_sftp_no_forwarding(tmp_path):
    """A restricted key runs the tour whatever the client asks for: a command, sftp, a TCP forward.
    A control key without options on the same server gets its command and sftp, so those checks can fail;
    forwarding is refused twice over (restrict, and the Match block), for the control key too."""
    sshd = Sshd(tmp_path, tmp_path / "state")
    try:
        add_learner(sshd.authorized_keys, "mallory", keygen(tmp_path / "mallory"))
        control = tmp_path / "control"
        with open(sshd.authorized_keys, "a") as f:
            f.write(keygen(control).read_text())
        (tmp_path / "sftp-marker-file").touch()
        batch = tmp_path / "batch"
        batch.write_text(f"ls {tmp_path}\n")

        def attempts(key):
            shell = subprocess.run(sshd.ssh(key) + ["echo shell-$((6*7))"], capture_output=True, text=True,
                                   stdin=subprocess.DEVNULL, timeout=60)
            sftp = subprocess.run(["sftp", "-F", "/dev/null", "-P", str(sshd.port), "-i", str(key), "-b", str(batch),
                                   "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=no",
                                   "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes",
                                   f"{sshd.user}@127.0.0.1"], capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL, timeout=60)
            tunnel = subprocess.run(sshd.ssh(key, "-W", f"127.0.0.1:{sshd.port}"), capture_output=True,
                                    stdin=subprocess.DEVNULL, timeout=60)
            return shell, sftp, tunnel

        shell, sftp, tunnel = attempts(tmp_path / "mallory")
        assert "shell-42" not in shell.stdout + shell.stderr
        assert shell.returncode == 2 and "needs a terminal" in shell.stderr, shell  # the tour, without a pty
        assert sftp.returncode != 0 and "sftp-marker-file" not in sftp.stdout + sftp.stderr
        assert tunnel.returncode != 0 and b"SSH-2.0" not in tunnel.stdout

        shell, sftp, tunnel = attempts(control)
        assert shell.stdout == "shell-42\n"
        assert sftp.returncode == 0 and "sftp-marker-file" in sftp.stdout
        assert tunnel.returncode != 0 and b"SSH-2.0" not in tunnel.stdout  # the Match block stops it for every key
    finally:
        sshd.close()


def test_learners_still_get_in_after_an_add_into_a_root_owned_file(tmp_path):
    """sshd reads authorized_keys as the account it logs in to, here the unprivileged `nobody`: a root-owned 0644
    file holding alice's line lets her in; after root adds bob, the file is that account's, 0600, and both get in.
    `nobody`'s shell refuses every command, so each session ends at once: what counts is that sshd accepted the
    key (its log says so) and the client heard no "Permission denied"."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the file is root's and the account another; this run has no other uid to log in as")
    shared = Path(tempfile.mkdtemp(dir="/tmp", prefix="xf-ssh-"))  # pytest's folders are 0700: sshd reads as nobody
    try:
        os.chmod(shared, 0o755)
        folder = shared / ".ssh"
        folder.mkdir(mode=0o700)
        os.chown(folder, 65534, 65534)
        keys = folder / "authorized_keys"
        alice, bob = keygen(tmp_path / "alice"), keygen(tmp_path / "bob")
        keys.write_text(f'restrict,pty,command="{TOUR} --learner alice" {alice.read_text()}')
        os.chmod(keys, 0o644)  # root's, as a teacher may have left it: sshd can read it as nobody
        sshd = Sshd(tmp_path, tmp_path / "state", user="nobody", authorized_keys=keys)
        try:
            assert gets_in(sshd, tmp_path / "alice")
            add_learner(keys, "bob", bob)
            assert gets_in(sshd, tmp_path / "bob") and gets_in(sshd, tmp_path / "alice")
            info = os.stat(keys)
            assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (65534, 65534, 0o600)
        finally:
            sshd.close()
    finally:
        shutil.rmtree(shared)


def gets_in(sshd: Sshd, key: Path) -> bool:
    """Whether sshd accepts `key`: the client is not refused, and sshd's log says "Accepted publickey" for it."""
    fingerprint = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(key)], capture_output=True, text=True,
                                 check=True).stdout.split()[1]
    start = len(sshd.log)
    done = subprocess.run(sshd.ssh(key), capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    if done.returncode == 255 or "Permission denied" in done.stderr:
        return False
    deadline = time.monotonic() + 10  # the log is read by a thread of its own
    while time.monotonic() < deadline:
        if any("Accepted publickey" in line and fingerprint in line for line in sshd.log[start:]):
            return True
        time.sleep(0.05)
    return False
