"""The classroom host as hostile ground: root runs `classroom add` into a folder that the tour account owns, so
that account can plant links and swap files there. These tests play that account with a real unprivileged
user (`nobody`, uid 65534) in a child process, and check that nothing root writes lands anywhere else; then
the learner folders, the key sizes, and what `classroom` and `train` echo to a terminal. The account and key
helpers are tests/helpers/classroom.py's; the `shared` folder is a fixture of tests/conftest.py.
"""

import base64
import json
import os
import shutil
import stat
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers.classroom import NOBODY, ROOT_ONLY, add, as_nobody, keygen, one_line_error
from helpers.cli import run_cli

from tui.progress import Progress, Store, learner_dir

UNSAFE = ("\x1b", "\x07", "\x9b", "\u202e")  # ESC, BEL, the one-byte CSI, a bidi override


def untouched(victim: Path) -> None:
    info = os.lstat(victim)
    assert victim.read_text() == "root's own file\n"
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (0, 0, 0o644)


# --- links, swaps and open folders --------------------------------------------------------------------------

@ROOT_ONLY
def test_add_refuses_a_link_the_account_planted_at_authorized_keys(shared):
    as_nobody("ln", "-s", str(shared.victim), str(shared.keys))
    assert "symbolic link" in one_line_error(add(shared.keys, shared.pub))
    assert "符号链接" in one_line_error(add(shared.keys, shared.pub, "--lang", "zh"))
    untouched(shared.victim)
    assert os.readlink(shared.keys) == str(shared.victim)  # refused: not even the link was replaced


@ROOT_ONLY
def test_add_refuses_a_linked_ssh_folder(shared):
    as_nobody("mv", str(shared.ssh), str(shared.home / "old"))
    as_nobody("ln", "-s", str(shared.base), str(shared.ssh))  # root's folder, where the victim is
    assert "symbolic link" in one_line_error(add(shared.keys, shared.pub))
    untouched(shared.victim)
    assert sorted(os.listdir(shared.base)) == ["home", "victim"]


@ROOT_ONLY
@pytest.mark.parametrize("before", ["fsync", "replace"])
def test_a_temp_file_swapped_for_a_link_changes_no_other_file(shared, monkeypatch, capsys, before):
    """The race, made certain: the account moves root's temporary file aside and puts a link to root's file in
    its place, once the file is written (before its mode and owner are set), or just before the rename. Mode
    and owner are set on the file root opened, and a link never ends up as authorized_keys."""
    from tui.cli import main

    real, acted = getattr(os, before), []

    def the_account_strikes(*args, **kwargs):
        temps = [p for p in shared.ssh.iterdir() if p.name.startswith(".authorized_keys-")]
        if temps and not acted:
            acted.append(temps[0].name)
            as_nobody("sh", "-c", 'mv "$1" "$2" && ln -s "$3" "$1"', "sh", str(temps[0]), str(shared.ssh / "aside"),
                      str(shared.victim))
        return real(*args, **kwargs)

    monkeypatch.setattr(os, before, the_account_strikes)
    code = main(["classroom", "add", "ann", str(shared.pub), "--authorized-keys", str(shared.keys), "--lang", "en"])
    err = capsys.readouterr().err
    assert acted, "the temporary file was never seen"
    untouched(shared.victim)
    assert not shared.keys.is_symlink()
    assert code == 2 and "swapped while" in err and err.count("\n") == 1, err


@ROOT_ONLY
def test_add_refuses_a_second_name_for_another_file(shared):
    """A hard link to root's file (made here by root: the kernel's protected_hardlinks stops the account) would
    have its contents copied into a file the account owns."""
    os.link(shared.victim, shared.keys)
    assert "hard link" in one_line_error(add(shared.keys, shared.pub))
    untouched(shared.victim)
    assert os.stat(shared.keys).st_ino == os.stat(shared.victim).st_ino


@ROOT_ONLY
@pytest.mark.parametrize("mode", [0o777, 0o770, 0o733])
def test_add_refuses_a_folder_others_may_write(shared, mode):
    os.chmod(shared.ssh, mode)
    assert "other users can write" in one_line_error(add(shared.keys, shared.pub))
    assert not shared.keys.exists()


