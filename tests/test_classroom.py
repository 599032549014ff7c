"""--learner NAME, `xf-tour classroom add|list|report`, and the escape delay over SSH."""

import base64
import json
import os
import re
import stat
import subprocess
import sys
import tomllib

import pytest
from helpers.cli import ROOT, run_cli

from tui.cli.parser import tour_args
from tui.progress import Progress, Store, learner_dir

BAD_NAMES = ["", ".", "..", "../x", "a/b", "a\\b", "/etc", "1abc", "-a", "_a", "a.b", "a b", "a\nb", "é", "ａ",
             "a" * 33, "~root", "a:b"]
GOOD_NAMES = ["a", "Ann", "bob-2", "c_d", "Z" + "9" * 31]
SHIPPED = {}
for path in sorted((ROOT / "lessons").glob("*.toml")):
    with open(path, "rb") as f:
        data = tomllib.load(f)
    SHIPPED[data["id"]] = [s["id"] for s in data["steps"]]


def keygen(folder, name, kind="ed25519"):
    """A fresh key pair; the path of its public half."""
    path = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", f"{name}@test", "-f", str(path)], check=True,
                   stdin=subprocess.DEVNULL)
    return path.with_suffix(".pub")


def blob_line(kind: str, *fields: bytes) -> str:
    """A public key line built by hand from length-prefixed fields."""
    blob = b"".join(len(x).to_bytes(4, "big") + x for x in fields)
    return f"{kind} {base64.b64encode(blob).decode()}\n"


def one_line_error(done):
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    return done.stderr


# --- names and folders --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_bad_name_has_no_folder(name, tmp_path):
    with pytest.raises(ValueError):
        learner_dir(name, tmp_path)


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_a_good_name_is_one_folder_inside_learners(name, tmp_path):
    folder = learner_dir(name, tmp_path)
    assert folder.parent == tmp_path / "learners" and folder.name == name
    assert os.path.realpath(folder).startswith(os.path.realpath(tmp_path / "learners") + os.sep)


def test_the_fast_path_reads_learner():
    assert tour_args(["--learner", "ann", "--lang", "en"]).learner == "ann"
    assert tour_args(["--learner=ann"]).learner == "ann"
    assert tour_args([]).learner is None and tour_args(["--lesson", "ffn"]).learner is None
    assert tour_args(["--learner", "ann", "--learner", "bob"]) is None  # twice: the parser's error


@pytest.mark.parametrize("argv", [["--learner", "../x"], ["--learner=a/b"], ["--learner", "1abc", "--lang", "en"],
                                  ["--lesson", "ffn", "--learner", "a" * 33]])
def test_the_tour_refuses_a_bad_learner_name(argv, tmp_path):
    done = run_cli(*argv, env={"XF_TOUR_STATE_DIR": str(tmp_path)})
    assert "not a learner name" in one_line_error(done)
    assert not (tmp_path / "learners").exists()


def test_the_refusal_speaks_chinese(tmp_path):
    done = run_cli("--lang", "zh", "--learner", "..", env={"XF_TOUR_STATE_DIR": str(tmp_path)})
    assert "不能用作学习者名字" in one_line_error(done)


def test_learner_is_for_the_tour_only():
    assert "--learner" in one_line_error(run_cli("--learner", "ann", "print", "positional"))


def test_the_tour_opens_the_learners_folder(tmp_path, monkeypatch):
    """cmd_tour's folder for --learner: the app's store and its results cache live there."""
    from tui.app import make_app
    from tui.cli.tour import learner_folder

    monkeypatch.setenv("XF_TOUR_STATE_DIR", str(tmp_path))
    assert learner_folder(None) is None
    app = make_app(lang="en", state_dir=learner_folder("ann"))
    assert app.store.folder == tmp_path / "learners" / "ann"
    assert app.store.path == tmp_path / "learners" / "ann" / "progress.json"


def test_two_learners_never_share_progress(tmp_path):
    """Interleaved saves of two learners: each keeps only its own place and steps."""
    ann, bob = Store(learner_dir("ann", tmp_path)), Store(learner_dir("bob", tmp_path))
    a, b = ann.load(), bob.load()
    for i, step_id in enumerate(SHIPPED["residual"]):
        a.lesson, a.step = "residual", i
        a.visit("residual", step_id)
        assert ann.save(a)
        b.lesson, b.step = "ffn", min(i, len(SHIPPED["ffn"]) - 1)
        b.visit("ffn", SHIPPED["ffn"][b.step])
        assert bob.save(b)
    again_a, again_b = Store(learner_dir("ann", tmp_path)).load(), Store(learner_dir("bob", tmp_path)).load()
    assert again_a.lesson == "residual" and again_a.visited == {"residual": SHIPPED["residual"]}
    assert again_b.lesson == "ffn" and set(again_b.visited) == {"ffn"}
    assert not (tmp_path / "progress.json").exists()


