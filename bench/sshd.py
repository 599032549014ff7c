"""A loopback sshd and learners' ssh sessions, for the classroom SSH host of docs/teaching.md: Debian's
openssh-server (.ci/run installs it) in the foreground on a free port of 127.0.0.1, as the user running it, with
every file in a folder of the caller's; no system service. tests/test_ssh.py and bench/classroom_load.py use it.

Import it as `bench.sshd`, with the repository's root on sys.path (pytest's pythonpath in pyproject.toml)."""

import fcntl
import os
import pty
import pwd
import re
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
import tomllib
from pathlib import Path

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
        assert found and needle in self.text(start), (f"{needle!r} never came; the screen said:\n"
                                                      f"{self.text(start)[-3000:]}")

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
