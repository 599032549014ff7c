"""authorized_keys on disk, read and rewritten by `xf-tour classroom`.

Root writes this file into a folder that the tour account owns, and that account may plant a link or swap a
file there at any moment, in that folder or in any folder of its own above it. So nothing here follows a link
the account could have put anywhere on the way, or trusts a path twice: the folder is reached name by name
from "/", each opened without following a link (O_NOFOLLOW) through the one before (dir_fd), and every later
step goes through the folder's descriptor. The old file is read through its own descriptor; the new one is
created there (O_EXCL, never over a name that is there), given its mode and owner through its descriptor
(fchmod, fchown), and renamed into place there. A folder that others may write in, a link they could have
made, root's own file, a file of a third account: each is refused, not worked around.
"""

import contextlib
import errno
import os
import stat
import time
from pathlib import Path

from engine.files import Swapped, write_atomic

from .parser import UsageError

MAX_KEYS_FILE = 4 << 20  # authorized_keys for a school and then some
MAX_LINKS = 40           # links followed on the way to one folder: the kernel's own bound
LOCK_WAIT = 10.0         # seconds add waits for the folder's lock: the account itself may hold it forever
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
    """--authorized-keys as given (a link there is refused, never followed), or ~/.ssh/authorized_keys. A path
    that ends in "/" or "/." names a folder (Path would drop that ending): refused here."""
    given = args.authorized_keys
    if given and (given.endswith(("/", "/.", "/..")) or given in (".", "..")):
        raise not_a_file(given)
    return Path(given) if given else home() / ".ssh" / "authorized_keys"


def not_a_file(path) -> UsageError:
    """The refusal of a folder, FIFO, socket or device where authorized_keys should be."""
    return UsageError(f"{shown(path)} is not a file", f"{shown(path)} 不是文件")


def missing(path: Path) -> UsageError:
    return UsageError(f"{shown(path)} does not exist: add a learner first (classroom add)",
                      f"{shown(path)} 不存在：请先添加学习者（classroom add）")


def linked(path: Path) -> UsageError:
    return UsageError(f"{shown(path)} is a symbolic link: classroom never follows one in the tour account's folder; "
                      "give the real path, or remove the link",
                      f"{shown(path)} 是符号链接：classroom 不会跟随导览账户文件夹里的链接；"
                      "请给出真实路径，或删除该链接")


def roots_own(path) -> UsageError:
    """The refusal to let a learner in as root."""
    return UsageError(f"{shown(path)} is root's own authorized_keys: a learner added there would log in as root; "
                      "name the tour account's file with --authorized-keys",
                      f"{shown(path)} 是 root 自己的 authorized_keys：加在这里的学习者会以 root 身份登录；"
                      "请用 --authorized-keys 指定导览账户的文件")


@contextlib.contextmanager
def keys_folder(path: Path, write: bool = False):
    """The descriptor of the folder of authorized_keys `path` (see open_folder). To `write`: made (0700, for the
    owner of the folder it is in) if missing, refused when others may write in it or it is root's own ~/.ssh
    (when root runs this), and locked until the block ends, so two adds both land."""
    folder = path.parent
    if not path.name or path.name == "..":
        raise not_a_file(path)
    try:
        fd, made_in = open_folder(folder, make=write)
    except FileNotFoundError as err:
        raise (UsageError(f"{shown(err.filename)} does not exist", f"{shown(err.filename)} 不存在") if write
               else missing(path)) from None
    try:
        if made_in is not None:
            give_made_folder(fd, folder, made_in)
        if write:
            check_folder(fd, folder, path)
            lock(fd, folder)
        yield fd
    finally:
        os.close(fd)