# --- classroom add and list ---------------------------------------------------------------------------------

def add(name, pubkey, keys, *more, env=None):
    return run_cli("classroom", "add", name, str(pubkey), "--authorized-keys", str(keys), *more, env=env)


def test_add_then_list_round_trip(tmp_path):
    keys = tmp_path / "home" / ".ssh" / "authorized_keys"
    keys.parent.parent.mkdir()
    ann, bob = keygen(tmp_path, "ann"), keygen(tmp_path, "bob", "ecdsa")
    assert add("ann", ann, keys).returncode == 0
    done = add("Bob", bob, keys, "--lang", "zh")
    assert done.returncode == 0 and "已添加学习者 Bob" in done.stdout
    assert stat.S_IMODE(os.stat(keys.parent).st_mode) == 0o700 and stat.S_IMODE(os.stat(keys).st_mode) == 0o600
    lines = keys.read_text().splitlines()
    assert len(lines) == 2
    for line, name, pub in zip(lines, ("ann", "Bob"), (ann, bob)):
        match = re.fullmatch(r'restrict,pty,command="(\S+) --learner (\S+)" (\S+ \S+)', line)
        assert match, line
        assert os.path.isabs(match[1]) and os.access(match[1], os.X_OK) and os.path.basename(match[1]) == "xf-tour"
        assert match[2] == name and match[3] == " ".join(pub.read_text().split()[:2])
    listed = json.loads(run_cli("classroom", "list", "--json", "--authorized-keys", str(keys)).stdout)
    # the fingerprints as ssh-keygen reads them from the authorized_keys file itself, options and all
    keygen_says = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(keys)], capture_output=True, text=True,
                                 check=True).stdout.split("\n")
    assert [x["name"] for x in listed] == ["ann", "Bob"]
    assert [x["type"] for x in listed] == ["ssh-ed25519", "ecdsa-sha2-nistp256"]
    assert [x["fingerprint"] for x in listed] == [line.split()[1] for line in keygen_says if line]
    table = run_cli("classroom", "list", "--authorized-keys", str(keys)).stdout.splitlines()
    assert table[0].split() == ["learner", "key", "type", "fingerprint"] and set(table[1]) == {"-"}
    assert [row.split() for row in table[2:]] == [[x["name"], x["type"], x["fingerprint"]] for x in listed]


def test_add_keeps_what_was_there(tmp_path):
    """An admin's key and comments, without a final newline, stay byte for byte; the learner comes after."""
    keys = tmp_path / "authorized_keys"
    admin = keygen(tmp_path, "admin").read_text().strip()
    before = f"# the teacher\nfrom=\"10.0.0.0/8\" {admin}"
    keys.write_text(before)
    assert add("ann", keygen(tmp_path, "ann"), keys).returncode == 0
    text = keys.read_text()
    assert text.startswith(before + "\n") and text.count("\n") == 3
    assert [x["name"] for x in json.loads(run_cli("classroom", "list", "--json", "--authorized-keys",
                                                  str(keys)).stdout)] == ["ann"]
    same_as_admin = tmp_path / "admin-again.pub"
    same_as_admin.write_text(admin + "\n")
    assert "line 2" in one_line_error(add("carl", same_as_admin, keys))


def test_bad_names_are_refused(tmp_path):
    keys, pub = tmp_path / "authorized_keys", keygen(tmp_path, "k")
    for name in ["../x", "a/b", "1abc", "a" * 33, "é", "a b"]:
        assert "not a learner name" in one_line_error(add(name, pub, keys))
    assert not keys.exists()