@pytest.mark.parametrize("mode", [0o1777, 0o3777], ids=["1777", "3777"])
def test_a_sticky_shared_folder_is_refused_too(tmp_path, mode):
    """The sticky bit stops others renaming root's file, not planting their own authorized_keys before it is
    there; sshd's StrictModes refuses a group- or world-writable folder, sticky or not, and so does add."""
    folder = tmp_path / "sticky"
    folder.mkdir()
    os.chmod(folder, mode)
    assert "other users can write" in one_line_error(add(folder / "authorized_keys", keygen(tmp_path, "ann")))
    assert os.listdir(folder) == []


# --- whose file, which mode ---------------------------------------------------------------------------------

@ROOT_ONLY
@pytest.mark.parametrize("before", ["root 0644", "none"])
def test_the_file_goes_to_the_folders_owner_0600(shared, tmp_path, before):
    """sshd reads authorized_keys as the account that owns the folder: a root-owned 0644 file it could read
    must not become root 0600, which it cannot."""
    if before != "none":
        shared.keys.write_text("# the teacher's notes\n")
        os.chmod(shared.keys, 0o644)
    done = add(shared.keys, shared.pub)
    assert done.returncode == 0, done.stderr
    info = os.lstat(shared.keys)
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (NOBODY, NOBODY, 0o600)
    assert shared.keys.read_text().startswith("# the teacher's notes\n" if before != "none" else "restrict,")
    assert [p.name for p in shared.ssh.iterdir()] == ["authorized_keys"]  # no temporary file left


@ROOT_ONLY
@pytest.mark.parametrize("owner, mode, after", [(0, 0o666, 0o644), (NOBODY, 0o640, 0o640)])
def test_in_a_folder_root_owns_the_file_keeps_its_owner_and_mode(tmp_path, owner, mode, after):
    """AuthorizedKeysFile /etc/ssh/authorized_keys/%u: the folder is root's, no account's, so the file keeps the
    owner and mode the admin gave it (the account must read it), less any write bit for others."""
    keys = tmp_path / "keys" / "tour"
    keys.parent.mkdir(mode=0o755)
    keys.write_text("")
    os.chown(keys, owner, owner)
    os.chmod(keys, mode)
    assert add(keys, keygen(tmp_path, "ann")).returncode == 0
    info = os.lstat(keys)
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (owner, owner, after)


@ROOT_ONLY
def test_a_missing_ssh_folder_is_made_for_the_homes_owner(shared):
    shutil.rmtree(shared.ssh)
    assert add(shared.keys, shared.pub).returncode == 0
    for path, mode in ((shared.ssh, 0o700), (shared.keys, 0o600)):
        info = os.lstat(path)
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (NOBODY, mode), path


@ROOT_ONLY
@pytest.mark.parametrize("explicit", [False, True])
def test_root_never_writes_its_own_authorized_keys(tmp_path, monkeypatch, capsys, explicit):
    """Without --authorized-keys, root's own file is the default: a learner added there would log in as
    root. Refused, and so is naming that file."""
    import pwd

    from tui.cli import main

    home = tmp_path / "roothome"
    home.mkdir()
    real = pwd.getpwuid
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: SimpleNamespace(pw_dir=str(home), pw_name="root", pw_uid=0)
                        if uid == 0 else real(uid))
    (home / ".ssh").mkdir(mode=0o700)
    argv = ["classroom", "add", "ann", str(keygen(tmp_path, "ann")), "--lang", "en"]
    code = main(argv + (["--authorized-keys", str(home / ".ssh" / "authorized_keys")] if explicit else []))
    err = capsys.readouterr().err
    assert code == 2 and "--authorized-keys" in err and "root" in err and err.count("\n") == 1, err
    assert os.listdir(home / ".ssh") == []


# --- list -----------------------------------------------------------------------------------------------------