def open_folder(folder: Path, make: bool = False) -> tuple[int, os.stat_result | None]:
    """The descriptor of `folder`, reached name by name from "/" (a relative path from the working folder's),
    each name opened without following a link through the folder before it: the kernel never walks the path,
    so a link the account planted in a folder of its own above `.ssh` is never followed behind our back.

    A link on the way is followed only where no one but root could have put it (check_link), at most MAX_LINKS
    of them. `..`, in the path or in a link, goes back up the folders already opened here, never through the
    file system, so a folder the account moves meanwhile leads nowhere else; after a link that is up from where
    the link led, as the kernel goes. With `make`, a missing last folder is made 0700 in the one before it, and
    the stat of that one is returned too (whose the new folder should be); else None. FileNotFoundError (its
    filename the missing path) when a folder is missing; UsageError for anything else."""
    try:
        text = str(folder) if folder.is_absolute() else os.path.join(os.getcwd(), folder)
        opened = [os.open("/", DIRECTORY)]
    except OSError as err:
        raise UsageError(f"cannot open {shown(folder)}: {err.strerror}", f"无法打开 {shown(folder)}：{err.strerror}") \
            from None
    todo, names, links, made_in, tried = names_of(text)[::-1], [], 0, None, False  # todo: the next name last
    try:
        while todo:
            name = todo.pop()
            if name == "..":
                if len(opened) > 1:  # at "/", ".." is "/", as for the kernel
                    os.close(opened.pop())
                    names.pop()
                continue
            here, where = opened[-1], "/" + "/".join([*names, name])
            try:
                opened.append(os.open(name, DIRECTORY, dir_fd=here))
                names.append(name)
                continue
            except OSError as err:
                failed = err
            try:
                info = os.stat(name, dir_fd=here, follow_symlinks=False)
            except FileNotFoundError:
                if not (make and not todo and not tried and isinstance(failed, FileNotFoundError)):
                    raise FileNotFoundError(errno.ENOENT, "missing", where) from None
                made_in, tried = made(here, name, where), True
                todo.append(name)  # opened as any other name: whatever is there now
                continue
            except OSError:
                info = None
            if (info is None or not stat.S_ISLNK(info.st_mode)) and failed.errno == errno.ENOTDIR:
                raise UsageError(f"{shown(where)} is not a folder", f"{shown(where)} 不是文件夹")
            if info is None or not stat.S_ISLNK(info.st_mode):
                raise UsageError(f"cannot open {shown(where)}: {failed.strerror}",
                                 f"无法打开 {shown(where)}：{failed.strerror}")
            links += 1
            if links > MAX_LINKS:
                raise UsageError(f"{shown(folder)}: more than {MAX_LINKS} symbolic links on the way; give the real "
                                 "path",
                                 f"{shown(folder)}：途中的符号链接超过 {MAX_LINKS} 个；请给出真实路径")
            check_link(os.fstat(here), info, where)
            target = os.readlink(name, dir_fd=here)
            if target.startswith("/"):
                while len(opened) > 1:
                    os.close(opened.pop())
                names.clear()
            todo.extend(names_of(target)[::-1])
        return opened.pop(), made_in
    except FileNotFoundError:
        raise
    except OSError as err:
        raise UsageError(f"cannot open {shown(folder)}: {err.strerror}", f"无法打开 {shown(folder)}：{err.strerror}") \
            from None
    finally:
        for fd in opened:
            os.close(fd)


def names_of(text: str) -> list[str]:
    """The names in a path, in order: empty ones and "." dropped, ".." kept (open_folder goes up itself)."""
    return [x for x in text.split("/") if x not in ("", ".")]


def check_link(holder: os.stat_result, link: os.stat_result, where: str) -> None:
    """Refuse a link that anyone but root could have put in its folder (`holder`) or replaced since: followed only
    in a folder root owns that no one else may write in, or a sticky one (others may add names there, but not
    replace root's) when root owns the link. /home as root's link to /data/home stays usable. (Run by another
    user, that user's own links count as root's: no one else's could lead anywhere through them.)"""
    mode, trusted = holder.st_mode, (0, os.geteuid())
    if holder.st_uid in trusted and (not mode & 0o022 or mode & stat.S_ISVTX and link.st_uid in trusted):
        return
    if mode & 0o002:
        en, zh = ["any user"], ["任何用户"]
    else:
        en, zh = [], []
        if holder.st_uid not in trusted:
            en.append(f"user {account(holder.st_uid)}")
            zh.append(f"用户 {account(holder.st_uid)}")
        if mode & 0o020:
            en.append(f"group {account(holder.st_gid, group=True)}")
            zh.append(f"组 {account(holder.st_gid, group=True)}")
    raise UsageError(f"{shown(where)} is a symbolic link in a folder {' and '.join(en)} may write in: classroom "
                     "follows a link only where no one but root could have put it; give the real path",
                     f"{shown(where)} 是符号链接，所在文件夹 {' 和 '.join(zh)} 可以写入：classroom 只跟随只有 root "
                     "能放置的链接；请给出真实路径")


