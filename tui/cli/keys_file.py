"""authorized_keys on disk, read and rewritten by `xf-tour classroom`.

Root writes this file into a folder that the tour account owns, and that account may plant a link or swap a
file there at any moment. So nothing here follows a link or trusts a path twice: the folder is opened once,
without following a link (O_NOFOLLOW), and every later step goes through that descriptor (dir_fd). The old
file is read through its own descriptor; the new one is created there (O_EXCL, never over a name that is
there), given its mode and owner through its descriptor (fchmod, fchown), and renamed into place there. A
folder that others may write in, a link, root's own file: each is refused, not worked around.
"""

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

from .parser import UsageError

MAX_KEYS_FILE = 4 << 20  # authorized_keys for a school and then some
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
DIRECTORY = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | NOFOLLOW


def shown(path) -> str:
    """A path or word as one safe line: repr() escapes newlines and control characters."""
    text = str(path)
    return text if text.isprintable() and " " not in text and "'" not in text else repr(text)


def home() -> Path:
    """The home of the user running this, from the password database: under sudo, HOME may still be the
    caller's."""
    try:
        import pwd
        return Path(pwd.getpwuid(os.geteuid()).pw_dir)
    except (ImportError, KeyError):
        return Path.home()


def keys_path(args) -> Path:
    """--authorized-keys as given (a link there is refused, never followed), or ~/.ssh/authorized_keys."""
    return Path(args.authorized_keys) if args.authorized_keys else home() / ".ssh" / "authorized_keys"


def missing(path: Path) -> UsageError:
    return UsageError(f"{shown(path)} does not exist: add a learner first (classroom add)",
                      f"{shown(path)} 不存在：请先添加学习者（classroom add）")


def linked(path: Path) -> UsageError:
    return UsageError(f"{shown(path)} is a symbolic link: classroom never follows one in the tour account's folder; "
                      "give the real path, or remove the link",
                      f"{shown(path)} 是符号链接：classroom 不会跟随导览账户文件夹里的链接；请给出真实路径，或删除该链接")


def roots_own(path) -> UsageError:
    """The refusal to let a learner in as root."""
    return UsageError(f"{shown(path)} is root's own authorized_keys: a learner added there would log in as root; "
                      "name the tour account's file with --authorized-keys",
                      f"{shown(path)} 是 root 自己的 authorized_keys：加在这里的学习者会以 root 身份登录；"
                      "请用 --authorized-keys 指定导览账户的文件")


@contextlib.contextmanager
def keys_folder(path: Path, write: bool = False):
    """The descriptor of the folder of authorized_keys `path`, opened without following a link. To `write`:
    made (0700, for the owner of the home it is in) if missing, refused when others may write in it or it
    is root's own ~/.ssh (when root runs this), and locked until the block ends, so two adds both land."""
    folder = path.parent
    if not path.name or path.name == "..":
        raise UsageError(f"{shown(path)} is not a file", f"{shown(path)} 不是文件")
    made = write and make_folder(folder)
    try:
        fd = os.open(folder, DIRECTORY)
    except FileNotFoundError:
        raise missing(path) from None
    except OSError as err:
        if os.path.islink(folder):
            raise linked(folder) from None
        raise UsageError(f"cannot open {shown(folder)}: {err.strerror}", f"无法打开 {shown(folder)}：{err.strerror}") \
            from None
    try:
        if made:
            give_made_folder(fd, folder)
        if write:
            check_folder(fd, folder, path)
            with contextlib.suppress(ImportError, OSError):  # none where flock is missing
                import fcntl
                fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)


def make_folder(folder: Path) -> bool:
    """mkdir `folder` 0700 unless something is there (a link there is refused when it is opened); whether it
    was made."""
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        return False
    except OSError as err:
        raise UsageError(f"cannot make {shown(folder)}: {err.strerror}", f"无法创建 {shown(folder)}：{err.strerror}") \
            from None
    return True


def give_made_folder(fd: int, folder: Path) -> None:
    """The folder just made, 0700 (mkdir's mode went through the umask) and, when root made it in a user's
    home, that user's: set through its descriptor, and only while it is still the empty one root made."""
    try:
        if os.fstat(fd).st_uid != os.geteuid() or os.listdir(fd):  # swapped for another folder since mkdir
            return
        os.fchmod(fd, 0o700)
        parent = os.stat(folder.parent)
        if os.geteuid() == 0 and (parent.st_uid, parent.st_gid) != (0, 0):
            os.fchown(fd, parent.st_uid, parent.st_gid)
    except OSError as err:
        raise UsageError(f"cannot make {shown(folder)}: {err.strerror}", f"无法创建 {shown(folder)}：{err.strerror}") \
            from None


