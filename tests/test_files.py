"""engine.files.write_atomic: the one way the tour replaces a file, whole or not at all."""

import errno
import os
import re
import stat

import pytest

from engine import files
from engine.files import Swapped, write_atomic

TEMP = re.compile(r"\.(?P<name>.+)-[0-9a-f]{8}\.tmp")


def names(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_it_writes_the_bytes_and_replaces_the_old_file(tmp_path):
    target = tmp_path / "out.json"
    write_atomic(target, b"first")
    assert target.read_bytes() == b"first"
    write_atomic(str(target), b"second")  # a str works as a Path does
    assert target.read_bytes() == b"second"
    assert names(tmp_path) == ["out.json"]


def test_an_iterable_of_buffers_is_written_one_after_the_other(tmp_path):
    import numpy as np
    target = tmp_path / "f"
    write_atomic(target, iter([b"ab", np.arange(3, dtype="<u2"), memoryview(b"cd")]))
    assert target.read_bytes() == b"ab\x00\x00\x01\x00\x02\x00cd"

    def failing():
        yield b"half"
        raise OSError(errno.ENOSPC, "no space")

    with pytest.raises(OSError, match="no space"):
        write_atomic(target, failing())
    assert target.read_bytes() == b"ab\x00\x00\x01\x00\x02\x00cd" and names(tmp_path) == ["f"]


def test_a_relative_path_is_written_in_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_atomic("here.txt", b"x")
    assert (tmp_path / "here.txt").read_bytes() == b"x"


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644, 0o400])
def test_the_mode_is_set_whatever_the_umask(tmp_path, mode):
    old = os.umask(0o077)
    try:
        write_atomic(tmp_path / "f", b"x", mode)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == mode


def test_the_default_mode_is_the_owners_alone(tmp_path):
    write_atomic(tmp_path / "f", b"x")
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == 0o600


def test_mode_none_is_what_a_plain_open_would_leave(tmp_path):
    """A new file: 0o666 less the umask; a file replaced keeps its own mode."""
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "new", b"x", None)
        assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o644
        kept = tmp_path / "kept"
        kept.write_bytes(b"old")
        kept.chmod(0o640)
        write_atomic(kept, b"new", None)
        assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_bytes() == b"new"
    finally:
        os.umask(old)


def test_the_temporary_name_is_prefix_hex_suffix(tmp_path, monkeypatch):
    """.NAME-XXXXXXXX.tmp by default, or the caller's prefix and suffix: what a sweep of stale ones matches."""
    seen, real_replace = [], os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst, **kw: (seen.append(os.path.basename(src)),
                                                                real_replace(src, dst, **kw)))
    write_atomic(tmp_path / "w.npz", b"x")
    write_atomic(tmp_path / "progress.json", b"x", prefix=".progress-", suffix=".tmp")
    assert TEMP.fullmatch(seen[0]) and TEMP.fullmatch(seen[0])["name"] == "w.npz"
    assert re.fullmatch(r"\.progress-[0-9a-f]{8}\.tmp", seen[1])


@pytest.mark.parametrize("fail_in", ["write", "fsync", "replace", "fchmod"])
def test_a_failure_leaves_the_old_file_whole_and_no_temporary_file(tmp_path, monkeypatch, fail_in):
    target = tmp_path / "f"
    target.write_bytes(b"old")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, fail_in, full)
    with pytest.raises(OSError) as err:
        write_atomic(target, b"new" * 1000)
    assert err.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert names(tmp_path) == ["f"]


def test_an_interrupt_mid_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    """Not only an OSError: a KeyboardInterrupt while writing removes the temporary file too."""
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "f", b"x")
    monkeypatch.undo()
    assert names(tmp_path) == []


