"""xf-tour classroom: one SSH account for a whole class. `add` lets a learner in with one line in the
account's authorized_keys, which forces every login with that key into `xf-tour --learner NAME`:

    restrict,pty,command="/abs/path/to/xf-tour --learner NAME" ssh-ed25519 AAAA...

`restrict` turns off forwarding, agent, X11, user rc and the pty, `pty` gives the pty back, and the forced
command replaces whatever the client asks for (a shell, sftp, scp). `list` reads those lines back; `report`
reads each learner's progress folder. What a key is lives in sshkeys.py, how the file is written (root, in a
folder the account owns) in keys_file.py. None of it imports textual: a teacher may run it over a plain pipe.
"""

import os
import shlex
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from lessons.safe import json_text, printable_line

from .keys_file import keys_folder, keys_path, read_keys, shown, write_keys
from .parser import PROG, UsageError, name_error
from .sshkeys import fingerprint, keygen_agrees, learner_of, parse_line, read_pubkey

OPTIONS = "restrict,pty"   # no forwarding, no agent, no X11, no ~/.ssh/rc; a pty for the tour


# --- authorized_keys ----------------------------------------------------------------------------------------

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


def cmd_add(args, lang) -> int:
    """Append a learner's forced-command line to authorized_keys, after checking the name, the key and the file."""
    from ..progress import LEARNER_NAME

    name = args.name
    if not LEARNER_NAME.fullmatch(name):
        raise name_error(name)
    kind, text, blob = read_pubkey(args.pubkey)
    keygen_agrees(kind, text, blob)
    if os.geteuid() == 0 and not args.authorized_keys:  # the default would be root's own file
        raise UsageError("run as root, classroom add needs --authorized-keys naming the tour account's file: "
                         "without it, the learner would go into root's own and log in as root",
                         "以 root 运行时，classroom add 需要用 --authorized-keys 指定导览账户的文件："
                         "否则学习者会被写进 root 自己的文件，以 root 身份登录")
    path = keys_path(args)  # as given: a link in it is refused, never followed
    line = forced_line(name, kind, text)
    with keys_folder(path, write=True) as folder:
        raw, lines, before = read_keys(folder, path)
        for other, _, _ in learners(lines):
            if other.lower() == name.lower():  # one folder per name even where case is folded (macOS)
                raise UsageError(f"the name {other} is taken in {shown(path)}",
                                 f"名字 {other} 在 {shown(path)} 里已被使用")
        for number, existing in enumerate(lines, 1):
            parsed = parse_line(existing)
            if parsed is not None and parsed[2] == blob:
                who = learner_of(parsed[0])
                en, zh = (f" (learner {who})", f"（学习者 {who}）") if who else ("", "")
                raise UsageError(f"this key is already in {shown(path)}, line {number}{en}: one key, one learner",
                                 f"这把公钥已在 {shown(path)} 第 {number} 行{zh}：一把公钥只对应一位学习者")
        write_keys(folder, path, raw, line, before)
    print(printable_line(f"已添加学习者 {name}：{kind} {fingerprint(blob)}，写入 {path}" if lang == "zh" else
                         f"added learner {name}: {kind} {fingerprint(blob)} in {path}"))
    return 0


def cmd_list(args, lang) -> int:
    """The learners in authorized_keys: name, key type, fingerprint. A missing file is an error: the path
    may be mistyped."""
    path = keys_path(args)
    with keys_folder(path) as folder:
        lines = read_keys(folder, path, missing_ok=False)[1]
    rows = [{"name": n, "type": k, "fingerprint": fingerprint(b)} for n, k, b in learners(lines)]
    if args.json:
        print(json_text(rows, indent=1))
        return 0
    if not rows:
        print(printable_line(f"{path} 里还没有学习者" if lang == "zh" else f"no learners in {path} yet"))
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
    """One row per learner folder under `root` (the LEARNERS folder): read, never written. A learner folder
    that is a link is a row that says so, unread, as the tour refuses it; a LEARNERS that is a link, refused."""
    from ..progress import FILE_NAME, LEARNER_NAME, Store
    from ..tour_state import RECAP
    from .tour import linked_folder

    if root.is_symlink():
        raise linked_folder(root)
    try:
        entries = {e.name: e.is_symlink() for e in os.scandir(root) if LEARNER_NAME.fullmatch(e.name)
                   and (e.is_dir(follow_symlinks=False) or e.is_symlink())}
    except FileNotFoundError:
        return []
    except OSError as err:
        raise UsageError(f"cannot read {shown(root)}: {err.strerror}",
                         f"无法读取 {shown(root)}：{err.strerror}") from None
    by_id = {x.id: x for x in lessons}
    rows = []
    for name, link in sorted(entries.items()):
        row = {"name": name, "lesson": None, "step": None, "steps": None, "step_id": None, "seen": {},
               "last_active": None, "problem": "symlink" if link else None, "answered": None, "right": None,
               "answers": {}}
        rows.append(row)
        if link:
            continue
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
            row["answers"] = answers_of(progress, lessons)
            row["answered"] = sum(len(marks) for marks in row["answers"].values())
            row["right"] = sum(right for marks in row["answers"].values() for right in marks.values())
            row["lesson"] = progress.lesson
            lesson = by_id.get(progress.lesson)
            if lesson is not None:  # clamped as the tour clamps it (Tour.goto)
                index = min(progress.step, len(lesson.steps))
                row.update(step=index + 1, steps=len(lesson.steps) + 1,
                           step_id=RECAP if index == len(lesson.steps) else lesson.steps[index].id)
    return rows