def test_list_says_a_missing_file_is_missing(tmp_path):
    keys = tmp_path / "authorized_keys"
    assert "does not exist" in one_line_error(run_cli("classroom", "list", "--authorized-keys", str(keys)))
    assert "不存在" in one_line_error(run_cli("classroom", "list", "--lang", "zh", "--authorized-keys", str(keys)))
    assert "does not exist" in one_line_error(run_cli("classroom", "list", "--json", "--authorized-keys", str(keys)))


# --- learner folders ------------------------------------------------------------------------------------------

def report(state, *more):
    return run_cli("classroom", "report", *more, env={"XF_TOUR_STATE_DIR": str(state), "TZ": "UTC"})


def test_a_linked_learner_folder_is_refused_by_the_tour_and_shown_by_report(tmp_path):
    state, elsewhere = tmp_path / "state", tmp_path / "elsewhere"
    assert Store(learner_dir("ann", state)).save(Progress("ffn", 0, "en", {}))
    assert Store(elsewhere).save(Progress("ffn", 1, "en", {}))
    (state / "learners" / "bob").symlink_to(elsewhere)
    done = run_cli("--learner", "bob", env={"XF_TOUR_STATE_DIR": str(state)})
    assert "symbolic link" in one_line_error(done)
    zh = run_cli("--learner", "bob", "--lang", "zh", env={"XF_TOUR_STATE_DIR": str(state)})
    assert "符号链接" in one_line_error(zh)
    rows = {r["name"]: r for r in json.loads(report(state, "--json").stdout)["learners"]}
    assert rows["bob"]["problem"] == "symlink" and rows["bob"]["lesson"] is None and rows["ann"]["problem"] is None
    assert "folder is a symbolic link, not read" in report(state).stdout
    assert "文件夹是符号链接，未读取" in report(state, "--lang", "zh").stdout


def test_a_linked_learners_folder_is_refused_by_both(tmp_path):
    state, elsewhere = tmp_path / "state", tmp_path / "elsewhere"
    assert Store(learner_dir("ann", elsewhere)).save(Progress("ffn", 0, "en", {}))
    state.mkdir()
    (state / "learners").symlink_to(elsewhere / "learners")
    assert "symbolic link" in one_line_error(run_cli("--learner", "ann", env={"XF_TOUR_STATE_DIR": str(state)}))
    assert "symbolic link" in one_line_error(report(state))
    assert "符号链接" in one_line_error(report(state, "--lang", "zh"))


# --- key sizes, without ssh-keygen --------------------------------------------------------------------------

def blob_key(kind: str, *fields: bytes) -> str:
    blob = b"".join(len(x).to_bytes(4, "big") + x for x in fields)
    return f"{kind} {base64.b64encode(blob).decode()}\n"


