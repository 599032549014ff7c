"""The xf-tour command line. Arguments are parsed before numpy, rich or textual is imported, so that
plain commands start fast and bad input is refused at once: one line on stderr, exit status 2.
"""

import argparse
import os
import sys

LANGS = ("zh", "en")
PROG = "xf-tour"


def default_lang(environ=os.environ) -> str:
    """zh when the locale is Chinese (zh*), else en."""
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(var)
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def _lang_in(argv) -> str | None:
    """The --lang given anywhere in argv, read early so that --help speaks it too."""
    for i, arg in enumerate(argv):
        if arg == "--lang" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--lang="):
            return arg.split("=", 1)[1]
    return None


class UsageError(Exception):
    """Bad command-line input that argparse cannot see, such as a malformed --set; worded in both languages."""

    def __init__(self, en: str, zh: str):
        super().__init__(en)
        self.en, self.zh = en, zh

    def text(self, lang: str) -> str:
        return self.zh if lang == "zh" else self.en


MIN_COLUMNS, MAX_COLUMNS = 40, 1000  # narrower, a table breaks into a character per line; wider, Rich crawls


def _safe_output(environ=os.environ) -> None:
    """Make any output writable: a stream that cannot encode Chinese (PYTHONIOENCODING=ascii) writes
    backslash escapes instead of failing, and a COLUMNS that is not a width (0, -1, "abc") is ignored,
    one outside MIN_COLUMNS..MAX_COLUMNS moved to the nearer end."""
    for stream in (sys.stdout, sys.stderr):
        try:
            "中文".encode(stream.encoding or "ascii")
        except (LookupError, UnicodeEncodeError):
            if hasattr(stream, "reconfigure"):
                stream.reconfigure(errors="backslashreplace")
        except AttributeError:  # a stream replaced by something without an encoding
            pass
    columns = environ.get("COLUMNS")
    if columns is not None:
        text = columns.strip().lstrip("0")
        if not (text.isascii() and text.isdigit()):  # "0" is "" by now
            del environ["COLUMNS"]  # Rich then asks the terminal, or uses 80
        else:  # digits past 6 are wider than any screen, and int() would refuse 5,000 of them
            environ["COLUMNS"] = str(min(max(int(text[:7]), MIN_COLUMNS), MAX_COLUMNS))