def test_bad_keys_are_refused(tmp_path):
    keys, good = tmp_path / "authorized_keys", keygen(tmp_path, "good")
    kind, text = good.read_text().split()[:2]
    ed25519 = base64.b64decode(text)
    other = keygen(tmp_path, "other").read_text().split()[:2]
    cases = {
        "private key": (tmp_path / "good").read_text(),
        "holds no key": "\n# nothing\n\n",
        "holds 2 lines": f"{kind} {text}\n{' '.join(other)}\n",
        "already has options": f'from="10.0.0.1" {kind} {text}\n',
        "unknown key type": f"ssh-dss {text}\n",
        "has no key data": f"{kind}\n",
        "does not decode": f"{kind} {text[:-4]}!!!=\n",
        "does not say ssh-rsa": f"ssh-rsa {text}\n",
        "not a well-formed ssh-ed25519": blob_line("ssh-ed25519", b"ssh-ed25519", ed25519[-31:]),
        "not a well-formed ecdsa": blob_line("ecdsa-sha2-nistp384", b"ecdsa-sha2-nistp384", b"nistp256", b"\x04" * 97),
        "RFC 4716": "---- BEGIN SSH2 PUBLIC KEY ----\nAAAA\n---- END SSH2 PUBLIC KEY ----\n",
        "not ASCII": "ssh-ed25519 ÄÖ\n",
    }
    for i, (words, content) in enumerate(cases.items()):
        pub = tmp_path / f"bad{i}.pub"
        pub.write_text(content)
        assert words in one_line_error(add("ann", pub, keys)), words
    assert "cannot read" in one_line_error(add("ann", tmp_path / "missing.pub", keys))
    assert "not a file" in one_line_error(add("ann", tmp_path, keys))
    assert not keys.exists()
    assert add("ann", good, keys).returncode == 0
    before = keys.read_bytes()
    assert "name ann is taken" in one_line_error(add("ann", keygen(tmp_path, "k2"), keys))
    assert "name ann is taken" in one_line_error(add("ANN", keygen(tmp_path, "k3"), keys))  # one folder on macOS
    assert "already in" in one_line_error(add("bob", good, keys))
    assert keys.read_bytes() == before


# --- classroom report ---------------------------------------------------------------------------------------

def report(state, *more, env=None):
    return run_cli("classroom", "report", *more, env={"XF_TOUR_STATE_DIR": str(state), "TZ": "UTC", **(env or {})})


def test_report_round_trip(tmp_path):
    state = tmp_path / "state"
    ann = Progress("attention", 2, "en", {"residual": SHIPPED["residual"][:5], "positional": SHIPPED["positional"][:2],
                                         "attention": SHIPPED["attention"][:3] + ["recap", "no-such-step"]})
    assert Store(learner_dir("ann", state)).save(ann)
    assert Store(learner_dir("bob", state)).save(Progress("ffn", 99, "zh", {"ffn": ["recap"]}))  # clamped: the recap
    (state / "learners" / "carl").mkdir()  # started, never saved
    (state / "learners" / "not.a.name").mkdir()  # not a learner's folder: left out
    stamp = 1767323045  # 2026-01-02 03:04:05 UTC
    os.utime(state / "learners" / "ann" / "progress.json", (stamp, stamp))
    done = report(state, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["steps"] == {k: len(v) + 1 for k, v in SHIPPED.items()}
    rows = {r["name"]: r for r in data["learners"]}
    assert list(rows) == ["ann", "bob", "carl"]
    assert rows["ann"]["lesson"] == "attention" and rows["ann"]["step"] == 3
    assert rows["ann"]["step_id"] == SHIPPED["attention"][2]
    assert rows["ann"]["seen"] == {"residual": 5, "positional": 2, "attention": 4}
    assert rows["ann"]["last_active"] == "2026-01-02T03:04:05Z" and rows["ann"]["problem"] is None
    assert rows["bob"]["step"] == rows["bob"]["steps"] == len(SHIPPED["ffn"]) + 1 and rows["bob"]["step_id"] == "recap"
    assert rows["carl"]["problem"] == "missing" and rows["carl"]["last_active"] is None
    table = report(state).stdout.splitlines()
    assert table[0].split() == ["learner", "lesson", "step", "last", "active", "steps", "seen"]
    n = {k: len(v) + 1 for k, v in SHIPPED.items()}
    rows = table_rows(table)
    assert rows["ann"] == ["ann", "attention", f"3/{n['attention']}", "2026-01-02", "03:04",
                           "residual", f"5/{n['residual']},", "positional", f"2/{n['positional']},",
                           "attention", f"4/{n['attention']}"]
    assert rows["bob"] == ["bob", "ffn", f"{n['ffn']}/{n['ffn']}", *rows["bob"][3:5], "ffn", f"1/{n['ffn']}"]
    assert rows["carl"] == ["carl", "-", "-", "-", "no", "progress", "saved", "yet"]
    zh = report(state, "--lang", "zh").stdout.splitlines()
    assert zh[0].split() == ["学习者", "课程", "步", "最近活动", "看过的步数"] and "还没有保存进度" in zh[-1]


def table_rows(lines):
    """The words of each learner's row in a report table, wrapped lines joined, by name."""
    rows, last = {}, None
    for line in lines[2:]:
        if line.startswith(" "):
            rows[last] += line.split()
        else:
            last = line.split()[0]
            rows[last] = line.split()
    return rows


def test_report_wraps_to_the_width(tmp_path):
    from rich.cells import cell_len
    state = tmp_path / "state"
    assert Store(learner_dir("ann", state)).save(Progress("residual", 0, "en", {k: v[:1] for k, v in SHIPPED.items()}))
    for lang in ("en", "zh"):
        lines = report(state, "--lang", lang, env={"COLUMNS": "80"}).stdout.splitlines()
        assert len(lines) > 3 and max(cell_len(x) for x in lines) < 80
        seen = table_rows(lines)["ann"][5:]  # after name, lesson, step, date and time
        assert seen == [w for k, v in SHIPPED.items() for w in (k, f"1/{len(v) + 1},")][:-1] + [
            f"1/{len(SHIPPED['misconceptions']) + 1}"]


def test_a_broken_progress_file_is_a_row(tmp_path):
    """Broken JSON, another version and a FIFO: each a row that says so, nothing moved or written."""
    state = tmp_path / "state"
    for name in ("ann", "bob", "carl", "dan"):
        learner_dir(name, state).mkdir(parents=True)
    (state / "learners" / "ann" / "progress.json").write_text("{not json")
    (state / "learners" / "bob" / "progress.json").write_text('{"version": 99}')
    os.mkfifo(state / "learners" / "carl" / "progress.json")  # opening it would block: it must not be opened
    assert Store(learner_dir("dan", state)).save(Progress("ffn", 0, "en", {"ffn": [SHIPPED["ffn"][0]]}))
    done = report(state, "--json")
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["learners"]}
    assert [rows[k]["problem"] for k in ("ann", "bob", "carl", "dan")] == ["broken", "broken", "unreadable", None]
    assert rows["ann"]["last_active"] is not None and rows["dan"]["seen"] == {"ffn": 1}
    assert sorted(os.listdir(state / "learners" / "ann")) == ["progress.json"]  # not moved aside, as a tour would
    assert (state / "learners" / "ann" / "progress.json").read_text() == "{not json"
    table = report(state).stdout
    assert "progress file is broken" in table and "progress file cannot be read" in table


