"""SSH public keys and authorized_keys lines, as `xf-tour classroom` reads them: our own checks, strict enough to
stand alone (a machine may have no ssh-keygen), and ssh-keygen's second opinion where it is installed."""

import base64
import binascii
import hashlib
import os
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from .keys_file import shown
from .parser import PROG, UsageError

KEY_TYPES = ("ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
             "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com")
MAX_KEY_FILE = 64 * 1024   # a 16384-bit RSA public key is under 3 KB
MAX_BLOB = 4096            # ... and its blob 2,071 bytes
RSA_BITS = (1024, 16384)   # what OpenSSH accepts: ssh-keygen makes none shorter, sshd reads none longer
EC_POINT = {"nistp256": 65, "nistp384": 97, "nistp521": 133}  # an uncompressed point: 0x04, then x and y


def key_fields(blob: bytes) -> list[bytes]:
    """The length-prefixed strings a public key blob is made of; ValueError unless they fill it exactly."""
    fields, i = [], 0
    while i < len(blob):
        n = int.from_bytes(blob[i:i + 4], "big")
        if i + 4 > len(blob) or i + 4 + n > len(blob):
            raise ValueError("truncated")
        fields.append(blob[i + 4:i + 4 + n])
        i += 4 + n
    return fields


def key_blob(kind: str, text: str) -> bytes:
    """The key blob that `text` (base64) encodes; ValueError unless it decodes, is well formed, its first field
    repeats `kind`, and its numbers and points have sizes OpenSSH accepts."""
    try:
        blob = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise ValueError("base64") from None
    if len(blob) > MAX_BLOB:
        raise ValueError("size")
    fields = key_fields(blob)
    if not fields or fields[0] != kind.encode("ascii"):
        raise ValueError("type")
    sizes = {"ssh-ed25519": 2, "sk-ssh-ed25519@openssh.com": 3, "ssh-rsa": 3, "sk-ecdsa-sha2-nistp256@openssh.com": 4}
    if len(fields) != sizes.get(kind, 3):  # ecdsa: type, curve, point
        raise ValueError("fields")
    curve = re.search(r"nistp\d+", kind)  # ecdsa: the curve's name is the second field
    if ("ed25519" in kind and len(fields[1]) != 32) or (curve and fields[1] != curve.group().encode()):
        raise ValueError("fields")
    if curve and (len(fields[2]) != EC_POINT[curve.group()] or fields[2][:1] != b"\x04"):
        raise ValueError("fields")
    if kind == "ssh-rsa":
        e, n = mpint(fields[1]), mpint(fields[2])
        if e is None or n is None or e < 3 or e.bit_length() > 64 or not e & n & 1:
            raise ValueError("fields")
        if not RSA_BITS[0] <= n.bit_length() <= RSA_BITS[1]:
            raise ValueError("size")
    return blob


def mpint(data: bytes) -> int | None:
    """The positive number an SSH mpint holds (big-endian, a zero byte before a set top bit, no other); None for
    zero, a negative number or a padded one, which OpenSSH refuses too."""
    if not data or data[0] & 0x80 or (data[0] == 0 and (len(data) == 1 or not data[1] & 0x80)):
        return None
    return int.from_bytes(data, "big")


def fingerprint(blob: bytes) -> str:
    """SHA256:..., as ssh-keygen -l prints it: unpadded base64 of the SHA-256 of the key blob."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode("ascii").rstrip("=")


def cuts(text: str, seps: str) -> list[str]:
    """`text` cut at each of `seps` outside double quotes (in which a backslash escapes), as sshd reads options."""
    out, start, quoted, i = [], 0, False, 0
    while i < len(text):
        if text[i] == "\\" and quoted:
            i += 1
        elif text[i] == '"':
            quoted = not quoted
        elif text[i] in seps and not quoted:
            out.append(text[start:i])
            start = i + 1
        i += 1
    return out + [text[start:]]


def split_options(line: str) -> tuple[str, str]:
    """An authorized_keys line cut after its options: the options (quotes kept), and the rest."""
    options = cuts(line, " \t")[0]
    return options, line[len(options):].lstrip(" \t")


def parse_line(line: str):
    """(options or None, key type, blob) of an authorized_keys line; None for a blank, a comment or a line
    whose key this reader does not know."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    options, rest = (None, line) if line.split(None, 1)[0] in KEY_TYPES else split_options(line)
    parts = rest.split()
    if len(parts) < 2 or parts[0] not in KEY_TYPES:
        return None
    try:
        return options, parts[0], key_blob(parts[0], parts[1])
    except ValueError:
        return None


def learner_of(options: str | None) -> str | None:
    """The NAME of a line whose forced command is `... --learner NAME`; None for any other line."""
    from ..progress import LEARNER_NAME

    if not options:
        return None
    for option in cuts(options, ","):
        if option.lower().startswith("command=") and option[8:9] == '"' and option.endswith('"'):
            try:
                words = shlex.split(option[9:-1].replace('\\"', '"'))
            except ValueError:
                return None
            for i, word in enumerate(words):
                name = words[i + 1] if word == "--learner" and i + 1 < len(words) else \
                    word[10:] if word.startswith("--learner=") else None
                if name is not None and LEARNER_NAME.fullmatch(name):
                    return name
    return None


