"""The xf-tour command line: main() parses, then runs the command's module. Arguments are parsed before
numpy, rich or textual is imported, so that plain commands start fast and bad input is refused at once:
one line on stderr, exit status 2. Each command lives in its own module here; parser.py lists them.
"""

import importlib
import os
import sys

from ..i18n import LANGS, default_lang
from .output import safe_output
from .parser import PROG, UsageError, build_parser, lang_in, tour_args


def main(argv=None) -> int:
    """Entry point of the xf-tour command."""
    argv = sys.argv[1:] if argv is None else list(argv)
    safe_output()  # before anything is written, --help included
    early = lang_in(argv)
    lang = early if early in LANGS else default_lang()
    args = tour_args(argv) or build_parser(lang).parse_args(argv)
    lang = getattr(args, "lang", lang)
    if args.command is None:
        args.command, args.run = "", "tour:cmd_tour"
    if "numpy" not in sys.modules:  # the engine's products are small: a second BLAS thread, started with numpy,
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # only spins, and on a busy machine slows every command
    from engine.errors import EngineError  # the engine comes in here, after the arguments are known good

    label = "错误" if lang == "zh" else "error"
    try:
        module, _, name = args.run.partition(":")
        return getattr(importlib.import_module(f"{__name__}.{module}"), name)(args, lang)
    except (EngineError, UsageError) as err:
        print(f"{f'{PROG} {args.command}'.strip()}: {label}: {err.text(lang)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `xf-tour print | head`: the reader left, which is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # a bug: one line, not a traceback; XF_TOUR_DEBUG=1 shows the traceback
        if os.environ.get("XF_TOUR_DEBUG"):
            raise
        print(f"{f'{PROG} {args.command}'.strip()}: internal {label}: {type(err).__name__}: {err} "
              "(rerun with XF_TOUR_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1
