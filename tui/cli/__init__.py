"""The xf-tour command line: main() parses, then runs the command's module. Arguments are parsed before
numpy, rich or textual is imported, so that plain commands start fast and bad input is refused at once:
one line on stderr, exit status 2. Each command lives in its own module here; parser.py lists them.
run() is the command itself (the console script and `python -m tui`): main(), then the exit.
"""

import atexit
import contextlib
import importlib
import os
import sys

from lessons.safe import printable_line

from ..i18n import LANGS, default_lang
from .output import safe_output
from .parser import PROG, UsageError, build_parser, lang_in, print_args, tour_args

SSH_ESCDELAY_MS = "400"  # see ssh_escape_delay()
SCREENS = ("", "calc")  # the commands that open a Textual screen in this terminal


def ssh_escape_delay(environ=os.environ) -> None:
    """Over SSH, wait longer for the rest of an escape sequence, unless the user chose (ESCDELAY, in ms, is
    what Textual reads, once, when textual.constants is imported; its default is 100). An arrow key is three
    bytes, ESC [ A; on a slow link they can arrive in separate packets, and a packet that is lost comes again
    no sooner than TCP's shortest retransmission timeout, 200 ms on Linux. Waiting 400 ms covers that and the
    link's jitter, so the arrow is not read as Escape then "[A"; a lone Escape takes 0.4 s to act."""
    if environ.get("SSH_CONNECTION") and "ESCDELAY" not in environ:
        environ["ESCDELAY"] = SSH_ESCDELAY_MS


def main(argv=None) -> int:
    """Entry point of the xf-tour command."""
    argv = sys.argv[1:] if argv is None else list(argv)
    safe_output()  # before anything is written, --help included
    early = lang_in(argv)
    lang = early if early in LANGS else default_lang()
    args = tour_args(argv) or print_args(argv) or build_parser(lang).parse_args(argv)
    lang = getattr(args, "lang", lang)
    if args.command is None:
        args.command, args.run = "", "tour:cmd_tour"
    if args.command and getattr(args, "learner", None) is not None:  # argparse takes it before any command
        print(f"{PROG}: " + ("错误: --learner 只用于导览本身，不能和命令一起用" if lang == "zh" else
                             "error: --learner is for the tour itself; give it without a command"), file=sys.stderr)
        return 2
    if getattr(args, "weights", None) is not None and args.command not in ("", "print", "quiz"):
        print(f"{PROG}: " + ("错误: --weights 只用于导览本身、print 和 quiz" if lang == "zh" else
                             "error: --weights is for the tour itself, print and quiz"), file=sys.stderr)
        return 2
    model = getattr(args, "model", None) if args.command in ("", "print") else None
    if model is not None:  # the real model's file: checked here, then found by engine.real_llama.find_model
        if not os.path.isfile(model):
            print(f"{PROG}: " + (f"错误: --model 指向的 {printable_line(model)} 不是文件" if lang == "zh" else
                                 f"error: --model names {printable_line(model)}, which is not a file"), file=sys.stderr)
            return 2
        os.environ["XF_TOUR_MODEL"] = os.path.abspath(model)
    if args.command in SCREENS and "textual" not in sys.modules:
        ssh_escape_delay()
    if "numpy" not in sys.modules:  # the engine's products are small: a second BLAS thread, started with numpy,
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # only spins, and on a busy machine slows every command
    from engine.errors import EngineError  # the engine comes in here, after the arguments are known good

    label, internal = ("错误", "内部错误") if lang == "zh" else ("error", "internal error")
    try:
        if getattr(args, "weights", None) is not None:  # the learner's own weights: read and checked before anything
            from engine.views.tiny import use_weights
            use_weights(args.weights)
        module, _, name = args.run.partition(":")
        return getattr(importlib.import_module(f"{__name__}.{module}"), name)(args, lang)
    except (EngineError, UsageError) as err:
        print(f"{f'{PROG} {args.command}'.strip()}: {label}: {printable_line(err.text(lang))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `xf-tour print | head`: the reader left, which is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # a bug: one line, not a traceback; XF_TOUR_DEBUG=1 shows the traceback
        if os.environ.get("XF_TOUR_DEBUG"):
            raise
        rerun = "（设 XF_TOUR_DEBUG=1 再运行可看到回溯）" if lang == "zh" else \
            " (rerun with XF_TOUR_DEBUG=1 for the traceback)"
        print(f"{f'{PROG} {args.command}'.strip()}: {internal}: {printable_line(f'{type(err).__name__}: {err}')}"
              f"{rerun}", file=sys.stderr)
        return 1


def run() -> None:
    """The xf-tour command: main(), then the exit, at once when main() leaves nothing behind it.

    Python's own shutdown frees numpy's modules and every object one by one, which takes longer than most
    views take to compute (measured in bench/; see bench/HISTORY.md). A command that ran no Textual app,
    left no other thread, registered nothing with atexit and runs under no profiler or tracer has nothing
    left to do but flush its output, so it flushes and ends there (os._exit). Anything else (the tour,
    serve) exits as usual."""
    code = main() or 0
    if not _nothing_left():
        sys.exit(code)
    for stream in {id(s): s for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)}.values():
        if stream is None:  # a stream the shell closed (`>&-`): nothing to flush
            continue
        try:
            stream.flush()
        except BrokenPipeError:  # the reader left, which is fine (as in main)
            pass
        except (OSError, ValueError) as err:  # a full disk, say: said, where Python's own exit says a traceback
            zh = (lang_in(sys.argv[1:]) or default_lang()) == "zh"
            line = f"错误: 无法写出输出（{err}）" if zh else f"error: could not write the output ({err})"
            with contextlib.suppress(OSError):  # stderr may be what failed
                os.write(2, f"{PROG}: {line}\n".encode(errors="replace"))
            code = code or 1
    os._exit(code)


def _nothing_left() -> bool:
    """Whether the process has nothing to do at its end but flush: no Textual app was imported, no thread but
    this one runs, no atexit callback is registered (Python versions without atexit._ncallbacks: unknown,
    so no), and no profiler or tracer waits to write its report after main returns."""
    threading, count = sys.modules.get("threading"), getattr(atexit, "_ncallbacks", None)
    return ("textual" not in sys.modules and (threading is None or threading.active_count() == 1)
            and count is not None and count() == 0 and sys.getprofile() is None and sys.gettrace() is None)