def answers_of(progress, lessons) -> dict[str, dict[str, bool]]:
    """The questions of these lessons a learner answered, as lesson id -> question id -> whether right. A skipped
    question (choice None) and one to be asked again (choice "") are left out, and so is any answer the progress
    file holds for a question these lessons do not ask."""
    out = {}
    for lesson in lessons:
        for q in lesson.questions:
            record = progress.answered(lesson.id, q.id)  # None for a question to be asked again
            if record is not None and record["choice"] is not None:
                out.setdefault(lesson.id, {})[q.id] = record["right"]
    return out


def question_rows(rows, lessons) -> list[dict]:
    """Each question of these lessons: how many learners answered it and how many missed it, the highest miss
    rate first, so that a teacher sees which idea the class got wrong; a question no one answered comes last,
    its miss rate None. Ties keep the lessons' order."""
    out = []
    for lesson in lessons:
        for q in lesson.questions:
            marks = [r["answers"][lesson.id][q.id] for r in rows if q.id in r["answers"].get(lesson.id, {})]
            missed = marks.count(False)
            out.append({"id": q.id, "lesson": lesson.id, "answered": len(marks), "missed": missed,
                        "miss_rate": missed / len(marks) if marks else None})
    return sorted(out, key=lambda r: (r["miss_rate"] is None, -(r["miss_rate"] or 0)))


PROBLEMS = {"missing": ("no progress saved yet", "还没有保存进度"),
            "broken": ("progress file is broken", "进度文件已损坏"),
            "unreadable": ("progress file cannot be read", "进度文件无法读取"),
            "symlink": ("folder is a symbolic link, not read", "文件夹是符号链接，未读取")}


def cmd_report(args, lang) -> int:
    """Where each learner is: lesson and step, steps seen per lesson, last active; once anyone has answered a
    question, how many each answered and got right, and each question's miss rate across the class."""
    from ..progress import LEARNERS, state_dir
    from .lessons import lessons_for

    lessons = lessons_for(args, deep=False)
    root = state_dir() / LEARNERS
    rows = learner_rows(root, lessons)
    steps = {x.id: len(x.steps) + 1 for x in lessons}  # the recap counted, as `xf-tour lessons --json` does
    questions = question_rows(rows, lessons)
    if args.json:
        for row in rows:
            if row["last_active"] is not None:
                row["last_active"] = datetime.fromtimestamp(row["last_active"], timezone.utc).strftime(
                    "%Y-%m-%dT%H:%M:%SZ")
        print(json_text({"folder": str(root), "steps": steps, "learners": rows, "questions": questions}, indent=1))
        return 0
    if not rows:
        print(printable_line(f"{root} 里还没有学习者" if lang == "zh" else f"no learners in {root} yet"))
        return 0
    zh = lang == "zh"
    heads = ("学习者", "课程", "步", "最近活动", "看过的步数") if zh else ("learner", "lesson", "step", "last active",
                                                                   "steps seen")
    cells = []  # each text as one harmless line: lesson ids come from progress files and caches
    for r in rows:
        when = "-" if r["last_active"] is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(r["last_active"]))
        if r["problem"] is not None:
            cells.append((r["name"], "-", "-", when, PROBLEMS[r["problem"]][zh]))
            continue
        seen = ", ".join(f"{printable_line(k)} {v}/{steps[k]}" for k, v in r["seen"].items()) or "-"
        step = f"{r['step']}/{r['steps']}" if r["step"] is not None else "-" if r["lesson"] is None else "?"
        lesson = "-" if r["lesson"] is None else printable_line(r["lesson"])[:32]  # one no longer shipped: as saved
        cells.append((r["name"], lesson, step, when, seen))
    print(table(heads, cells, last_wraps=True))
    if any(r["answered"] for r in rows):
        print()
        print(answers_tables(rows, questions, zh))
    return 0


def answers_tables(rows, questions, zh: bool) -> str:
    """Two tables: each learner's questions answered and answered right, then each question's miss rate."""
    heads = ("学习者", "已答", "答对") if zh else ("learner", "answered", "right")
    mine = [(r["name"], "-", "-") if r["answered"] is None else (r["name"], r["answered"], r["right"]) for r in rows]
    heads_q = ("题目", "课程", "已答", "答错", "答错率") if zh else ("question", "lesson", "answered", "missed",
                                                               "miss rate")
    theirs = [(printable_line(q["id"]), printable_line(q["lesson"]), q["answered"], q["missed"],
               "-" if q["miss_rate"] is None else f"{round(100 * q['miss_rate'])}%") for q in questions]
    return table(heads, mine) + "\n\n" + table(heads_q, theirs)
