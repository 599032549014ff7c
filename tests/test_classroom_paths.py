"""The path to authorized_keys on a classroom host: the folders above `.ssh` (a link there is followed only when
no one but root could have put it there), whose file root keeps, a lock the account holds, and a target that is
not a file. The tour account is played by `nobody` in child processes, as in test_classroom_host.py, with its
helpers (tests/helpers/classroom.py) and the `shared` fixture (a traversable folder in /tmp with the account's home).
"""

import os
import socket
import stat
import subprocess
import threading
import time

import pytest
from helpers.classroom import NOBODY, ROOT_ONLY, add, as_nobody, keygen, one_line_error
from helpers.cli import run_cli

OTHER = 1000  # a second account (cloudsdk here): any uid that is neither root nor the tour account


def as_user(uid: int, *argv: str) -> None:
    """Run argv as `uid`, with no groups of root's."""
    subprocess.run(argv, user=uid, group=uid, extra_groups=[], check=True, timeout=30, stdin=subprocess.DEVNULL)


def root_dir(path, mode=0o755):
    """A folder root owns with `mode` (chmod after mkdir: the umask does not narrow it)."""
    path.mkdir()
    os.chmod(path, mode)
    return path


# --- links in the folders above .ssh ------------------------------------------------------------------------

@ROOT_ONLY
@pytest.mark.parametrize("via", ["its own folder", "a root link to it", "a sticky folder"])
def test_a_link_the_account_planted_above_ssh_is_refused(shared, via):
    """The account makes its own folder's `home` a link to another home: root would make `.ssh` there and the
    learner would log in as that home's owner. Refused, whether reached directly, through a link root made, or
    planted in a sticky folder anyone may write in (as /tmp)."""
    victim_home = root_dir(shared.base / "victim-home")
    if via == "a sticky folder":
        folder = root_dir(shared.base / "sticky", 0o1777)
        who = "any user"
    else:
        folder = shared.base / "p"
        folder.mkdir()
        os.chown(folder, NOBODY, NOBODY)
        who = "nobody"
    as_nobody("ln", "-s", str(victim_home), str(folder / "home"))
    start = folder / "home"
    if via == "a root link to it":
        os.symlink("p/home", shared.base / "alias")
        start = shared.base / "alias"
    keys = start / ".ssh" / "authorized_keys"
    err = one_line_error(add(keys, shared.pub))
    assert "symbolic link" in err and str(folder / "home") in err and who in err, err
    assert "符号链接" in one_line_error(add(keys, shared.pub, "--lang", "zh"))
    assert os.listdir(victim_home) == []


@ROOT_ONLY
@pytest.mark.parametrize("how", ["absolute", "relative", "root's link in a sticky folder", "no .ssh yet", "dot-dot"])
def test_a_root_link_to_the_tour_home_is_followed(shared, how):
    """Real hosts have such links (/home -> /data/home, made by root in a root-owned folder): they still work,
    and a missing .ssh is made in the folder the link leads to, for that folder's owner."""
    homes = root_dir(shared.base / ("sticky" if "sticky" in how else "homes"), 0o1777 if "sticky" in how else 0o755)
    os.symlink("../home" if how == "relative" else str(shared.home), homes / "tour")
    keys = homes / "tour" / ".ssh" / "authorized_keys"
    if how == "no .ssh yet":
        shared.ssh.rmdir()
    if how == "dot-dot":  # `..` after a link is taken from where the link led, as the kernel takes it
        keys = homes / "tour" / ".." / "home" / ".ssh" / "authorized_keys"
    done = add(keys, shared.pub)
    assert done.returncode == 0, done.stderr
    for path, mode in ((shared.ssh, 0o700), (shared.keys, 0o600)):
        info = os.lstat(path)
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (NOBODY, mode), path
    assert "restrict," in shared.keys.read_text()


@ROOT_ONLY
def test_a_loop_of_links_is_refused_in_one_line(shared):
    os.symlink("loop", shared.base / "loop")
    assert "symbolic links" in one_line_error(add(shared.base / "loop" / ".ssh" / "authorized_keys", shared.pub))


# --- whose file root keeps ------------------------------------------------------------------------------------

@ROOT_ONLY
def test_a_file_another_account_planted_in_a_sticky_ssh_is_refused(shared):
    """A sticky .ssh anyone may write in: another account puts its own authorized_keys there first, and root
    would keep its lines and give the file to the tour account. sshd's StrictModes refuses such a folder too."""
    os.chmod(shared.ssh, 0o1777)
    theirs = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBq9LgU8Iu3y3Mhd0s0Eh0MS6/vm5Ptx6wO6dW0z0pQ4 other\n"
    as_user(OTHER, "sh", "-c", 'printf "%s" "$1" > "$2"', "sh", theirs, str(shared.keys))
    assert "other users can write" in one_line_error(add(shared.keys, shared.pub))
    info = os.lstat(shared.keys)
    assert (info.st_uid, shared.keys.read_text()) == (OTHER, theirs)