def test_a_missing_folder_is_an_error_and_nothing_is_made(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_atomic(tmp_path / "no" / "f", b"x")
    assert names(tmp_path) == []


def test_a_folder_that_refuses_the_file_is_permission_denied(tmp_path, monkeypatch):
    """A folder this process may not write in (as root, every folder takes the file, so the refusal is made here)."""
    real_open = os.open

    def refuse_create(path, flags, *args, **kwargs):
        if flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse_create)
    with pytest.raises(PermissionError):
        write_atomic(tmp_path / "f", b"x")
    monkeypatch.undo()
    assert names(tmp_path) == []


def test_a_link_at_the_target_is_replaced_never_written_through(tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep me")
    victim.chmod(0o644)
    link = tmp_path / "out"
    link.symlink_to(victim)
    write_atomic(link, b"new", None)  # mode None: a link is not a file whose mode is kept
    assert not link.is_symlink() and link.read_bytes() == b"new"
    assert victim.read_bytes() == b"keep me" and stat.S_IMODE(victim.stat().st_mode) == 0o644


def test_a_link_planted_at_the_temporary_name_is_never_opened(tmp_path, monkeypatch):
    """The temporary file is made with O_EXCL and O_NOFOLLOW: a name already there, a link included, is passed
    over for another, and what the link points to is never created nor written."""
    victim = tmp_path / "victim"
    tokens = iter(["aaaaaaaa", "bbbbbbbb"])
    monkeypatch.setattr(files, "_token", lambda: next(tokens))
    (tmp_path / ".f-aaaaaaaa.tmp").symlink_to(victim)  # a dangling link: O_CREAT alone would make the victim
    write_atomic(tmp_path / "f", b"x")
    assert not os.path.lexists(victim)
    assert (tmp_path / "f").read_bytes() == b"x"
    assert names(tmp_path) == [".f-aaaaaaaa.tmp", "f"]


def test_no_free_temporary_name_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "_token", lambda: "00000000")
    (tmp_path / ".f-00000000.tmp").write_bytes(b"someone's")
    with pytest.raises(FileExistsError):
        write_atomic(tmp_path / "f", b"x")
    assert names(tmp_path) == [".f-00000000.tmp"]


def folder_fd(path):
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY)


def test_with_dir_fd_the_name_is_written_in_that_folder_whatever_its_path_becomes(tmp_path):
    """Through the folder's descriptor: a folder renamed and a link put in its place change nothing."""
    real, elsewhere = tmp_path / "real", tmp_path / "elsewhere"
    real.mkdir()
    elsewhere.mkdir()
    fd = folder_fd(real)
    try:
        real.rename(tmp_path / "moved")
        real.symlink_to(elsewhere)
        write_atomic("keys", b"x", dir_fd=fd)
    finally:
        os.close(fd)
    assert (tmp_path / "moved" / "keys").read_bytes() == b"x"
    assert names(elsewhere) == []


@pytest.mark.parametrize("name", ["a/b", "", ".", ".."])
def test_with_dir_fd_only_a_plain_name_is_taken(tmp_path, name):
    fd = folder_fd(tmp_path)
    try:
        with pytest.raises(ValueError):
            write_atomic(name, b"x", dir_fd=fd)
    finally:
        os.close(fd)


