"""Files written whole or not at all: the one way the tour replaces a file (progress, caches, trained weights,
authorized_keys).

write_atomic() makes a new file beside the target, a name no one has (O_EXCL) opened without following a link
(O_NOFOLLOW), sets its mode (and owner) through its descriptor, writes and syncs it, and renames it over the
target; then it syncs the folder, where the system can, so that the rename is on disk too. Every step after the
folder is opened goes through the folder's descriptor, so a folder renamed or swapped meanwhile cannot send a
later step elsewhere. A failure at any step removes the temporary file (by name in that folder: a link put in its
place is removed, never followed) and leaves the target as it was.

It also says where the tour keeps what it writes for a learner (state_dir). Nothing here imports anything but
the standard library (and platformdirs, which comes with textual, when no XF_TOUR_STATE_DIR is set): every layer
of the tour may use it.
"""

import contextlib
import errno
import os
import stat
from pathlib import Path

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | NOFOLLOW
TRIES = 100  # temporary names tried before giving up: each is 32 random bits
AT = os.open in os.supports_dir_fd and os.rename in os.supports_dir_fd  # POSIX: every step through the folder


def state_dir() -> Path:
    """XF_TOUR_STATE_DIR, or the platform's user state folder for xf-tour."""
    override = os.environ.get("XF_TOUR_STATE_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_state_dir  # comes with textual
    return Path(user_state_dir("xf-tour", appauthor=False))


class Swapped(OSError):
    """The file written is no longer the one at its name: someone else writes in the folder."""


def write_atomic(path, data, mode: int | None = 0o600, *, owner: tuple[int, int] | None = None,
                 dir_fd: int | None = None, prefix: str | None = None, suffix: str = ".tmp",
                 verify: bool = False) -> None:
    """Replace the file `path` with `data`, whole or not at all: a new file beside it, PREFIX + 8 hex digits +
    SUFFIX (PREFIX by default ".NAME-"), made 0600 with O_CREAT | O_EXCL | O_NOFOLLOW, given `mode` (fchmod:
    no umask) and `owner` (fchown, (uid, gid); an error if it fails) through its descriptor, written, fsynced,
    checked to be still the file at its temporary name (Swapped if not), and renamed over `path`; then the
    folder is fsynced where the file system allows. A link at `path` is replaced, never written through.

    `data`: bytes, or an iterable of buffers written one after the other (a file too big to hold twice, made as it
    is written: an error the iterable raises fails the write like any other).

    `mode` None: what a plain open() would leave: the mode, and the owner where this process may give it, of
    the regular file replaced; else 0o666 less the umask.

    `dir_fd`: `path` is a name in the folder open at `dir_fd` (no "/" in it), and the folder is never reached
    by path at all. Without it, `path`'s folder is opened once (as open() would reach it) and every step goes
    through that descriptor.

    `verify`: after the rename, check that `path` is the file written; if it is not, Swapped, and a link found
    there instead is removed. For a folder another account may write in, and only where writers are serialized
    (a lock): a second writer's rename, in between, fails the check.

    OSError when it cannot; the temporary file is then removed and `path` is as it was (unless `verify` found
    it swapped)."""
    path = os.fspath(path)
    if dir_fd is not None:
        if not path or os.sep in path or (os.altsep and os.altsep in path) or path in (os.curdir, os.pardir):
            raise ValueError(f"not a name in a folder: {path!r}")
        _write(dir_fd, None, path, data, mode, owner, prefix, suffix, verify)
        return
    folder, name = os.path.split(path)
    if not name:
        raise IsADirectoryError(errno.EISDIR, "a folder, not a file", path)
    folder = folder or os.curdir
    if not AT:  # no *at() calls here: the same steps by path
        _write(None, folder, name, data, mode, owner, prefix, suffix, verify)
        return
    fd = os.open(folder, FOLDER)
    try:
        _write(fd, folder, name, data, mode, owner, prefix, suffix, verify)
    finally:
        os.close(fd)


def _write(folder_fd, folder, name, data, mode, owner, prefix, suffix, verify) -> None:
    """write_atomic() in one folder: through `folder_fd`, or by path in `folder` where it is None."""
    def at(n):  # a name in the folder, and how to reach it
        return (n, {"dir_fd": folder_fd}) if folder_fd is not None else (os.path.join(folder, n), {})

    kept = None
    if mode is None:
        mode, kept = _as_open_would(*at(name))
    fd, tmp = _create(at, f".{name}-" if prefix is None else prefix, suffix)
    try:
        _fchmod(fd, mode, at(tmp))
        if owner is not None:
            os.fchown(fd, *owner)
        elif kept is not None:
            with contextlib.suppress(PermissionError):  # only root may give a file away
                os.fchown(fd, *kept)
        for chunk in (data,) if isinstance(data, (bytes, bytearray, memoryview)) else data:
            view = memoryview(chunk).cast("B")  # bytes, whatever the buffer's items
            while view:
                view = view[os.write(fd, view):]
        os.fsync(fd)
        mine = os.fstat(fd)
        tmp_at, tmp_kw = at(tmp)
        if not _same(os.stat(tmp_at, follow_symlinks=False, **tmp_kw), mine):
            raise Swapped(errno.EEXIST, "the temporary file was swapped while it was written", tmp)
        dst_at, dst_kw = at(name)
        os.replace(tmp_at, dst_at, **({"src_dir_fd": folder_fd, "dst_dir_fd": folder_fd} if folder_fd is not None
                                      else {}))
        tmp = None
        if verify:
            now = os.stat(dst_at, follow_symlinks=False, **dst_kw)
            if not _same(now, mine):  # swapped between the check and the rename: a link is taken away
                if stat.S_ISLNK(now.st_mode):
                    os.unlink(dst_at, **dst_kw)
                raise Swapped(errno.EEXIST, "the file was swapped as it was renamed into place", name)
    finally:
        os.close(fd)
        if tmp is not None:  # unlink never follows a link: whatever now has that name goes, nothing it points to
            with contextlib.suppress(OSError):
                tmp_at, tmp_kw = at(tmp)
                os.unlink(tmp_at, **tmp_kw)
    if folder_fd is not None:
        with contextlib.suppress(OSError):  # the rename on disk too, where the file system can say so
            os.fsync(folder_fd)


def _as_open_would(target, kw: dict) -> tuple[int, tuple[int, int] | None]:
    """The mode a plain open() leaves a file with, and the owner it keeps: a regular file's own (mode, (uid,
    gid)); for a new file, or one in place of a link, 0o666 less the umask and no owner."""
    try:
        old = os.stat(target, follow_symlinks=False, **kw)
    except OSError:
        old = None
    if old is not None and stat.S_ISREG(old.st_mode):
        return stat.S_IMODE(old.st_mode) & 0o777, (old.st_uid, old.st_gid)
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask, None


def _create(at, prefix: str, suffix: str) -> tuple[int, str]:
    """A new file PREFIX + 8 hex digits + SUFFIX, 0600, in the folder: made here (O_EXCL), never a name that
    is there already, a link included."""
    for _ in range(TRIES):
        tmp = f"{prefix}{_token()}{suffix}"
        target, kw = at(tmp)
        try:
            return os.open(target, CREATE, 0o600, **kw), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", prefix + suffix)


def _token() -> str:
    """8 random hex digits (os.urandom: `secrets` would import `random` and `hmac` on a start that needs neither)."""
    return os.urandom(4).hex()


def _fchmod(fd: int, mode: int, tmp) -> None:
    """The mode set through the descriptor; by name where the system has no fchmod (Windows before 3.13)."""
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:
        os.chmod(tmp[0], mode, **tmp[1])


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    """Whether two stats are of one file."""
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
