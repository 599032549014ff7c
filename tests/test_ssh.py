"""The classroom SSH host of docs/teaching.md, for real: a loopback sshd (Debian's openssh-server, which .ci/run
installs), a learner's key written by `xf-tour classroom add`, and a learner pressing real keys through ssh in a pty.

The sshd here runs in the foreground on a free port of 127.0.0.1, as the user running the tests, with every file
in the test's own folder; it is no system service. bench/classroom_load.py reuses Sshd, Session and keygen.
"""

import fcntl
import json
import os
import pty
import pwd
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SSHD = Path("/usr/sbin/sshd")
SFTP_SERVER = Path("/usr/lib/openssh/sftp-server")
TOUR = Path(sys.executable).parent / "xf-tour"  # this checkout's venv: the command the keys are forced to run
ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]"       # CSI: cursor moves, colours, modes
                     rb"|\x1b[P\]^_][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC, DCS and friends, to BEL or ST
                     rb"|\x1b[()][0-9A-Za-z]|\x1b[ -~]")  # charset picks and the two-byte rest


def need_sshd() -> None:
    """Fail (never skip) when the OpenSSH server is missing: CI installs it."""
    assert SSHD.exists(), (f"{SSHD} is missing: this test needs Debian's openssh-server; .ci/run installs it "
                           "(DEBIAN_FRONTEND=noninteractive apt-get install -y -q openssh-server)")
    if os.getuid() == 0:  # sshd refuses to start without its privilege separation folder; systemd makes it at boot
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    assert Path("/run/sshd").is_dir(), "/run/sshd is missing (sshd's privilege separation folder); create it as root"


