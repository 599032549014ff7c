"""xf-tour calc: the sizing workbench, opened at a preset or at the model the flags describe."""

import sys

from .parser import PROG, UsageError, config_from


def cmd_calc(args, lang) -> int:
    """Open the sizing workbench at a preset or at the model the flags describe."""
    from engine import sizing
    from engine.views import Param, Tr

    context = Param("--context", "int", None, Tr("", ""), 1, sizing.MAX_CONTEXT).parse(args.context)
    cfg, name, _ = config_from(args)
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        raise UsageError(f"the workbench needs a terminal; without one, try: {PROG} params",
                         f"计算器需要在终端里运行；不用终端可以试试：{PROG} params")
    from ..app import make_app, run_tour
    from ..workbench import Workbench

    bench = Workbench.start(name or "llama2-7b", layers=cfg.n_layer, d_model=cfg.d_model, heads=cfg.n_head,
                            kv_heads=cfg.n_kv_head, head_dim=cfg.head_dim, d_ff=cfg.d_ff, vocab=cfg.n_vocab,
                            tied="on" if cfg.tied_embeddings else "off", context=context)
    if name is None:
        bench.set("preset", "")
    return run_tour(make_app(lang=getattr(args, "lang", None), bench=bench, lessons=[]))
