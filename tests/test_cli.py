"""The command line, run as a learner runs it: a fresh process, output read back."""

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from helpers.cli import ROOT, cli_environ, run_cli
from rich.cells import cell_len

import engine


def squeeze(text):
    return [" ".join(line.split()) for line in text.splitlines()]


def test_positional_base_100_row_one():
    out = run_cli("print", "positional", "--set", "base=100")
    assert out.returncode == 0, out.stderr
    assert "1 +0.841 +0.540 +0.311 +0.950 +0.100 +0.995 +0.032 +1.000" in squeeze(out.stdout)
    assert "n=4 d=8 base=100" in out.stdout


def test_positional_default_is_the_figures_table():
    lines = squeeze(run_cli("print", "positional").stdout)
    for row in ("0 +0.000 +1.000 +0.000 +1.000 +0.000 +1.000 +0.000 +1.000",
                "1 +0.841 +0.540 +0.100 +0.995 +0.010 +1.000 +0.001 +1.000",
                "2 +0.909 -0.416 +0.199 +0.980 +0.020 +1.000 +0.002 +1.000",
                "3 +0.141 -0.990 +0.296 +0.955 +0.030 +1.000 +0.003 +1.000"):
        assert row in lines


@pytest.mark.parametrize("preset, total", [("llama2-7b", 6738415616), ("llama3-8b", 8030261248)])
def test_params_preset_json(preset, total):
    out = run_cli("params", "--preset", preset, "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["total"] == total and isinstance(data["total"], int)
    assert sum(data["items"].values()) == total


@pytest.mark.parametrize("flags, total", [
    # Llama 3.2 1B: GQA and tied embeddings
    ("--layers 16 --hidden 2048 --heads 32 --kv-heads 8 --ffn 8192 --vocab 128256 --tied", 1_235_814_400),
    # Mistral NeMo 12B: head_dim 128, not 5120 / 32
    ("--layers 40 --hidden 5120 --heads 32 --kv-heads 8 --head-dim 128 --ffn 14336 --vocab 131072", 12_247_782_400),
    # Gemma 7B: tied, head_dim 256, not 3072 / 16
    ("--layers 28 --hidden 3072 --heads 16 --head-dim 256 --ffn 24576 --vocab 256000 --tied", 8_537_680_896),
    # TinyLlama 1.1B: GQA with 4 KV heads
    ("--layers 22 --hidden 2048 --heads 32 --kv-heads 4 --ffn 5632 --vocab 32000", 1_100_048_384),
])
def test_params_custom_flags_reproduce_published_totals(flags, total):
    out = run_cli("params", *flags.split(), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["total"] == total


def test_params_table_shows_the_count_and_the_cache():
    out = run_cli("params", "--preset", "llama2-7b")
    assert "6,738,415,616" in out.stdout and "512 KiB" in out.stdout and "12.55 GiB" in out.stdout


@pytest.mark.parametrize("args, words", [
    (["print", "nope"], "unknown view 'nope'"),
    (["print", "positional", "--set", "colour=red"], "takes the parameter 'colour'"),
    (["print", "positional", "--set", "base=abc"], "base must be a number"),
    (["print", "positional", "--set", "n=0"], "n must be a whole number from 1"),
    (["print", "attention", "--set", "d=-8"], "d must be a whole number from 1"),
    (["print", "heads", "--set", "heads=3"], "heads=3 does not divide d_model=32"),
    (["print", "positional", "--set", "n=100000", "--set", "d=1000"], "the limit is 64 MiB"),
    (["print", "positional", "--set", "base"], "--set takes NAME=VALUE"),
    (["params", "--preset", "gpt-9"], "unknown preset 'gpt-9'"),
    (["params", "--layers", "x"], "--layers must be a whole number"),
    (["params", "--layers", "0", "--hidden", "8", "--heads", "2", "--ffn", "8", "--vocab", "8"], "--layers must be"),
    (["params", "--layers", "2", "--hidden", "10", "--heads", "3", "--ffn", "8", "--vocab", "8"], "does not divide"),
    (["params", "--layers", "2"], "missing --hidden --heads --ffn --vocab"),
    (["params", "--preset", "llama2-7b", "--kv-heads", "5"], "must divide"),
    (["params", "--context", "-1"], "--context must be"),
    (["--lang", "fr", "views"], "invalid choice: 'fr'"),
    (["print", "positional", "--set", "d=99999999999999999999999"], "d must be an even whole number"),
    (["print", "attention", "--set", "seed=99999999999999999999999999"], "seed must be a whole number"),
    (["print", "kvcache", "--set", "kv_heads=-99999999999999999999"], "kv_heads must be a whole number"),
    (["params", "--context", "99999999999999999999"], "--context must be a whole number"),
    (["params", "--layers", "99999999999999999999"], "--layers must be a whole number"),
    (["params", "--preset", ""], "unknown preset ''"),
    (["print", "--set", "n=16"], "(view 'mask')"),
    (["print", "--lesson", "nope"], "unknown lesson 'nope'"),
    (["fly"], "invalid choice: 'fly'"),
])
def test_bad_input_is_one_line_and_exit_2(args, words):
    out = run_cli(*args)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert words in out.stderr


def test_errors_speak_chinese_when_asked():
    out = run_cli("print", "heads", "--set", "heads=3", "--lang", "zh")
    assert out.returncode == 2 and "不能整除" in out.stderr


def test_print_json_keeps_full_precision():
    out = run_cli("print", "positional", "cat", "--json")
    data = json.loads(out.stdout)
    table = data["views"][0]["tables"][0]
    assert table["rows"][1][1] == float(engine.sinusoidal_positions(4, 8)[1, 0])  # 0.8414709848078965
    cat = data["views"][1]["tables"][0]["rows"]
    assert [row[2] for row in cat] == [float(w) for w in engine.cat_demo()]


def test_print_json_writes_infinity_as_text():
    data = json.loads(run_cli("print", "mask", "--json").stdout)
    assert data["views"][0]["tables"][0]["rows"][0][2] == "-inf"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_plain_output_fits_80_cells_without_escape_codes(lang):
    out = run_cli("print", "--lang", lang)
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout
    wide = [line for line in out.stdout.splitlines() if cell_len(line.rstrip()) > 80]
    assert not wide, wide[:3]
    for view in engine.VIEWS.values():  # without a model (a new state folder) the real model's views are left out
        assert (view.title(lang) in out.stdout) != view.model


@pytest.mark.parametrize("env, title", [({"LANG": "zh_CN.UTF-8"}, "正弦位置编码"),
                                        ({"LANG": "en_US.UTF-8"}, "Sinusoidal"),
                                        ({"LANG": "C", "LC_ALL": "zh_TW.UTF-8"}, "正弦位置编码")])
def test_default_language_follows_the_locale(env, title):
    assert title in run_cli("print", "positional", env=env).stdout


def test_lang_flag_beats_the_locale():
    out = run_cli("print", "positional", "--lang", "en", env={"LANG": "zh_CN.UTF-8"})
    assert "Sinusoidal" in out.stdout and "正弦" not in out.stdout


def test_help_lists_the_subcommands():
    out = run_cli("--help")
    assert out.returncode == 0
    for command in ("views", "print", "params", "lessons", "check-lessons"):
        assert re.search(rf"^\s+{command}\s", out.stdout, re.M)


def test_bare_command_without_a_terminal_says_how_to_read_instead():
    out = run_cli()
    assert out.returncode == 2 and "xf-tour print --lesson residual" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_unknown_lesson_for_the_tour_is_refused_before_textual_starts():
    out = run_cli("--lesson", "nope")
    assert out.returncode == 2 and "unknown lesson 'nope'" in out.stderr


def test_views_lists_every_view_and_parameter():
    out = run_cli("views")
    for view in engine.VIEWS.values():
        assert re.search(rf"^{re.escape(view.id)}\s", out.stdout, re.M)
        for p in view.params:
            assert f"{p.name}=" in out.stdout
    data = json.loads(run_cli("views", "--json").stdout)
    assert [v["id"] for v in data] == list(engine.VIEWS)


def test_views_lines_up_each_views_help_in_both_languages():
    from rich.cells import cell_len

    for lang in ("en", "zh"):
        out = run_cli("views", "--lang", lang).stdout
        for block in re.split(r"^(?=\S)", out, flags=re.M):
            params = [line for line in block.splitlines() if line.startswith("    ")]
            starts = {cell_len(re.match(r"    \S.*?  +", line).group()) for line in params}
            assert len(starts) <= 1, (lang, block)


def test_help_speaks_chinese():
    out = run_cli("print", "--help", "--lang", "zh")
    assert out.returncode == 0 and "设置参数" in out.stdout


def test_console_script_is_installed():
    script = Path(sys.executable).with_name("xf-tour")
    exe = str(script) if script.exists() else shutil.which("xf-tour")
    assert exe, "xf-tour is not installed: run the README's install command"
    import subprocess
    out = subprocess.run([exe, "print", "cat"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "0.708" in out.stdout


def test_a_reader_that_leaves_early_is_not_an_error():
    import os
    import subprocess
    env = {**os.environ, "LANG": "C.UTF-8"}
    pipe = subprocess.run(f"'{sys.executable}' -m tui print | head -1; exit ${{PIPESTATUS[0]}}", shell=True,
                          executable="/bin/bash", capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert pipe.returncode == 0, pipe.stderr
    assert pipe.stderr == "" and pipe.stdout.strip() == engine.VIEWS["mask"].title("en")


def test_train_writes_weights_and_ends_with_json(tmp_path):
    out = tmp_path / "w.npz"
    run = run_cli("train", "--config", "small", "--steps", "30", "--out", str(out), "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert {"loss", "floor", "agreement", "agreement_mismatch", "entropy_spread_init", "entropy_spread_trained",
            "seconds"} <= data.keys()
    from engine import tiny
    w, cfg, meta = tiny.load(out)
    assert meta["steps"] == 30 and meta["seed"] == 0 and cfg.d_model == 16


@pytest.mark.parametrize("args, words", [(["--steps", "0"], "--steps must be"), (["--lr", "x"], "--lr must be"),
                                         (["--out", "/no/such/dir/w.npz"], "no folder")])
def test_train_refuses_bad_flags(args, words):
    run = run_cli("train", "--config", "small", *args)
    assert run.returncode == 2 and words in run.stderr and len(run.stderr.strip().splitlines()) == 1


HUGE = "9" * 5000  # past Python's 4,300-digit limit for int()


@pytest.mark.parametrize("args, words", [
    (["print", "mask", "--set", f"n={HUGE}"], "n must be a whole number from 1 to 10"),
    (["params", "--layers", HUGE], "--layers must be a whole number from 1 to"),
    (["params", "--context", HUGE], "--context must be a whole number from 1 to"),
    (["train", "--seed", HUGE], "--seed must be a whole number from 0 to"),
    (["train", "--steps", f"-{HUGE}"], "--steps must be a whole number from 1 to 100,000"),
])
def test_a_five_thousand_digit_value_is_refused_with_its_range(args, words):
    run = run_cli(*args)
    assert run.returncode == 2 and words in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and len(run.stderr) < 300  # the value is not echoed whole


def test_a_setting_given_twice_is_refused():
    run = run_cli("print", "mask", "--set", "n=4", "--set", "n=8")
    assert run.returncode == 2 and run.stdout == ""
    assert "n is set twice" in run.stderr and len(run.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("raw, ok", [("4", True), ("+4", True), ("4.0", True), ("4e0", True), ("4.5", False),
                                     ("0x4", False), ("4,0", False)])
def test_a_whole_number_may_be_written_with_a_sign_or_a_zero_fraction(raw, ok):
    """The README's rule: one number grammar for every setting; a whole-number setting takes any
    spelling of a whole number, so 4, +4, 4.0 and 4e0 are all 4."""
    run = run_cli("print", "mask", "--set", f"n={raw}")
    if ok:
        assert run.returncode == 0 and run.stdout.splitlines()[1] == "n=4", run.stderr
    else:
        assert run.returncode == 2 and "n must be a whole number from 1 to 10" in run.stderr


@pytest.mark.parametrize("args", [["print", "heads", "--lang", "zh"], ["lessons"], ["--help", "--lang", "zh"]])
def test_a_terminal_that_cannot_encode_chinese_gets_escapes_not_a_crash(args):
    run = run_cli(*args, env={"PYTHONIOENCODING": "ascii"})
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert run.stdout.isascii() and "\\u" in run.stdout


@pytest.mark.parametrize("columns, width", [("0", 80), ("-3", 80), ("abc", 80), ("5", 40),
                                            pytest.param(HUGE, 210, id="5000-digits")])
def test_a_columns_that_is_not_a_width_still_prints(columns, width):
    run = run_cli("print", "heads", env={"COLUMNS": columns})
    assert run.returncode == 0 and run.stderr == ""
    lines = run.stdout.splitlines()
    assert lines[0] == engine.VIEWS["heads"].title("en") and len(lines) > 10
    assert 30 < max(map(cell_len, lines)) <= width


def _weights(tmp_path, name="w.npz"):
    """A valid weights file to be kept or replaced."""
    from engine import tiny
    out = tmp_path / name
    cfg = tiny.CONFIGS["small"]
    tiny.save(out, tiny.init(cfg, 7), cfg, {"seed": 7})
    return out


def test_train_will_not_replace_a_file_unless_forced(tmp_path):
    out = _weights(tmp_path)
    before = out.read_bytes()
    run = run_cli("train", "--config", "small", "--steps", "1", "--out", str(out))
    assert run.returncode == 2 and "exists; add --force" in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert out.read_bytes() == before
    forced = run_cli("train", "--config", "small", "--steps", "2", "--out", str(out), "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["out"] == str(out)
    from engine import tiny
    assert tiny.load(out)[2]["seed"] == 0 and [p.name for p in tmp_path.iterdir()] == ["w.npz"]


def test_train_checks_the_default_out_too(tmp_path):
    import os
    import subprocess
    _weights(tmp_path, "tiny-small.npz")
    env = {**os.environ, "LANG": "C.UTF-8", "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "tui", "train", "--config", "small", "--steps", "1"],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert run.returncode == 2 and "tiny-small.npz exists; add --force" in run.stderr


@pytest.mark.parametrize("out, words", [("notes.txt", "--out must name a .npz file"),
                                        ("/proc/x.npz", "cannot write in the folder /proc"),
                                        ("/proc/x", "--out must name a .npz file")])
def test_train_refuses_an_out_it_could_not_write_before_training(tmp_path, out, words):
    target = out if out.startswith("/") else str(tmp_path / out)
    run = run_cli("train", "--config", "small", "--steps", "1", "--out", target)
    assert run.returncode == 2 and words in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert list(tmp_path.iterdir()) == []


def test_train_says_in_one_line_when_the_weights_cannot_be_written(tmp_path, monkeypatch, capsys):
    from engine import tiny
    from tui.cli import main
    out = _weights(tmp_path)
    before = out.read_bytes()

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tiny, "save", full_disk)
    assert main(["train", "--config", "small", "--steps", "1", "--out", str(out), "--force", "--lang", "en"]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == f"xf-tour train: error: could not write {out} (No space left on device); any old file is unchanged"
    assert out.read_bytes() == before


@pytest.mark.parametrize("given, used", [(None, "1"), ("2", "2")])
def test_print_asks_numpy_for_one_blas_thread_unless_told_otherwise(given, used):
    """The views' matrix products are small: print sets OPENBLAS_NUM_THREADS=1 before numpy loads, as train
    does, and keeps a value the user gave."""
    import os
    import subprocess
    code = ("import contextlib, io, os, sys\nfrom tui.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    status = main(['print', 'cat'])\n"
            "print(status, os.environ.get('OPENBLAS_NUM_THREADS'), 'numpy' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env.update({"LANG": "C.UTF-8"} if given is None else {"LANG": "C.UTF-8", "OPENBLAS_NUM_THREADS": given})
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert run.stdout.split() == ["0", used, "True"], run.stderr


# --- print's fast path: the parser's reading, without argparse ---------------------------------------------------

READ_FAST = [["print"], ["print", "positional"], ["print", "--json", "positional"], ["print", "a", "b", "--lang", "zh"],
             ["print", "--lang=zh", "mask"], ["print", "--plot", "--json", "mask", "rope", "heads"], ["print", "mask2"]]
LEFT_TO_ARGPARSE = [["print", "positional", "--json", "rope"], ["print", "mask", "--lang", "zh", "rope"],
                    ["print", "--lang"], ["print", "--lang", "xx", "mask"], ["print", "mask", "--json", "--json"],
                    ["print", "--js", "mask"], ["print", "--set", "d=8", "rope"], ["print", "mask", "--help"],
                    ["print", "--", "mask"], ["print", "mask", "--lang", "zh", "--lang", "en"],
                    ["print", "--lessons", "x", "mask"], ["print", "--lesson", "ffn"], ["views"],
                    ["--lang", "zh", "print"]]


@pytest.mark.parametrize("argv", READ_FAST)
def test_print_args_reads_what_the_parser_reads(argv):
    from tui.cli.parser import build_parser, print_args
    assert vars(print_args(argv)) == vars(build_parser("en").parse_args(argv))


@pytest.mark.parametrize("argv", LEFT_TO_ARGPARSE)
def test_print_args_leaves_everything_else_to_the_parser(argv):
    from tui.cli.parser import print_args
    assert print_args(argv) is None


_RUN = ("import os, sys\nfrom tui import cli\nreal = os._exit\n"
        "def fast(code):\n    sys.stderr.write(f'fast exit {{code}}\\n')\n    sys.stderr.flush()\n    real(code)\n"
        "os._exit = fast\n{setup}\nsys.argv = ['xf-tour', *{args!r}]\n{through}\n")


def _run(args, setup="", through="cli.run()"):
    """`xf-tour ARGS` through tui.cli.run in a fresh process, with os._exit made to say that it was called;
    through="sys.exit(cli.main())" runs main() and Python's usual exit instead."""
    import subprocess
    # without PYTHONUNBUFFERED: unbuffered output would hide a run() that forgot to flush
    environ = cli_environ(drop=("PYTHONUNBUFFERED",))
    code = _RUN.format(setup=setup, args=list(args), through=through)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=environ,
                          timeout=120)


@pytest.mark.parametrize("args, status", [(("print", "--lesson", "rmsnorm"), 0), (("print", "cat", "--json"), 0),
                                          (("print", "no-such-view"), 2), (("views",), 0)])
def test_a_command_that_leaves_nothing_behind_ends_at_once_with_all_its_output(args, status):
    """run() skips Python's shutdown after a plain command: the same output and status as main() gives."""
    fast, plain = _run(args), _run(args, through="sys.exit(cli.main())")
    assert fast.stderr.splitlines()[-1] == f"fast exit {status}" and "fast exit" not in plain.stderr
    assert fast.returncode == plain.returncode == status
    assert fast.stdout == plain.stdout and len(plain.stdout if status == 0 else plain.stderr) > 40
    assert fast.stderr.splitlines()[:-1] == plain.stderr.splitlines()


@pytest.mark.parametrize("setup", [
    "import threading\nthreading.Thread(target=threading.Event().wait, daemon=True).start()",  # a thread running
    "import atexit\natexit.register(lambda: sys.stderr.write('atexit ran\\n'))",           # a callback to run
    "import textual",                                                                      # a Textual app's imports
    "sys.setprofile(lambda *a: None)",                                                     # a profiler to report
])
def test_a_command_that_leaves_something_behind_exits_as_usual(setup):
    run = _run(("print", "cat"), setup)
    assert run.returncode == 0 and "0.708" in run.stdout
    assert "fast exit" not in run.stderr
    assert ("atexit ran" in run.stderr) == ("atexit" in setup)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="/dev/full is Linux's")
def test_output_that_cannot_be_written_is_one_line_and_status_1_and_a_closed_stdout_is_no_error():
    import subprocess
    environ = cli_environ(drop=("PYTHONUNBUFFERED",))
    with open("/dev/full", "w") as full:
        run = subprocess.run([sys.executable, "-m", "tui", "params", "--json"], stdout=full, stderr=subprocess.PIPE,
                             text=True, cwd=ROOT, env=environ, timeout=120)
    assert run.returncode == 1 and run.stderr.count("\n") == 1 and "No space left" in run.stderr, run.stderr
    closed = subprocess.run(f"'{sys.executable}' -m tui params --json >&-", shell=True, executable="/bin/bash",
                            capture_output=True, text=True, cwd=ROOT, env=environ, timeout=120)
    assert closed.returncode == 0 and closed.stderr == ""