def account(number: int, group: bool = False) -> str:
    """A user's (or group's) name and number, as "nobody (uid 65534)"; the number alone where it has no name."""
    try:
        if group:
            import grp
            return f"{grp.getgrgid(number).gr_name} (gid {number})"
        import pwd
        return f"{pwd.getpwuid(number).pw_name} (uid {number})"
    except (ImportError, KeyError):
        return f"{'gid' if group else 'uid'} {number}"


def made(here: int, name: str, where: str) -> os.stat_result | None:
    """mkdir `name` 0700 in the folder `here`: the stat of `here` when made, None when something is there now."""
    try:
        os.mkdir(name, 0o700, dir_fd=here)
    except FileExistsError:
        return None
    except OSError as err:
        raise UsageError(f"cannot make {shown(where)}: {err.strerror}", f"无法创建 {shown(where)}：{err.strerror}") \
            from None
    return os.fstat(here)


def give_made_folder(fd: int, folder: Path, parent: os.stat_result) -> None:
    """The folder just made, 0700 (mkdir's mode went through the umask) and, when root made it in a user's
    folder (`parent`, its stat), that user's: set through its descriptor, and only while it is still the empty
    one root made."""
    try:
        if os.fstat(fd).st_uid != os.geteuid() or os.listdir(fd):  # swapped for another folder since mkdir
            return
        os.fchmod(fd, 0o700)
        if os.geteuid() == 0 and (parent.st_uid, parent.st_gid) != (0, 0):
            os.fchown(fd, parent.st_uid, parent.st_gid)
    except OSError as err:
        raise UsageError(f"cannot make {shown(folder)}: {err.strerror}", f"无法创建 {shown(folder)}：{err.strerror}") \
            from None


def lock(fd: int, folder: Path) -> None:
    """flock the folder so that two adds both land, waiting at most LOCK_WAIT for another holder: the account
    may hold that lock forever, and add then says so rather than hang. Nothing where flock is missing."""
    try:
        import fcntl
    except ImportError:
        return
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise UsageError(f"another process holds the lock on {shown(folder)} and kept it {LOCK_WAIT:g} s: "
                                 "another classroom add, or a program of the account's; try again when it ends",
                                 f"另一个进程持有 {shown(folder)} 的锁，已等待 {LOCK_WAIT:g} 秒：可能是另一个 "
                                 "classroom add，或该账户的程序；请等它结束后再试") from None
            time.sleep(0.05)
        except OSError:  # a file system without flock
            return