def mpint(n: int) -> bytes:
    return n.to_bytes(n.bit_length() // 8 + 1, "big")  # a leading zero byte where the top bit is set


def test_our_own_check_bounds_key_sizes_without_ssh_keygen(tmp_path, monkeypatch, capsys):
    from tui.cli import main

    keys, e = tmp_path / "authorized_keys", mpint(65537)
    good = [keygen(tmp_path, "r", "-t", "rsa", "-b", "4096"), keygen(tmp_path, "p", "-t", "ecdsa", "-b", "521"),
            keygen(tmp_path, "q", "-t", "ecdsa", "-b", "384"), keygen(tmp_path, "d")]
    monkeypatch.setenv("PATH", str(tmp_path / "no-such-bin"))  # no ssh-keygen: our own check stands alone
    bad = {"fake-53k": blob_key("ssh-rsa", b"ssh-rsa", e, b"\x00" + b"\xff" * 39_750),  # a 53 KB file
           "rsa-16385": blob_key("ssh-rsa", b"ssh-rsa", e, mpint((1 << 16384) + 1)),
           "rsa-512": blob_key("ssh-rsa", b"ssh-rsa", e, mpint((1 << 511) + 1)),
           "rsa-even-e": blob_key("ssh-rsa", b"ssh-rsa", mpint(65536), mpint((1 << 2047) + 1)),
           "rsa-huge-e": blob_key("ssh-rsa", b"ssh-rsa", mpint((1 << 2000) + 1), mpint((1 << 2047) + 1)),
           "rsa-negative": blob_key("ssh-rsa", b"ssh-rsa", e, b"\xff" * 256),
           "p256-short": blob_key("ecdsa-sha2-nistp256", b"ecdsa-sha2-nistp256", b"nistp256", b"\x04" * 64),
           "p521-long": blob_key("ecdsa-sha2-nistp521", b"ecdsa-sha2-nistp521", b"nistp521", b"\x04" * 5000),
           "p384-compressed": blob_key("ecdsa-sha2-nistp384", b"ecdsa-sha2-nistp384", b"nistp384", b"\x02" * 97)}
    for name, text in bad.items():
        pub = tmp_path / f"{name}.pub"
        pub.write_text(text)
        assert name != "fake-53k" or 53_000 <= pub.stat().st_size < 54_000
        assert main(["classroom", "add", "ann", str(pub), "--authorized-keys", str(keys), "--lang", "en"]) == 2, name
        err = capsys.readouterr().err
        assert "not a valid" in err and err.count("\n") == 1, (name, err)
    assert not keys.exists()
    for i, pub in enumerate(good):
        assert main(["classroom", "add", f"l{i}", str(pub), "--authorized-keys", str(keys)]) == 0, capsys.readouterr()


# --- what reaches the terminal ------------------------------------------------------------------------------

def no_raw_controls(*texts: str) -> None:
    for text in texts:
        assert not any(c in text for c in UNSAFE), repr(text)


def test_classroom_echoes_paths_harmlessly(tmp_path):
    odd = tmp_path / "a\x1b]0;T\x07\x9b\u202eb"
    odd.mkdir()
    keys = odd / "authorized_keys"
    done = add(keys, keygen(tmp_path, "ann"))
    assert done.returncode == 0 and "added learner ann" in done.stdout, done.stderr
    no_raw_controls(done.stdout, done.stderr)
    for words in (["list"], ["list", "--json"]):
        done = run_cli("classroom", *words, "--authorized-keys", str(keys))
        assert done.returncode == 0 and "ann" in done.stdout
        no_raw_controls(done.stdout, done.stderr)
    keys.write_text("")
    done = run_cli("classroom", "list", "--authorized-keys", str(keys))
    assert done.returncode == 0 and "no learners" in done.stdout and "␛]0;T␇" in done.stdout
    no_raw_controls(done.stdout, done.stderr)
    missing = run_cli("classroom", "list", "--authorized-keys", "/no\x1b]0;T\x07")
    no_raw_controls(one_line_error(missing), missing.stdout)


def test_report_shows_a_saved_lesson_id_harmlessly(tmp_path):
    state = tmp_path / "state"
    evil = "a\x1b]0;T\x07\x1b[2J\x9b31m\u202eb"
    assert Store(learner_dir("ann", state)).save(Progress(evil, 0, "en", {evil: ["x"]}))
    done = report(state, "--json")
    assert done.returncode == 0, done.stderr
    no_raw_controls(done.stdout)
    assert "\\u009b" in done.stdout and "\\u202e" in done.stdout and "\\u001b" in done.stdout
    assert json.loads(done.stdout)["learners"][0]["lesson"] == evil  # the same data to a JSON reader
    done = report(state)
    assert done.returncode == 0 and "ann" in done.stdout
    no_raw_controls(done.stdout, done.stderr)


def test_report_shows_a_cached_lesson_id_harmlessly(tmp_path, monkeypatch, capsys):
    """Lesson ids that reached the report from a parsed-lessons cache someone edited: cut and shown, never obeyed."""
    from engine.records import replace
    from lessons.loader import SHIPPED, load_lessons
    from tui.cli import lessons as cli_lessons, main

    state = tmp_path / "state"
    shipped = load_lessons(SHIPPED)[0][0]
    evil = replace(shipped, id="r\x1b]0;T\x07\x1b[2J\x9b31m\u202e" + "x" * 40)
    monkeypatch.setattr(cli_lessons, "lessons_for", lambda args, deep=True: [evil])
    monkeypatch.setenv("XF_TOUR_STATE_DIR", str(state))
    assert Store(learner_dir("ann", state)).save(Progress(evil.id, 1, "en", {evil.id: [shipped.steps[0].id]}))
    for argv in (["classroom", "report", "--lang", "en"], ["classroom", "report", "--json"]):
        assert main(argv) == 0
        out, err = capsys.readouterr()
        assert "ann" in out
        no_raw_controls(out, err)


# --- train ----------------------------------------------------------------------------------------------------

def small_weights():
    from engine import tiny
    cfg = tiny.CONFIGS["small"]
    return tiny.init(cfg, 7), cfg


def test_save_over_a_file_keeps_its_mode_and_owner(tmp_path):
    from engine import tiny
    w, cfg = small_weights()
    out = tmp_path / "w.npz"
    out.write_bytes(b"old")
    os.chmod(out, 0o600)
    owner = (NOBODY, NOBODY) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    if os.geteuid() == 0:
        os.chown(out, *owner)
    tiny.save(out, w, cfg, {"seed": 7})
    info = os.lstat(out)
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (*owner, 0o600)
    assert tiny.load(out)[2]["seed"] == 7


def test_save_over_a_link_replaces_the_link_not_its_target(tmp_path):
    """A link at --out is replaced by the new file; the file it pointed to stays as it was."""
    from engine import tiny
    w, cfg = small_weights()
    target, out = tmp_path / "target.npz", tmp_path / "w.npz"
    target.write_bytes(b"keep me")
    os.chmod(target, 0o640)
    out.symlink_to(target)
    tiny.save(out, w, cfg, {"seed": 7})
    assert not out.is_symlink() and tiny.load(out)[2]["seed"] == 7
    assert target.read_bytes() == b"keep me" and stat.S_IMODE(os.stat(target).st_mode) == 0o640


def test_train_sweeps_stale_temp_files_and_echoes_its_path_harmlessly(tmp_path, monkeypatch):
    """A train killed while saving leaves .NAME.npz-XXXXXXXX.tmp: a later train removes such files once they are
    a minute old; younger ones (a save in flight), links and other names stay. Its lines show the path harmlessly."""
    import re

    from engine import tiny
    folder = tmp_path / "a\x1b]0;T\x07\x9b\u202eb"
    folder.mkdir()
    out = folder / "w.npz"
    seen, real_replace = [], os.replace
    w, cfg = small_weights()
    with monkeypatch.context() as patch:  # the name tiny.save gives its temporary file
        patch.setattr(os, "replace", lambda src, dst, **kw: (seen.append(Path(src).name), real_replace(src, dst, **kw)))
        tiny.save(out, w, cfg, {"seed": 7})
    assert re.fullmatch(r"\.w\.npz-[a-z0-9_]{8}\.tmp", seen[0]), seen
    stale, young, link = (folder / f".w.npz-{x}.tmp" for x in ("stale_00", "young_00", "link_000"))
    other = folder / ".w.npz-stale_00.tmp.keep"
    for path in (stale, young, other):
        path.write_bytes(b"half")
    (tmp_path / "victim").write_bytes(b"v")
    link.symlink_to(tmp_path / "victim")
    old = time.time() - 120
    for path in (stale, other, link):
        os.utime(path, (old, old), follow_symlinks=False)
    done = run_cli("train", "--config", "small", "--steps", "1", "--out", str(out), "--force")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in folder.iterdir()) == sorted(["w.npz", young.name, link.name, other.name])
    assert (tmp_path / "victim").read_bytes() == b"v"
    assert "w.npz: loss" in done.stdout
    no_raw_controls(done.stdout, done.stderr)
    done = run_cli("train", "--config", "small", "--steps", "1", "--out", str(out), "--force", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["out"] == str(out)
    no_raw_controls(done.stdout, done.stderr)
    refused = run_cli("train", "--out", "/x\x1b]0;T\x07\x9b\u202e/y.npz")
    no_raw_controls(one_line_error(refused), refused.stdout)
