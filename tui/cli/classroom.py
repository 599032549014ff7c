"""xf-tour classroom: one SSH account for a whole class. `add` lets a learner in with one line in the
account's authorized_keys, which forces every login with that key into `xf-tour --learner NAME`:

    restrict,pty,command="/abs/path/to/xf-tour --learner NAME" ssh-ed25519 AAAA...

`restrict` turns off forwarding, agent, X11, user rc and the pty, `pty` gives the pty back, and the forced
command replaces whatever the client asks for (a shell, sftp, scp). `list` reads those lines back; `report`
reads each learner's progress folder. None of it imports textual: a teacher may run it over a plain pipe.
"""

import base64
import binascii
import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from .parser import PROG, UsageError, name_error

KEY_TYPES = ("ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
             "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com")
MAX_KEY_FILE = 64 * 1024   # a 16384-bit RSA public key is under 3 KB
MAX_KEYS_FILE = 4 << 20    # authorized_keys for a school and then some
OPTIONS = "restrict,pty"   # no forwarding, no agent, no X11, no ~/.ssh/rc; a pty for the tour


# --- keys ---------------------------------------------------------------------------------------------------

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
    """The key blob that `text` (base64) encodes; ValueError unless it decodes, is well formed, and its first
    field repeats `kind`."""
    try:
        blob = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise ValueError("base64") from None
    fields = key_fields(blob)
    if not fields or fields[0] != kind.encode("ascii"):
        raise ValueError("type")
    sizes = {"ssh-ed25519": 2, "sk-ssh-ed25519@openssh.com": 3, "ssh-rsa": 3, "sk-ecdsa-sha2-nistp256@openssh.com": 4}
    if len(fields) != sizes.get(kind, 3):  # ecdsa: type, curve, point
        raise ValueError("fields")
    curve = re.search(r"nistp\d+", kind)  # ecdsa: the curve's name is the second field
    if ("ed25519" in kind and len(fields[1]) != 32) or (curve and fields[1] != curve.group().encode()):
        raise ValueError("fields")
    return blob


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
    from ..state import LEARNER_NAME

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
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise UsageError(f"{where} is not a file", f"{where} 不是文件")
        with open(path, "rb") as f:
            raw = f.read(MAX_KEY_FILE + 1)
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
               "type": (f"its data does not say {words[0]}", f"数据里的类型不是 {words[0]}")}.get(
            str(err), (f"its data is not a well-formed {words[0]} key", f"数据不是格式正确的 {words[0]} 密钥"))
        raise UsageError(f"{where}: not a valid {words[0]} key: {why[0]}", f"{where}：不是有效的 {words[0]} 密钥：{why[1]}")
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


# --- authorized_keys ----------------------------------------------------------------------------------------

def shown(path) -> str:
    """A path or word as one safe line: repr() escapes newlines and control characters."""
    text = str(path)
    return text if text.isprintable() and " " not in text and "'" not in text else repr(text)


def keys_path(args) -> Path:
    """--authorized-keys, or ~/.ssh/authorized_keys of the user running this (from the password database:
    under sudo, HOME may still be the caller's)."""
    if args.authorized_keys:
        return Path(args.authorized_keys)
    try:
        import pwd
        home = pwd.getpwuid(os.geteuid()).pw_dir
    except (ImportError, KeyError):
        home = str(Path.home())
    return Path(home) / ".ssh" / "authorized_keys"


def read_keys(path: Path) -> tuple[bytes, list[str]]:
    """authorized_keys as it is, and its lines; nothing when it does not exist yet."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise UsageError(f"{shown(path)} is not a file", f"{shown(path)} 不是文件")
        with open(path, "rb") as f:
            raw = f.read(MAX_KEYS_FILE + 1)
    except FileNotFoundError:
        return b"", []
    except OSError as err:
        raise UsageError(f"cannot read {shown(path)}: {err.strerror}", f"无法读取 {shown(path)}：{err.strerror}") from None
    if len(raw) > MAX_KEYS_FILE:
        raise UsageError(f"{shown(path)} is too large to be authorized_keys", f"{shown(path)} 太大，不像是 authorized_keys")
    return raw, raw.decode("utf-8", errors="replace").splitlines()


def learners(lines) -> list[tuple[str, str, bytes]]:
    """(name, key type, blob) of each learner line, in file order."""
    parsed = [x for x in map(parse_line, lines) if x is not None]
    return [(name, kind, blob) for options, kind, blob in parsed if (name := learner_of(options)) is not None]


def tour_command() -> list[str]:
    """How sshd starts this same xf-tour: its absolute path, so that no PATH is needed. The script that runs
    now (symlinks kept: a link in /usr/local/bin outlives the venv it points into), the one installed beside
    this Python, the one on PATH, or this Python with -m tui."""
    argv0 = Path(sys.argv[0])
    if argv0.name == PROG and argv0.is_file():
        return [os.path.abspath(argv0)]
    beside = Path(sys.executable).parent / PROG
    if beside.is_file() and os.access(beside, os.X_OK):
        return [os.path.abspath(beside)]
    found = shutil.which(PROG)
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "tui"]


def forced_line(name: str, kind: str, text: str) -> str:
    """The authorized_keys line for one learner. The command is run by the account's shell: each word is
    shell-quoted, and a word sshd's quoting cannot carry (a '"', a backslash, a control character) refused."""
    words = [*tour_command(), "--learner", name]
    bad = [w for w in words if '"' in w or "\\" in w or not w.isprintable()]
    if bad:
        raise UsageError(f"the path {shown(bad[0])} cannot go in authorized_keys; install {PROG} under a plainer path",
                         f"路径 {shown(bad[0])} 不能写进 authorized_keys；请把 {PROG} 装在更简单的路径下")
    command = " ".join(shlex.quote(w) for w in words)
    return f'{OPTIONS},command="{command}" {kind} {text}'