def read_pubkey(path: str) -> tuple[str, str, bytes]:
    """(type, base64, blob) of the one public key in the file at `path`; UsageError for anything else."""
    where = shown(path)
    not_a_file = UsageError(f"{where} is not a file", f"{where} 不是文件")
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or a device is never opened...
            raise not_a_file
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                     | getattr(os, "O_CLOEXEC", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # ... nor read, when one was swapped in since the look
                raise not_a_file
            with os.fdopen(fd, "rb", closefd=False) as f:
                raw = f.read(MAX_KEY_FILE + 1)
        finally:
            os.close(fd)
    except OSError as err:
        raise UsageError(f"cannot read {where}: {err.strerror}", f"无法读取 {where}：{err.strerror}") from None
    if len(raw) > MAX_KEY_FILE:
        raise UsageError(f"{where} is too large to be a public key", f"{where} 太大，不像是公钥")
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise UsageError(f"{where} is not a public key: it is not ASCII text",
                         f"{where} 不是公钥：它不是 ASCII 文本") from None
    if "PRIVATE KEY" in text or text.startswith("PuTTY-User-Key-File"):
        raise UsageError(f"{where} is a private key: give the learner's public key (the .pub file); the private "
                         "key never leaves the learner's machine",
                         f"{where} 是私钥：请给出学习者的公钥（.pub 文件）；私钥应只留在学习者自己的电脑上")
    if "BEGIN SSH2 PUBLIC KEY" in text:
        raise UsageError(f"{where} is in the RFC 4716 format: convert it first with ssh-keygen -i -f {where}",
                         f"{where} 是 RFC 4716 格式：请先用 ssh-keygen -i -f {where} 转换")
    lines = [x.strip() for x in text.splitlines() if x.strip() and not x.strip().startswith("#")]
    if not lines:
        raise UsageError(f"{where} holds no key", f"{where} 里没有公钥")
    if len(lines) > 1:
        raise UsageError(f"{where} holds {len(lines)} lines: give one key, one learner at a time",
                         f"{where} 有 {len(lines)} 行：一次只给一把公钥、一位学习者")
    words = lines[0].split()
    if words[0] not in KEY_TYPES:
        if any(w in KEY_TYPES for w in split_options(lines[0])[1].split()[:1]):
            raise UsageError(f"{where} already has options before the key; give the bare key, and {PROG} adds its own",
                             f"{where} 的公钥前面已经带了选项；请给出不带选项的公钥，{PROG} 会加上自己的")
        raise UsageError(f"{where}: unknown key type {shown(words[0][:40])}; use one of: {', '.join(KEY_TYPES)}",
                         f"{where}：不认识的密钥类型 {shown(words[0][:40])}；可用的有：{', '.join(KEY_TYPES)}")
    if len(words) < 2:
        raise UsageError(f"{where}: the {words[0]} key has no key data after its type",
                         f"{where}：{words[0]} 类型后面没有密钥数据")
    try:
        blob = key_blob(words[0], words[1])
    except ValueError as err:
        why = {"base64": ("its base64 does not decode", "base64 无法解码"),
               "type": (f"its data does not say {words[0]}", f"数据里的类型不是 {words[0]}"),
               "size": ("its size is not one OpenSSH accepts (RSA: 1,024 to 16,384 bits)",
                        "密钥长度不在 OpenSSH 接受的范围内（RSA：1024 到 16384 位）")}.get(
            str(err), (f"its data is not a well-formed {words[0]} key", f"数据不是格式正确的 {words[0]} 密钥"))
        raise UsageError(f"{where}: not a valid {words[0]} key: {why[0]}",
                         f"{where}：不是有效的 {words[0]} 密钥：{why[1]}")
    return words[0], words[1], blob


def keygen_agrees(kind: str, text: str, blob: bytes) -> None:
    """A second opinion from ssh-keygen -l, when it is installed: it must read the key and print our
    fingerprint. Without ssh-keygen, our own checks stand."""
    keygen = shutil.which("ssh-keygen")
    if keygen is None:
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "key.pub"
        path.write_text(f"{kind} {text}\n", encoding="ascii")
        try:
            done = subprocess.run([keygen, "-l", "-E", "sha256", "-f", str(path)], capture_output=True, text=True,
                                  timeout=10, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return
    if done.returncode != 0:
        raise UsageError(f"ssh-keygen cannot read this {kind} key", f"ssh-keygen 读不了这把 {kind} 密钥")
    if fingerprint(blob) not in done.stdout:
        raise UsageError(f"ssh-keygen gives this key another fingerprint than {fingerprint(blob)}",
                         f"ssh-keygen 给出的指纹与 {fingerprint(blob)} 不同")