def test_report_with_no_learners(tmp_path):
    done = report(tmp_path / "state")
    assert done.returncode == 0 and "no learners" in done.stdout
    assert json.loads(report(tmp_path / "state", "--json").stdout)["learners"] == []


def test_classroom_never_imports_textual(tmp_path):
    pub = keygen(tmp_path, "ann")
    code = ("import sys, json; from tui.cli import main; "
            f"codes = [main(['classroom', 'add', 'ann', {str(pub)!r}, '--authorized-keys', {str(tmp_path / 'ak')!r}]), "
            f"main(['classroom', 'list', '--authorized-keys', {str(tmp_path / 'ak')!r}]), "
            "main(['classroom', 'report', '--json'])]; "
            "print(json.dumps([codes, 'textual' in sys.modules]))")
    env = {**os.environ, "XF_TOUR_STATE_DIR": str(tmp_path / "state")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert json.loads(done.stdout.splitlines()[-1]) == [[0, 0, 0], False], done.stderr


# --- the escape delay ---------------------------------------------------------------------------------------

def escape_delay(env_extra, drop=("SSH_CONNECTION", "ESCDELAY")):
    """The escape delay Textual reads after `xf-tour` (the tour, refused here for want of a terminal) started."""
    code = ("from tui.cli import main; code = main(['--lang', 'en']); "
            "import textual.constants as c; print(code, c.ESCAPE_DELAY)")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(env_extra)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
                          stdin=subprocess.DEVNULL)
    code, delay = done.stdout.split()
    assert code == "2", done.stderr  # no terminal: the tour says so, after main() chose the delay
    return float(delay)


def test_escape_delay_over_ssh():
    assert escape_delay({}) == 0.1  # Textual's own default
    assert escape_delay({"SSH_CONNECTION": "10.0.0.2 50000 10.0.0.1 22"}) == 0.4
    assert escape_delay({"SSH_CONNECTION": "10.0.0.2 50000 10.0.0.1 22", "ESCDELAY": "50"}) == 0.05  # the user's
    assert escape_delay({"ESCDELAY": "250"}) == 0.25


def test_two_adds_at_once_both_land(tmp_path):
    """The folder is locked while authorized_keys is read and replaced: neither line is lost."""
    keys = tmp_path / "authorized_keys"
    pubs = [keygen(tmp_path, f"k{i}") for i in range(4)]
    env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LANG")}
    procs = [subprocess.Popen([sys.executable, "-m", "tui", "classroom", "add", f"p{i}", str(pub), "--authorized-keys",
                               str(keys)], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for i, pub in enumerate(pubs)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], errors
    listed = run_cli("classroom", "list", "--json", "--authorized-keys", str(keys))
    names = [x["name"] for x in json.loads(listed.stdout)]
    assert sorted(names) == ["p0", "p1", "p2", "p3"]