def check_folder(fd: int, folder: Path, path: Path) -> None:
    """Refuse a folder where another account could swap the file while root writes it, and root's own."""
    mode = os.fstat(fd).st_mode
    if mode & 0o022 and not mode & stat.S_ISVTX:  # a sticky folder lets no one rename what is not theirs
        raise UsageError(f"other users can write in {shown(folder)} (mode {stat.S_IMODE(mode):o}), so they could "
                         f"swap the file while it is written: chmod 700 {shown(folder)}",
                         f"其他用户可以写入 {shown(folder)}（权限 {stat.S_IMODE(mode):o}），写入时文件可能被人调包："
                         f"请执行 chmod 700 {shown(folder)}")
    if os.geteuid() == 0:
        try:
            own = os.stat(home() / ".ssh")
        except OSError:
            return
        info = os.fstat(fd)
        if (own.st_dev, own.st_ino) == (info.st_dev, info.st_ino):
            raise roots_own(path)


def read_keys(folder_fd: int, path: Path, missing_ok: bool = True) -> tuple[bytes, list[str], os.stat_result | None]:
    """authorized_keys as it is, its lines and its stat, read through one descriptor opened without following a
    link; nothing (and None) when it does not exist yet and `missing_ok`."""
    try:
        fd = os.open(path.name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | NOFOLLOW, dir_fd=folder_fd)
    except FileNotFoundError:
        if missing_ok:
            return b"", [], None
        raise missing(path) from None
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.EMLINK):  # what O_NOFOLLOW says of a link (EMLINK: FreeBSD)
            raise linked(path) from None
        raise UsageError(f"cannot read {shown(path)}: {err.strerror}", f"无法读取 {shown(path)}：{err.strerror}") \
            from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # opened without blocking: a FIFO is refused here, never read
            raise UsageError(f"{shown(path)} is not a file", f"{shown(path)} 不是文件")
        if info.st_nlink != 1:  # a second name may be a file the account must not read through this one
            raise UsageError(f"{shown(path)} has {info.st_nlink} names (hard links): give it one",
                             f"{shown(path)} 有 {info.st_nlink} 个名字（硬链接）：请只保留一个")
        raw = f.read(MAX_KEYS_FILE + 1)
    if len(raw) > MAX_KEYS_FILE:
        raise UsageError(f"{shown(path)} is too large to be authorized_keys", f"{shown(path)} 太大，不像是 authorized_keys")
    return raw, raw.decode("utf-8", errors="replace").splitlines(), info


def write_keys(folder_fd: int, path: Path, raw: bytes, line: str, old: os.stat_result | None) -> None:
    """authorized_keys (`raw`, its bytes as they were; `old`, its stat) with `line` appended, replaced whole: a
    new file in the folder, written, synced, given its owner and mode through its descriptor, then renamed over
    the old one. A name swapped meanwhile is refused, never written through.

    The owner is the folder's, the account sshd reads the file as, and the mode 0600. In a folder root owns
    (AuthorizedKeysFile /etc/ssh/authorized_keys/%u, say) that is no account's: a file there keeps the owner and
    mode the admin gave it, less any write bit for others."""
    data = raw + (b"\n" if raw and not raw.endswith(b"\n") else b"") + line.encode("utf-8") + b"\n"
    folder = os.fstat(folder_fd)
    uid, gid, mode = ((old.st_uid, old.st_gid, stat.S_IMODE(old.st_mode) & 0o644) if old is not None and folder.st_uid == 0
                      else (folder.st_uid, folder.st_gid, 0o600))
    swapped = UsageError(f"{shown(path)} was swapped while it was written: another account writes in "
                         f"{shown(path.parent)}; look there before adding again",
                         f"{shown(path)} 在写入时被调包：有其他账户在写 {shown(path.parent)}；请先检查那里再添加")
    fd = tmp = None
    try:
        fd, tmp = create(folder_fd, path.name)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
        os.fchmod(fd, mode)
        if os.geteuid() == 0:
            os.fchown(fd, uid, gid)
        if not same(os.stat(tmp, dir_fd=folder_fd, follow_symlinks=False), os.fstat(fd)):
            raise swapped
        os.replace(tmp, path.name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        tmp = None
        now = os.stat(path.name, dir_fd=folder_fd, follow_symlinks=False)
        if not same(now, os.fstat(fd)):  # swapped between the check and the rename: a link is taken away
            if stat.S_ISLNK(now.st_mode):
                os.unlink(path.name, dir_fd=folder_fd)
            raise swapped
        with contextlib.suppress(OSError):  # the rename on disk too, where the file system can say so
            os.fsync(folder_fd)
    except OSError as err:
        raise UsageError(f"cannot write {shown(path)}: {err.strerror}", f"无法写入 {shown(path)}：{err.strerror}") from None
    finally:
        if fd is not None:
            os.close(fd)
        if tmp is not None:  # never followed: whatever now has that name goes, and nothing it points to
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder_fd)


def create(folder_fd: int, name: str) -> tuple[int, str]:
    """A new file .NAME-XXXXXXXX.tmp, 0600, in the folder: made here (O_EXCL), never a name already there."""
    for _ in range(100):
        tmp = f".{name}-{secrets.token_hex(4)}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600, dir_fd=folder_fd), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", name)


def same(a: os.stat_result, b: os.stat_result) -> bool:
    """Whether two stats are of one file."""
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