class Parser(argparse.ArgumentParser):
    """argparse with errors on one line and exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (try: {self.prog} --help)\n")


def build_parser(lang: str) -> Parser:
    """The parser, with help texts in `lang`."""

    def t(en, zh):
        return zh if lang == "zh" else en

    common = Parser(add_help=False)
    common.add_argument("--lang", choices=LANGS, default=argparse.SUPPRESS,
                        help=t("language: zh or en (default: from the locale)", "语言：zh 或 en（默认随系统区域设置）"))
    common.add_argument("--lessons", metavar="DIR", default=argparse.SUPPRESS,
                        help=t("use the lessons in DIR instead of the shipped ones", "使用 DIR 里的课程，而不是自带的"))
    parser = Parser(prog=PROG, parents=[common], allow_abbrev=False,
                    description=t("An interactive tour of a Llama-style transformer. Every number is computed "
                                  "by numpy as you watch.",
                                  "Llama 式 Transformer 的交互导览。每个数字都由 numpy 现场算出。"))
    parser.add_argument("--lesson", metavar="ID", help=t("open the tour at this lesson", "从这一课开始导览"))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    views = sub.add_parser("views", parents=[common], help=t("list the views and their parameters",
                                                              "列出所有视图及其参数"))
    views.add_argument("--json", action="store_true", help=t("print JSON", "输出 JSON"))
    views.set_defaults(func=cmd_views)

    show = sub.add_parser("print", parents=[common], help=t("print views as tables, without a screen",
                                                             "不开界面，把视图打印成表格"))
    show.add_argument("views", nargs="*", metavar="VIEW", help=t("view ids (default: all)", "视图 id（默认全部）"))
    show.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                      help=t("set a parameter, e.g. --set base=100", "设置参数，例如 --set base=100"))
    show.add_argument("--json", action="store_true", help=t("print one JSON object, full precision",
                                                            "输出一个 JSON 对象，保留全部精度"))
    show.add_argument("--lesson", metavar="ID", help=t("print a whole lesson as plain text", "把整节课打印成纯文本"))
    show.set_defaults(func=cmd_print)

    lessons = sub.add_parser("lessons", parents=[common], help=t("list the lessons", "列出所有课程"))
    lessons.add_argument("--json", action="store_true", help=t("print JSON", "输出 JSON"))
    lessons.set_defaults(func=cmd_lessons)

    check = sub.add_parser("check-lessons", parents=[common], help=t("check a folder of lesson files",
                                                                      "检查一个文件夹里的课程文件"))
    check.add_argument("dir", nargs="?", metavar="DIR", help=t("the folder (default: the shipped lessons)",
                                                               "文件夹（默认：自带的课程）"))
    check.set_defaults(func=cmd_check_lessons)

    params = sub.add_parser("params", parents=[common], help=t("count a model's parameters, memory and KV cache",
                                                                "计算模型的参数量、内存和 KV 缓存"))
    _config_flags(params, t)
    params.add_argument("--json", action="store_true", help=t("print JSON; the count is an integer under \"total\"",
                                                              "输出 JSON；总数是 \"total\" 下的整数"))
    params.set_defaults(func=cmd_params)

    calc = sub.add_parser("calc", parents=[common], help=t("open the sizing workbench", "打开参数与内存计算器"))
    _config_flags(calc, t)
    calc.set_defaults(func=cmd_calc)

    train = sub.add_parser("train", parents=[common], help=t("train the tiny Llama with the tour's own numpy code",
                                                              "用导览自己的 numpy 代码训练小型 Llama"))
    train.add_argument("--config", default="main", choices=("small", "main", "big"),
                       help=t("model size (default: main, the shipped one)", "模型大小（默认 main，即随附的那个）"))
    train.add_argument("--seed", default="0", metavar="N", help=t("random seed (default 0)", "随机种子（默认 0）"))
    train.add_argument("--steps", metavar="N", help=t("training steps (default: the config's)", "训练步数（默认按配置）"))
    train.add_argument("--lr", metavar="X", help=t("peak learning rate (default: the config's)", "峰值学习率（默认按配置）"))
    train.add_argument("--out", metavar="FILE", help=t("where to write the weights, a name ending in .npz "
                                                       "(default: tiny-CONFIG.npz here)",
                                                       "权重写到哪里，文件名须以 .npz 结尾（默认：当前目录下的 tiny-CONFIG.npz）"))
    train.add_argument("--force", action="store_true", help=t("replace the file at --out if there is one",
                                                              "--out 处已有文件时替换它"))
    train.add_argument("--json", action="store_true", help=t("end with one JSON object of the results",
                                                             "最后输出一个包含结果的 JSON 对象"))
    train.set_defaults(func=cmd_train)
    return parser


def _config_flags(parser, t) -> None:
    """The model flags shared by params and calc."""
    parser.add_argument("--preset", metavar="NAME", help=t("a published model, e.g. llama2-7b",
                                                           "已发布的模型，如 llama2-7b"))
    for flag, en, zh in (("--layers", "number of layers", "层数"), ("--hidden", "d_model", "隐藏维度"),
                         ("--heads", "query heads", "查询头数"), ("--kv-heads", "key/value heads (default: heads)",
                                                                 "键值头数（默认等于头数）"),
                         ("--head-dim", "width of one head (default: hidden / heads)", "每头维度（默认 隐藏维度/头数）"),
                         ("--ffn", "FFN hidden width", "前馈中间维度"), ("--vocab", "vocabulary size", "词表大小")):
        parser.add_argument(flag, metavar="N", help=t(en, zh))
    parser.add_argument("--tied", action="store_true", help=t("the output head shares the embedding",
                                                              "输出投影与词嵌入共享"))
    parser.add_argument("--context", metavar="N", default="4096", help=t("context length for the KV cache",
                                                                         "计算 KV 缓存的上下文长度"))


def main(argv=None) -> int:
    """Entry point of the xf-tour command."""
    argv = sys.argv[1:] if argv is None else list(argv)
    _safe_output()  # before anything is written, --help included
    early = _lang_in(argv)
    lang = early if early in LANGS else default_lang()
    parser = build_parser(lang)
    args = parser.parse_args(argv)
    lang = getattr(args, "lang", lang)
    if args.command is None:
        args.command, args.func = "", cmd_tour
    from engine.errors import EngineError  # numpy comes in here, after the arguments are known good

    label = "错误" if lang == "zh" else "error"
    try:
        return args.func(args, lang)
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


# --- commands ---------------------------------------------------------------------------

def cmd_tour(args, lang) -> int:
    """Start the Textual app: at --lesson, or where the learner left off. Its exit status: 0, 1 after a crash."""
    from engine.errors import pick

    lessons = _load(args)
    ids = [x.id for x in lessons]
    if args.lesson is not None:
        pick({x.id: x for x in lessons}, args.lesson, "lesson", "课程")
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        raise UsageError(f"the tour needs a terminal; to read without one, try: {PROG} print --lesson {ids[0]}",
                         f"导览需要在终端里运行；不用终端阅读可以试试：{PROG} print --lesson {ids[0]}")
    from .app import make_app, run_tour  # textual comes in only here

    return run_tour(make_app(lang=getattr(args, "lang", None), lesson=args.lesson, lessons=lessons))


def cmd_views(args, lang) -> int:
    """List every view id, its title and its parameters."""
    from engine.views import VIEWS, fmt_value

    if args.json:
        from .plain import dumps
        print(dumps([{"id": v.id, "title": v.title(lang),
                      "params": [{"name": p.name, "default": p.default, "allowed": p.allowed()(lang),
                                  "help": p.help(lang)} for p in v.params]} for v in VIEWS.values()]))
        return 0
    from rich.cells import cell_len

    sep = "；" if lang == "zh" else "; "
    for v in VIEWS.values():
        print(f"{v.id}  {v.title(lang)}")
        settings = [f"{p.name}={fmt_value(p.default)}" for p in v.params]
        width = max(map(cell_len, settings), default=0)
        for p, setting in zip(v.params, settings):
            pad = " " * (width - cell_len(setting))
            print(f"    {setting}{pad}  {p.help(lang)}{sep}{p.allowed()(lang)}")
    return 0


def _parse_sets(pairs) -> dict[str, str]:
    """--set NAME=VALUE pairs as a dict; each name may be set once, so no value is dropped without a word."""
    settings = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--set takes NAME=VALUE, got {pair!r}", f"--set 的格式是 NAME=VALUE，收到 {pair!r}")
        name = name.strip()
        if name in settings:
            raise UsageError(f"{name} is set twice; give each --set name once",
                             f"{name} 被设置了两次；每个参数只能用 --set 设置一次")
        settings[name] = value.strip()
    return settings


def _load(args):
    """The lessons the tour runs on: --lessons DIR, or the shipped ones. Invalid ones stop here."""
    from lessons.loader import SHIPPED, LessonsInvalid, check_deep, load_lessons

    folder = getattr(args, "lessons", None) or SHIPPED
    try:
        lessons, _ = load_lessons(folder)
        problems = [] if folder == SHIPPED else [e for x in lessons for e in check_deep(x)]
    except LessonsInvalid as err:
        problems = err.errors
    if problems:  # the shipped lessons are checked by the tests; a learner's own folder is checked here
        more = len(problems) - 1
        raise UsageError(f"{problems[0]}" + (f" (and {more} more: {PROG} check-lessons {folder})" if more else ""),
                         f"{problems[0]}" + (f"（另有 {more} 个问题：{PROG} check-lessons {folder}）" if more else ""))
    return lessons


def cmd_lessons(args, lang) -> int:
    """List the lessons: id, both titles, steps. In JSON, "steps" counts the pages a learner walks
    through, the recap included, as the title line does ("1/7")."""
    lessons = _load(args)
    if args.json:
        from .plain import dumps
        print(dumps([{"id": x.id, "order": x.order, "title": {"zh": x.title.zh, "en": x.title.en},
                      "steps": len(x.steps) + 1, "experiments": len(x.experiments)} for x in lessons]))
        return 0
    for x in lessons:
        steps = f"{len(x.steps)} 步 + 小结" if lang == "zh" else f"{len(x.steps)} steps + recap"
        print(f"{x.order:>2}  {x.id:<15} {steps}  "
              f"{x.title.en} / {x.title.zh}")
    return 0


def cmd_check_lessons(args, lang) -> int:
    """Check every lesson file in a folder; exit 0 when all are valid, 2 with every error otherwise."""
    from lessons.loader import SHIPPED, check_deep, load_lessons

    folder = args.dir or getattr(args, "lessons", None) or SHIPPED
    lessons, errors = load_lessons(folder, strict=False)
    for lesson in lessons:
        errors += check_deep(lesson)
    if not errors:  # every step laid out at 80x24, as the app lays it out: nothing may scroll
        from .page import fit_problems
        errors += fit_problems(lessons)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"{len(errors)} {'个问题' if lang == 'zh' else 'problem(s)'}", file=sys.stderr)
        return 2
    print(f"{len(lessons)} lessons OK" if lang == "en" else f"{len(lessons)} 节课全部有效")
    return 0


def cmd_print(args, lang) -> int:
    """Print the named views (all by default) at the given settings, or a whole lesson."""
    from engine.errors import ParamError
    from engine.views import VIEWS, get_view

    if args.lesson is not None:
        return _print_lesson(args, lang)
    views = [get_view(v) for v in args.views] if args.views else list(VIEWS.values())
    settings = _parse_sets(args.set)
    for name in settings:
        if not any(name in {p.name for p in v.params} for v in views):
            ids = ", ".join(v.id for v in views)
            raise ParamError(f"no view among {ids} takes the parameter {name!r}; see: {PROG} views",
                             f"{ids} 中没有视图接受参数 {name!r}；参见：{PROG} views")
    results = []
    for v in views:  # all computed before anything is printed: an error leaves no half output
        mine = {k: val for k, val in settings.items() if k in {p.name for p in v.params}}
        results.append((v, v.run(mine)))
    return _emit(results, args.json, lang)


def _print_lesson(args, lang) -> int:
    if args.views or args.set or args.json:
        raise UsageError("--lesson prints a whole lesson; give no VIEW, --set or --json with it",
                         "--lesson 打印整节课，不能同时给 VIEW、--set 或 --json")
    from engine.errors import pick

    lesson = pick({x.id: x for x in _load(args)}, args.lesson, "lesson", "课程")
    from .plain import render_lesson, write
    write(lambda out: render_lesson(lesson, lang, min(out.width, 80)))
    return 0


def _emit(results, as_json, lang) -> int:
    from .plain import dumps, render_result, result_json, write

    if as_json:
        print(dumps({"lang": lang, "views": [result_json(r, v.title(lang), lang) for v, r in results]}))
        return 0
    from rich.console import Group
    from rich.text import Text
    write(lambda out: Group(*[part for i, (v, r) in enumerate(results)
                              for part in ([Text("")] if i else []) + [render_result(r, v.title(lang), lang, out.width)]]))
    return 0


def _config(args):
    """The ModelConfig the params flags describe: a preset, flags over a preset, or flags alone."""
    from engine import sizing
    from engine.views import Param, Tr

    def number(flag, raw):
        if raw is None:
            return None
        return Param(flag, "int", None, Tr("", ""), 1, sizing.MAX_DIM).parse(raw)

    fields = {"n_layer": ("--layers", args.layers), "d_model": ("--hidden", args.hidden),
              "n_head": ("--heads", args.heads), "n_kv_head": ("--kv-heads", args.kv_heads),
              "head_dim": ("--head-dim", args.head_dim), "d_ff": ("--ffn", args.ffn),
              "n_vocab": ("--vocab", args.vocab)}
    given = {k: number(flag, raw) for k, (flag, raw) in fields.items() if raw is not None}
    if args.tied:
        given["tied_embeddings"] = True
    if args.preset is not None or not given:
        name = "llama2-7b" if args.preset is None else args.preset
        base = sizing.preset(name)
        if "head_dim" not in given and ({"d_model", "n_head"} & given.keys()):
            given["head_dim"] = None
        cfg = base.with_(**given)
        return cfg, name, (sizing.PUBLISHED.get(name) if cfg == base else None)
    missing = [flag for k, (flag, _) in fields.items()
               if k in ("n_layer", "d_model", "n_head", "d_ff", "n_vocab") and k not in given]
    if missing:
        flags = " ".join(missing)
        raise UsageError(f"missing {flags}: give --layers --hidden --heads --ffn --vocab, or --preset NAME",
                         f"缺少 {flags}：请给出 --layers --hidden --heads --ffn --vocab，或 --preset NAME")
    given.setdefault("n_kv_head", given["n_head"])
    return sizing.ModelConfig(**given, name="custom"), None, None


def cmd_calc(args, lang) -> int:
    """Open the sizing workbench at a preset or at the model the flags describe."""
    from engine import sizing
    from engine.views import Param, Tr

    context = Param("--context", "int", None, Tr("", ""), 1, sizing.MAX_CONTEXT).parse(args.context)
    cfg, name, _ = _config(args)
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        raise UsageError(f"the workbench needs a terminal; without one, try: {PROG} params",
                         f"计算器需要在终端里运行；不用终端可以试试：{PROG} params")
    from .app import make_app, run_tour
    from .workbench import Workbench

    bench = Workbench.start(name or "llama2-7b", layers=cfg.n_layer, d_model=cfg.d_model, heads=cfg.n_head,
                            kv_heads=cfg.n_kv_head, head_dim=cfg.head_dim, d_ff=cfg.d_ff, vocab=cfg.n_vocab,
                            tied="on" if cfg.tied_embeddings else "off", context=context)
    if name is None:
        bench.set("preset", "")
    return run_tour(make_app(lang=getattr(args, "lang", None), bench=bench, lessons=[]))


def cmd_train(args, lang) -> int:
    """Train a tiny Llama, show its progress, write its weights and manifest."""
    import dataclasses
    import time
    from pathlib import Path

    from engine import corpus, tiny
    from engine.views import Param, Tr

    cfg = tiny.CONFIGS[args.config]
    seed = Param("--seed", "int", None, Tr("", ""), 0, 2**32 - 1).parse(args.seed)
    if args.steps is not None:
        cfg = dataclasses.replace(cfg, steps=Param("--steps", "int", None, Tr("", ""), 1, 100_000).parse(args.steps))
    if args.lr is not None:
        cfg = dataclasses.replace(cfg, lr=Param("--lr", "float", None, Tr("", ""), 1e-6, 1.0).parse(args.lr))
    out = Path(args.out or f"tiny-{args.config}.npz")
    if out.resolve() == tiny.SHIPPED.resolve() and not args.out:
        raise UsageError("refusing to overwrite the shipped weights without --out", "没有 --out 时不会覆盖随附的权重")
    _check_out(out, args.force)

    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    probe = corpus.draw(500, seed + 1, "held-out")  # a small set for the live readings
    label = {"zh": ("训练", "损失", "一致率", "头熵之比"), "en": ("training", "loss", "agreement", "head spread")}[lang]
    reading = {"agreement": float("nan"), "spread": float("nan")}
    bar = Progress(TextColumn(f"{label[0]} {args.config}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                   TextColumn(f"{label[1]} {{task.fields[loss]:.3f}}  {label[2]} {{task.fields[agreement]:.3f}}  "
                              f"{label[3]} {{task.fields[spread]:.2f}}"),
                   TimeRemainingColumn(), console=Console(stderr=True), transient=False)

    def on_step(step, loss, w):
        if step % 100 == 99 or step == cfg.steps - 1:
            e = tiny.evaluate(w, cfg, probe)
            reading.update(agreement=e["agreement"], spread=tiny.spread(e["head_entropy"]))
        bar.update(task, completed=step + 1, loss=loss, **reading)

    start = time.perf_counter()
    with bar:
        task = bar.add_task("train", total=cfg.steps, loss=float("nan"), **reading)
        w, summary = tiny.train(cfg, seed, on_step)
    summary["seconds"] = time.perf_counter() - start
    manifest = {"seed": seed, **{k: v for k, v in summary.items()}}
    try:
        tiny.save(out, w, cfg, manifest)
    except OSError as err:  # a full disk, say: save() left any old file as it was
        why = err.strerror or err
        print(f"{PROG} train: " + (f"错误: 无法写入 {out}（{why}）；原有文件未改动" if lang == "zh" else
                                   f"error: could not write {out} ({why}); any old file is unchanged"), file=sys.stderr)
        return 1
    if args.json:
        from .plain import dumps
        print(dumps({**{k: summary[k] for k in ("loss", "floor", "agreement", "agreement_mismatch",
                                                 "entropy_spread_init", "entropy_spread_trained", "seconds")},
                     "loss_unseen": summary["loss_unseen"], "steps": summary["steps"], "out": str(out)}))
    else:
        print(f"{out}: loss {summary['loss']:.4f} (floor {summary['floor']:.4f}), agreement "
              f"{summary['agreement']:.3f}, mismatched {summary['agreement_mismatch']:.3f}, head spread "
              f"{summary['entropy_spread_init']:.2f} -> {summary['entropy_spread_trained']:.2f}, "
              f"{summary['seconds']:.1f} s")
    return 0


def _check_out(out, force: bool) -> None:
    """Refuse, before any training, an --out that could not be written or would replace a file unasked."""
    import tempfile

    if out.suffix != ".npz":  # numpy would add .npz to any other name, and the report would name the wrong file
        raise UsageError(f"--out must name a .npz file, got {str(out)!r}", f"--out 必须是 .npz 文件，收到 {str(out)!r}")
    if not out.parent.is_dir():
        raise UsageError(f"no folder {out.parent} for --out", f"--out 的文件夹 {out.parent} 不存在")
    if out.is_dir():
        raise UsageError(f"--out {out} is a folder; name a file in it", f"--out {out} 是文件夹；请给出其中的文件名")
    if (out.exists() or out.is_symlink()) and not force:
        raise UsageError(f"{out} exists; add --force to replace it", f"{out} 已存在；加 --force 才会替换它")
    try:  # the save writes a temporary file beside `out`, so that is what must work
        fd, probe = tempfile.mkstemp(prefix=f".{out.name}-", suffix=".tmp", dir=out.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise UsageError(f"cannot write in the folder {out.parent} for --out ({err.strerror or err})",
                         f"无法在 --out 的文件夹 {out.parent} 中写入（{err.strerror or err}）") from None


def cmd_params(args, lang) -> int:
    """The itemised count, shares, weight memory and KV cache of one model."""
    from engine import sizing
    from engine.views import Param, Tr, params_result

    context = Param("--context", "int", None, Tr("", ""), 1, sizing.MAX_CONTEXT).parse(args.context)
    cfg, name, published = _config(args)
    if args.json:
        from .plain import dumps
        print(dumps({"preset": name, **sizing.report(cfg, context, published)}))
        return 0
    from engine.views import get_view, params_settings
    settings = params_settings(cfg, name or "custom", context)
    return _emit([(get_view("params"), params_result(cfg, context, published, settings))], False, lang)