def check_folder(fd: int, folder: Path, path: Path) -> None:
    """Refuse a folder where another account could plant the file or swap it while root writes it, and root's own."""
    mode = os.fstat(fd).st_mode
    if mode & 0o022:  # sticky too: others could plant authorized_keys before it is there (sshd's StrictModes agrees)
        raise UsageError(f"other users can write in {shown(folder)} (mode {stat.S_IMODE(mode):o}), so they could "
                         f"put their own file there or swap it while it is written: chmod 700 {shown(folder)}",
                         f"其他用户可以写入 {shown(folder)}（权限 {stat.S_IMODE(mode):o}），可能事先放入自己的文件，"
                         "或在写入时调包："
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
    link; nothing (and None) when it does not exist yet and `missing_ok`. A folder, FIFO, socket or device is
    refused: looked at before it is opened, and checked again through the descriptor (it may have been swapped)."""
    try:
        info = os.stat(path.name, dir_fd=folder_fd, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            raise linked(path)
        if not stat.S_ISREG(info.st_mode):
            raise not_a_file(path)
        fd = os.open(path.name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | NOFOLLOW,
                     dir_fd=folder_fd)
    except FileNotFoundError:
        if missing_ok:
            return b"", [], None
        raise missing(path) from None
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.EMLINK):  # what O_NOFOLLOW says of a link (EMLINK: FreeBSD)
            raise linked(path) from None
        raise UsageError(f"cannot read {shown(path)}: {err.strerror}", f"无法读取 {shown(path)}：{err.strerror}") \
            from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # opened without blocking: a FIFO swapped in is refused here, never read
            raise not_a_file(path)
        if info.st_nlink != 1:  # a second name may be a file the account must not read through this one
            raise UsageError(f"{shown(path)} has {info.st_nlink} names (hard links): give it one",
                             f"{shown(path)} 有 {info.st_nlink} 个名字（硬链接）：请只保留一个")
        with os.fdopen(fd, "rb", closefd=False) as f:
            raw = f.read(MAX_KEYS_FILE + 1)
    except OSError as err:
        raise UsageError(f"cannot read {shown(path)}: {err.strerror}", f"无法读取 {shown(path)}：{err.strerror}") \
            from None
    finally:
        os.close(fd)
    if len(raw) > MAX_KEYS_FILE:
        raise UsageError(f"{shown(path)} is too large to be authorized_keys",
                         f"{shown(path)} 太大，不像是 authorized_keys")
    return raw, raw.decode("utf-8", errors="replace").splitlines(), info


def write_keys(folder_fd: int, path: Path, raw: bytes, line: str, old: os.stat_result | None) -> None:
    """authorized_keys (`raw`, its bytes as they were; `old`, its stat) with `line` appended, replaced whole
    (engine.files.write_atomic): a new file in the folder, given its owner and mode through its descriptor,
    written, synced, then renamed over the old one. A name swapped meanwhile is refused, never written through.

    The owner is the folder's, the account sshd reads the file as, and the mode 0600. In a folder root owns
    (AuthorizedKeysFile /etc/ssh/authorized_keys/%u, say) that is no account's: a file there keeps the owner and
    mode the admin gave it, less any write bit for others."""
    data = raw + (b"\n" if raw and not raw.endswith(b"\n") else b"") + line.encode("utf-8") + b"\n"
    folder = os.fstat(folder_fd)
    if old is not None and folder.st_uid != 0 and old.st_uid not in (0, folder.st_uid):  # root's folder: root's say
        raise UsageError(f"{shown(path)} belongs to {account(old.st_uid)}, neither to {account(folder.st_uid)}, who "
                         f"owns {shown(path.parent)}, nor to root: another account may have put it there; look at "
                         "it, then chown or remove it",
                         f"{shown(path)} 属于 {account(old.st_uid)}，既不属于 {shown(path.parent)} 的所有者 "
                         f"{account(folder.st_uid)}，也不属于 root：可能是其他账户放在那里的；"
                         "请先检查，再 chown 或删除它")
    uid, gid, mode = ((old.st_uid, old.st_gid, stat.S_IMODE(old.st_mode) & 0o644)
                      if old is not None and folder.st_uid == 0 else (folder.st_uid, folder.st_gid, 0o600))
    swapped = UsageError(f"{shown(path)} was swapped while it was written: another account writes in "
                         f"{shown(path.parent)}; look there before adding again",
                         f"{shown(path)} 在写入时被调包：有其他账户在写 {shown(path.parent)}；请先检查那里再添加")
    try:
        write_atomic(path.name, data, mode, owner=(uid, gid) if os.geteuid() == 0 else None, dir_fd=folder_fd,
                     verify=True)
    except Swapped:
        raise swapped from None
    except OSError as err:
        raise UsageError(f"cannot write {shown(path)}: {err.strerror}",
                         f"无法写入 {shown(path)}：{err.strerror}") from None