def make_folder(folder: Path) -> None:
    """~/.ssh, made 0700 if missing (owned like the home it is in, when root makes it)."""
    if not folder.exists():
        try:
            folder.mkdir(mode=0o700)
            os.chmod(folder, 0o700)  # mkdir's mode goes through the umask
            owner = os.stat(folder.parent)
            if os.geteuid() == 0 and (owner.st_uid, owner.st_gid) != (0, 0):  # root making a user's ~/.ssh
                os.chown(folder, owner.st_uid, owner.st_gid)
        except OSError as err:
            raise UsageError(f"cannot make {shown(folder)}: {err.strerror}", f"无法创建 {shown(folder)}：{err.strerror}") \
                from None


def write_keys(path: Path, raw: bytes, line: str) -> None:
    """authorized_keys (`raw`, its bytes as they were) with `line` appended, written atomically: a temporary
    file beside it (0600, the old file's owner when run as root), flushed, renamed over it."""
    folder = path.parent
    data = raw + (b"\n" if raw and not raw.endswith(b"\n") else b"") + line.encode("utf-8") + b"\n"
    try:
        like = os.stat(path) if path.exists() else os.stat(folder)
        fd, tmp = tempfile.mkstemp(prefix=".authorized_keys-", suffix=".tmp", dir=folder)  # mode 0600
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o600)
            if os.geteuid() == 0 and (like.st_uid, like.st_gid) != (0, 0):  # sshd reads it as that user
                os.chown(tmp, like.st_uid, like.st_gid)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as err:
        raise UsageError(f"cannot write {shown(path)}: {err.strerror}", f"无法写入 {shown(path)}：{err.strerror}") from None


@contextlib.contextmanager
def locked(folder: Path):
    """An exclusive lock on the folder of authorized_keys while it is read and rewritten, so that two `add`s
    at once both land; none where flock is missing."""
    try:
        import fcntl
        fd = os.open(folder, os.O_RDONLY)
    except (ImportError, OSError):
        fd = None
    try:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fd is not None:
            os.close(fd)


def cmd_add(args, lang) -> int:
    """Append a learner's forced-command line to authorized_keys, after checking the name and the key."""
    from ..state import LEARNER_NAME

    name = args.name
    if not LEARNER_NAME.fullmatch(name):
        raise name_error(name)
    kind, text, blob = read_pubkey(args.pubkey)
    keygen_agrees(kind, text, blob)
    path = Path(os.path.realpath(keys_path(args)))  # a linked authorized_keys stays a link
    make_folder(path.parent)
    with locked(path.parent):
        raw, lines = read_keys(path)
        for other, _, _ in learners(lines):
            if other.lower() == name.lower():  # one folder per name even where case is folded (macOS)
                raise UsageError(f"the name {other} is taken in {shown(path)}", f"名字 {other} 在 {shown(path)} 里已被使用")
        for number, line in enumerate(lines, 1):
            parsed = parse_line(line)
            if parsed is not None and parsed[2] == blob:
                who = learner_of(parsed[0])
                en, zh = (f" (learner {who})", f"（学习者 {who}）") if who else ("", "")
                raise UsageError(f"this key is already in {shown(path)}, line {number}{en}: one key, one learner",
                                 f"这把公钥已在 {shown(path)} 第 {number} 行{zh}：一把公钥只对应一位学习者")
        write_keys(path, raw, forced_line(name, kind, text))
    print(f"已添加学习者 {name}：{kind} {fingerprint(blob)}，写入 {path}" if lang == "zh" else
          f"added learner {name}: {kind} {fingerprint(blob)} in {path}")
    return 0


def cmd_list(args, lang) -> int:
    """The learners in authorized_keys: name, key type, fingerprint."""
    path = keys_path(args)
    rows = [{"name": n, "type": k, "fingerprint": fingerprint(b)} for n, k, b in learners(read_keys(path)[1])]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    if not rows:
        print(f"{path} 里还没有学习者" if lang == "zh" else f"no learners in {path} yet")
        return 0
    heads = ("学习者", "密钥类型", "指纹") if lang == "zh" else ("learner", "key type", "fingerprint")
    print(table(heads, [(r["name"], r["type"], r["fingerprint"]) for r in rows]))
    return 0


# --- report -------------------------------------------------------------------------------------------------