def keygen(path: Path) -> Path:
    """A fresh ed25519 key pair without a passphrase; the public key's path."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f", str(path)],
                   check=True, stdin=subprocess.DEVNULL)
    return path.with_name(path.name + ".pub")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def add_learner(authorized_keys: Path, name: str, pubkey: Path) -> str:
    """`xf-tour classroom add NAME KEY --authorized-keys FILE`, as the teacher runs it; the line it wrote."""
    before = authorized_keys.read_text() if authorized_keys.exists() else ""
    done = subprocess.run([str(TOUR), "classroom", "add", name, str(pubkey), "--authorized-keys", str(authorized_keys)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    added = authorized_keys.read_text()[len(before):].strip()
    kind, blob = pubkey.read_text().split()[:2]
    assert "\n" not in added and f" {kind} {blob}" in added, added
    return added


class Sshd:
    """sshd -D -e on a free loopback port, configured like docs/teaching.md's `Match User tour` block.

    It differs from the recipe only where a test must: its port, host key, pid file and authorized_keys file
    live in `folder`; StrictModes is off (pytest's temporary folders belong to whoever runs it); PAM is off
    (no system login session); and it lets in the user running the tests, who is root in CI, so
    PermitRootLogin is set to prohibit-password (keys only, never a password). Given `user` and
    `authorized_keys`, it lets in that account instead, with keys from that file."""

    def __init__(self, folder: Path, state: Path, user: str | None = None, authorized_keys: Path | None = None):
        need_sshd()
        self.folder, self.state = folder, state
        self.user = user or pwd.getpwuid(os.getuid()).pw_name
        self.authorized_keys = authorized_keys or folder / "authorized_keys"
        if authorized_keys is None:
            self.authorized_keys.touch()
        self.port = free_port()
        keygen(folder / "host_key")
        config = folder / "sshd_config"
        config.write_text("\n".join([
            f"Port {self.port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {folder / 'host_key'}",
            f"PidFile {folder / 'sshd.pid'}",
            f"AuthorizedKeysFile {self.authorized_keys}",
            "StrictModes no",
            "UsePAM no",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password" if os.getuid() == 0 else "PermitRootLogin no",
            "PermitUserRC no",
            "MaxStartups 100:30:200",   # 30 learners may connect at once (the default starts refusing at 10)
            "AcceptEnv LANG LC_*",      # the learner's language comes from the client's LANG
            f"Subsystem sftp {SFTP_SERVER}",  # on, as Debian ships it: the forced command must still win
            f"Match User {self.user}",
            "    AllowTcpForwarding no",
            "    AllowStreamLocalForwarding no",
            "    X11Forwarding no",
            "    AllowAgentForwarding no",
            "    PermitTunnel no",
            f"    SetEnv XF_TOUR_STATE_DIR={state}",
            ""]))
        self.log: list[str] = []
        self.proc = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        listening = threading.Event()

        def drain():
            for line in self.proc.stderr:
                self.log.append(line)
                if f"listening on 127.0.0.1 port {self.port}" in line:
                    listening.set()
            listening.set()  # sshd ended: stop waiting

        threading.Thread(target=drain, daemon=True).start()
        listening.wait(30)
        if self.proc.poll() is not None or not any("listening" in line for line in self.log):
            self.close()
            raise AssertionError("sshd did not start:\n" + "".join(self.log))

    def ssh(self, key: Path, *extra: str) -> list[str]:
        """The ssh command line for this server: the key only, no known_hosts, no agent, no ~/.ssh/config."""
        return ["ssh", "-F", "/dev/null", "-p", str(self.port), "-i", str(key), "-o", "IdentitiesOnly=yes",
                "-o", "IdentityAgent=none", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "BatchMode=yes", "-o", "LogLevel=ERROR", "-o", "EscapeChar=none", *extra,
                f"{self.user}@127.0.0.1"]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(10)


class Session:
    """`ssh -tt` in a pty of 80x24, as a learner's terminal runs it; a thread reads everything it writes.

    `latencies` holds, for each press(), the seconds from writing the key to the first bytes after it."""

    def __init__(self, sshd: Sshd, key: Path, lang: str = "C.UTF-8"):
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/"),
               "TERM": "xterm-256color", "LANG": lang}
        self.proc = subprocess.Popen(sshd.ssh(key, "-tt", "-o", "SendEnv=LANG"), stdin=slave, stdout=slave,
                                     stderr=slave, env=env, start_new_session=True)
        os.close(slave)
        self.master, self.out = master, bytearray()
        self.changed = threading.Condition()
        self.pending: float | None = None
        self.latencies: list[float] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # the other end closed: ssh has exited
                data = b""
            now = time.monotonic()
            with self.changed:
                if self.pending is not None and data:
                    self.latencies.append(now - self.pending)
                    self.pending = None
                self.out.extend(data)
                self.changed.notify_all()
            if not data:
                return

    def text(self, start: int = 0) -> str:
        """What it wrote from byte `start` on, without escape codes."""
        return ESCAPES.sub(b"", bytes(self.out[start:])).decode("utf-8", "replace")

    def wait_for(self, needle: str, start: int = 0, timeout: float = 60) -> None:
        with self.changed:
            found = self.changed.wait_for(lambda: needle in self.text(start) or self.proc.poll() is not None, timeout)
        assert found and needle in self.text(start), f"{needle!r} never came; the screen said:\n{self.text(start)[-3000:]}"

    def press(self, key: bytes) -> int:
        """Write one key; the byte offset its answer starts at."""
        with self.changed:
            start, self.pending = len(self.out), time.monotonic()
        os.write(self.master, key)
        return start

    def close(self, timeout: float = 30) -> int:
        """ssh's exit status, once it has ended (killed after `timeout` s); the pty is closed after its last byte."""
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.reader.join(timeout)  # the read ends when the last process holding the pty's other end is gone
            if self.master is not None and not self.reader.is_alive():
                os.close(self.master)
                self.master = None


def residual_steps():
    """The first lesson's first two steps, read from its file (not from the app)."""
    with open(ROOT / "lessons" / "01-residual.toml", "rb") as f:
        lesson = tomllib.load(f)
    assert lesson["id"] == "residual"
    return lesson["steps"][:2]


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