@ROOT_ONLY
def test_a_file_owned_by_another_account_is_refused(shared):
    """In the account's own 0700 .ssh, a file neither it nor root owns got there some other way: not kept."""
    shared.keys.write_text("# someone's\n")
    os.chown(shared.keys, OTHER, OTHER)
    err = one_line_error(add(shared.keys, shared.pub))
    assert "belongs to" in err and str(OTHER) in err, err
    assert "属于" in one_line_error(add(shared.keys, shared.pub, "--lang", "zh"))
    assert (os.lstat(shared.keys).st_uid, shared.keys.read_text()) == (OTHER, "# someone's\n")


# --- a lock the account holds ---------------------------------------------------------------------------------

@ROOT_ONLY
def test_add_waits_a_bounded_time_for_the_folders_lock(shared, monkeypatch, capsys):
    """The account may hold a flock on its .ssh forever: add says so after LOCK_WAIT instead of hanging."""
    import select

    from tui.cli import keys_file, main

    holder = subprocess.Popen(["sh", "-c", 'exec 9<"$1"; flock 9; echo held; exec sleep 60', "sh", str(shared.ssh)],
                              user=NOBODY, group=NOBODY, extra_groups=[], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, text=True)
    release = threading.Timer(8, holder.kill)  # code that waits for the lock forever gets it back here, and fails
    try:
        assert select.select([holder.stdout], [], [], 10)[0] and holder.stdout.readline() == "held\n"
        release.start()
        monkeypatch.setattr(keys_file, "LOCK_WAIT", 0.5, raising=False)
        for lang, words in (("en", "holds the lock"), ("zh", "持有")):
            start = time.monotonic()
            code = main(["classroom", "add", "ann", str(shared.pub), "--authorized-keys", str(shared.keys), "--lang",
                         lang])
            err = capsys.readouterr().err
            assert code == 2 and words in err and str(shared.ssh) in err and err.count("\n") == 1, err
            assert time.monotonic() - start < 4
    finally:
        release.cancel()
        holder.kill()
        holder.wait()
    assert not shared.keys.exists()


# --- a target that is not a file ------------------------------------------------------------------------------

def make_odd(tmp_path, case):
    """The --authorized-keys argument for `case`, with whatever odd thing it names made."""
    ssh = tmp_path / ".ssh"
    ssh.mkdir(mode=0o700)
    keys = ssh / "authorized_keys"
    if case == "a folder at authorized_keys":
        keys.mkdir()
    elif case == "a FIFO at authorized_keys":
        os.mkfifo(keys)
    elif case == "a socket at authorized_keys":
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(keys))
    elif case == "a FIFO as the folder":
        ssh.rmdir()
        os.mkfifo(ssh)
    elif case == "the .ssh folder":
        return str(ssh)
    elif case == "a trailing slash":
        return f"{ssh}/"
    elif case == "a trailing slash-dot":
        return f"{keys}/."
    elif case == "a device":
        return "/dev/null"
    return str(keys)


@pytest.mark.parametrize("case", ["a folder at authorized_keys", "the .ssh folder", "a trailing slash",
                                  "a trailing slash-dot", "a FIFO at authorized_keys", "a socket at authorized_keys",
                                  "a FIFO as the folder", "a device"])
def test_a_target_that_is_not_a_file_is_one_line(tmp_path, case):
    """add and list on a folder, FIFO, socket or device: one line and exit 2, never a traceback or a hang."""
    pub, keys = keygen(tmp_path, "ann"), make_odd(tmp_path, case)
    for words in (["add", "ann", str(pub)], ["list"], ["list", "--json"]):
        err = one_line_error(run_cli("classroom", *words, "--authorized-keys", keys))
        assert ("not a folder" if "as the folder" in case else "not a file") in err, (words, err)
    assert "不是" in one_line_error(run_cli("classroom", "list", "--lang", "zh", "--authorized-keys", keys))


def test_a_public_key_swapped_for_a_fifo_is_not_waited_on(tmp_path, monkeypatch, capsys):
    """The key file was a file when it was looked at and is a FIFO when it is opened: refused, never read from.
    (Code that waits on it gets a writer after 5 s, reads nothing, and says something else.)"""
    from tui.cli import main

    real_pub, fifo = keygen(tmp_path, "ann"), tmp_path / "swapped.pub"
    os.mkfifo(fifo)
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda p, *a, **k: real_stat(real_pub if str(p) == str(fifo) else p, *a, **k))
    writer = threading.Timer(5, lambda: os.close(os.open(fifo, os.O_WRONLY)))
    writer.daemon = True
    writer.start()
    try:
        code = main(["classroom", "add", "ann", str(fifo), "--authorized-keys", str(tmp_path / "ak"), "--lang", "en"])
    finally:
        writer.cancel()
    err = capsys.readouterr().err
    assert code == 2 and "not a file" in err and err.count("\n") == 1, err