def table(heads, rows, last_wraps: bool = False) -> str:
    """A plain table, columns two spaces apart, widths by cell_len (CJK counts two). With `last_wraps`, the
    last column's ", "-separated items wrap under it to the terminal's width."""
    from rich.cells import cell_len

    widths = [max(cell_len(str(r[i])) for r in [heads, *rows]) for i in range(len(heads) - 1)]
    start = sum(widths) + 2 * len(widths)
    room = max(20, shutil.get_terminal_size((80, 24)).columns - start - 1)

    def pad(cells):
        return "".join(str(c) + " " * (w - cell_len(str(c)) + 2) for c, w in zip(cells, widths))

    def wrapped(text):
        if not last_wraps:
            return [text]
        lines, line = [], ""
        for item in text.split(", "):
            joined = f"{line}, {item}" if line else item
            if line and cell_len(joined) >= room:  # room for the comma
                lines.append(line + ",")
                line = item
            else:
                line = joined
        return lines + [line]

    out = [pad(heads) + heads[-1]]
    for r in rows:
        first, *more = wrapped(str(r[-1]))
        out.append((pad(r) + first).rstrip())
        out.extend((" " * start + x).rstrip() for x in more)
    return "\n".join([out[0], "-" * max(cell_len(x) for x in out), *out[1:]])


def learner_rows(root: Path, lessons) -> list[dict]:
    """One row per learner folder under `root` (the LEARNERS folder): read, never written."""
    from ..state import FILE_NAME, LEARNER_NAME, Store
    from ..tour import RECAP

    try:
        names = sorted(e.name for e in os.scandir(root) if LEARNER_NAME.fullmatch(e.name)
                       and e.is_dir(follow_symlinks=False))
    except FileNotFoundError:
        return []
    except OSError as err:
        raise UsageError(f"cannot read {shown(root)}: {err.strerror}", f"无法读取 {shown(root)}：{err.strerror}") from None
    by_id = {x.id: x for x in lessons}
    rows = []
    for name in names:
        row = {"name": name, "lesson": None, "step": None, "steps": None, "step_id": None, "seen": {},
               "last_active": None, "problem": None}
        store = Store(root / name)
        try:
            row["last_active"] = os.stat(root / name / FILE_NAME).st_mtime
        except OSError:
            pass
        try:
            progress = store.read()
        except FileNotFoundError:
            row["problem"] = "missing"
        except OSError:
            row["problem"] = "unreadable"
        except ValueError:
            row["problem"] = "broken"
        else:
            for lesson in lessons:
                ids = {s.id for s in lesson.steps} | {RECAP}
                seen = len(set(progress.visited.get(lesson.id, [])) & ids)
                if seen:
                    row["seen"][lesson.id] = seen
            row["lesson"] = progress.lesson
            lesson = by_id.get(progress.lesson)
            if lesson is not None:  # clamped as the tour clamps it (Tour.goto)
                index = min(progress.step, len(lesson.steps))
                row.update(step=index + 1, steps=len(lesson.steps) + 1,
                           step_id=RECAP if index == len(lesson.steps) else lesson.steps[index].id)
        rows.append(row)
    return rows


PROBLEMS = {"missing": ("no progress saved yet", "还没有保存进度"), "broken": ("progress file is broken", "进度文件已损坏"),
            "unreadable": ("progress file cannot be read", "进度文件无法读取")}


def cmd_report(args, lang) -> int:
    """Where each learner is: lesson and step, steps seen per lesson, last active."""
    from ..state import LEARNERS, state_dir
    from .lessons import lessons_for

    lessons = lessons_for(args, deep=False)
    root = state_dir() / LEARNERS
    rows = learner_rows(root, lessons)
    steps = {x.id: len(x.steps) + 1 for x in lessons}  # the recap counted, as `xf-tour lessons --json` does
    if args.json:
        for row in rows:
            if row["last_active"] is not None:
                row["last_active"] = datetime.fromtimestamp(row["last_active"], timezone.utc).strftime(
                    "%Y-%m-%dT%H:%M:%SZ")
        print(json.dumps({"folder": str(root), "steps": steps, "learners": rows}, ensure_ascii=False, indent=1))
        return 0
    if not rows:
        print(f"{root} 里还没有学习者" if lang == "zh" else f"no learners in {root} yet")
        return 0
    zh = lang == "zh"
    heads = ("学习者", "课程", "步", "最近活动", "看过的步数") if zh else ("learner", "lesson", "step", "last active",
                                                                   "steps seen")
    cells = []
    for r in rows:
        when = "-" if r["last_active"] is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(r["last_active"]))
        if r["problem"] is not None:
            cells.append((r["name"], "-", "-", when, PROBLEMS[r["problem"]][zh]))
            continue
        seen = ", ".join(f"{k} {v}/{steps[k]}" for k, v in r["seen"].items()) or "-"
        step = f"{r['step']}/{r['steps']}" if r["step"] is not None else "-" if r["lesson"] is None else "?"
        lesson = "-" if r["lesson"] is None else shown(r["lesson"][:32])  # one no longer shipped: as saved
        cells.append((r["name"], lesson, step, when, seen))
    print(table(heads, cells, last_wraps=True))
    return 0