def swap_at(monkeypatch, when: str, folder, act):
    """Run `act` (the temporary file's name) the first time os.`when` is called, as another account would."""
    real, acted = getattr(os, when), []

    def striking(*args, **kwargs):
        if not acted:
            temps = [n for n in os.listdir(folder) if TEMP.fullmatch(n)]
            if temps:
                acted.append(temps[0])
                act(temps[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(os, when, striking)
    return acted


def test_a_temporary_file_swapped_for_a_link_is_refused_and_the_link_removed(tmp_path, monkeypatch):
    """Once the file is written, its name is made a link to another file: the rename is refused (Swapped), the
    link is removed, and neither the target nor the link's file is written."""
    folder, victim = tmp_path / "folder", tmp_path / "victim"
    folder.mkdir()
    victim.write_bytes(b"keep me")
    (folder / "keys").write_bytes(b"old")

    def plant(tmp):
        os.rename(folder / tmp, folder / "aside")
        (folder / tmp).symlink_to(victim)

    acted = swap_at(monkeypatch, "fsync", folder, plant)
    fd = folder_fd(folder)
    try:
        with pytest.raises(Swapped):
            write_atomic("keys", b"new", dir_fd=fd)
    finally:
        os.close(fd)
    monkeypatch.undo()
    assert acted
    assert victim.read_bytes() == b"keep me" and (folder / "keys").read_bytes() == b"old"
    assert names(folder) == ["aside", "keys"]  # the planted link is gone; the moved file is the account's to see


def test_verify_takes_away_a_link_renamed_into_place(tmp_path, monkeypatch):
    """With verify, a link swapped in just before the rename, and so renamed into place, is found and removed."""
    folder, victim = tmp_path / "folder", tmp_path / "victim"
    folder.mkdir()
    victim.write_bytes(b"keep me")

    def plant(tmp):
        os.rename(folder / tmp, folder / "aside")
        (folder / tmp).symlink_to(victim)

    acted = swap_at(monkeypatch, "replace", folder, plant)
    fd = folder_fd(folder)
    try:
        with pytest.raises(Swapped):
            write_atomic("keys", b"new", dir_fd=fd, verify=True)
    finally:
        os.close(fd)
    monkeypatch.undo()
    assert acted and victim.read_bytes() == b"keep me"
    assert names(folder) == ["aside"]  # no link is left as the target


def test_the_mode_is_set_on_the_open_file_not_by_name(tmp_path, monkeypatch):
    """fchmod on the descriptor: a chmod by name would follow a link swapped in at the temporary name."""
    monkeypatch.setattr(os, "chmod", lambda *a, **k: pytest.fail("chmod by name"))
    write_atomic(tmp_path / "f", b"x", 0o640)
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == 0o640


def test_owner_is_given_through_the_descriptor(tmp_path, monkeypatch):
    """fchown on the open temporary file, never chown by name (which a swapped-in link would redirect)."""
    given = []
    monkeypatch.setattr(os, "chown", lambda *a, **k: pytest.fail("chown by name"))
    monkeypatch.setattr(os, "lchown", lambda *a, **k: pytest.fail("lchown by name"))
    monkeypatch.setattr(os, "fchown", lambda fd, uid, gid: given.append((type(fd), uid, gid)))
    write_atomic(tmp_path / "f", b"x", 0o600, owner=(65534, 65534))
    assert given == [(int, 65534, 65534)] and (tmp_path / "f").read_bytes() == b"x"


def test_an_owner_that_cannot_be_given_is_an_error_and_leaves_nothing(tmp_path, monkeypatch):
    def refused(*args):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "fchown", refused)
    with pytest.raises(PermissionError):
        write_atomic(tmp_path / "f", b"x", owner=(1, 1))
    monkeypatch.undo()
    assert names(tmp_path) == []


def test_mode_none_keeps_the_owner_only_where_it_may(tmp_path, monkeypatch):
    """mode None gives the replaced file's owner back where this process may: a refusal is not an error."""
    (tmp_path / "f").write_bytes(b"old")
    given = []

    def refused(fd, uid, gid):
        given.append((uid, gid))
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "fchown", refused)
    write_atomic(tmp_path / "f", b"new", None)
    assert given == [(os.getuid(), os.getgid())] and (tmp_path / "f").read_bytes() == b"new"


def test_the_folder_is_synced_after_the_rename(tmp_path, monkeypatch):
    synced, real = [], os.fsync

    def recording(fd):
        synced.append(stat.S_ISDIR(os.fstat(fd).st_mode))
        return real(fd)

    monkeypatch.setattr(os, "fsync", recording)
    write_atomic(tmp_path / "f", b"x")
    assert synced == [False, True]  # the file, then its folder
