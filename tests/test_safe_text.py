"""What the command line echoes is shown, never obeyed (lessons/safe.py): control characters, bidi marks and
the bytes of a word that is not UTF-8, which Python holds as lone surrogates and writes back raw."""

import json
import os
import subprocess
import sys

import pytest
from helpers.cli import ROOT, cli_environ

from lessons.safe import UNSAFE, json_text, printable, printable_line

HOSTILE = "a\x1b]0;T\x07b\x9bc\u202ed\u2028e\udc9bf"


def shown(out: bytes) -> str:
    """What a terminal would get: it must be UTF-8 throughout (a lone 0x9B byte is the 8-bit CSI), with nothing
    UNSAFE in it but newlines (control pictures such as ␛ are fine: they are printable)."""
    text = out.decode("utf-8")
    assert not UNSAFE.search(text), repr(text)
    return text


def test_printable_and_json_text_leave_nothing_a_terminal_obeys():
    for text in (printable(HOSTILE), printable_line(HOSTILE + "\n"), json_text({"k": HOSTILE}, indent=1)):
        assert not UNSAFE.search(text), repr(text)
        text.encode("utf-8")  # no lone surrogate left: it encodes strictly
    assert json.loads(json_text({"k": HOSTILE})) == {"k": HOSTILE}  # the same data to a JSON reader
    assert "\n" in printable("a\nb") and "\n" not in printable_line("a\nb")


def run_bytes(*args: bytes, lang="en", env=None):
    """xf-tour with arguments as raw bytes, under C.UTF-8 as a terminal gives them, stdout not forced to UTF-8
    (then Python writes a word's undecodable bytes back as they came; stderr escapes them itself)."""
    environ = {k.encode(): v.encode() for k, v in cli_environ(drop=("PYTHONIOENCODING",)).items()}
    environ.update(env or {})
    return subprocess.run([sys.executable.encode(), b"-m", b"tui", *args, b"--lang", lang.encode()],
                          capture_output=True, cwd=ROOT, env=environ, timeout=120)


@pytest.mark.parametrize("json_flag", [(), (b"--json",)])
def test_a_state_folder_that_is_not_utf8_is_shown_not_written_raw(tmp_path, json_flag):
    """The teacher's own XF_TOUR_STATE_DIR may hold any bytes; classroom report prints it on stdout."""
    folder = os.fsencode(tmp_path) + b"/st\x9b5m\x1b]0;T\x07"
    done = run_bytes(b"classroom", b"report", *json_flag, env={b"XF_TOUR_STATE_DIR": folder})
    assert done.returncode == 0, done
    assert "learners" in shown(done.stdout)


@pytest.mark.parametrize("args", [
    (b"classroom", b"list", b"--authorized-keys", b"/no/\x9b\x1b[2J/ak"),
    (b"train", b"--out", b"/no/\x9bx\xff/y.npz"),
    (b"print", b"\x9b\x1b]0;T\x07"),
    (b"--lesson", b"\xe2\x80\xae\x9b"),
])
def test_a_word_that_is_not_utf8_is_shown_not_written_raw(args):
    done = run_bytes(*args)
    assert done.returncode == 2, done
    assert shown(done.stdout + done.stderr).count("\n") == 1, done


def test_an_internal_error_is_one_line_in_the_learners_language(monkeypatch, capsys):
    """A bug is one line; in Chinese all of it, not "internal 错误" with an English tail."""
    import tui.cli.print_cmd
    from tui.cli import main

    def broken(args, lang):
        raise RuntimeError("injected \x1b[2J")

    monkeypatch.delenv("XF_TOUR_DEBUG", raising=False)
    monkeypatch.setattr(tui.cli.print_cmd, "cmd_print", broken)
    for lang, words in (("zh", ("内部错误", "XF_TOUR_DEBUG=1", "回溯")), ("en", ("internal error", "traceback"))):
        assert main(["print", "mask", "--lang", lang]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "\x1b" not in err and all(w in err for w in words), err
        assert lang == "en" or not any(w in err for w in ("internal", "rerun")), err
