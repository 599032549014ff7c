"""xf-tour params: a model's itemised parameter count, memory and KV cache."""

from .parser import config_from
from .print_cmd import _emit


def cmd_params(args, lang) -> int:
    """The itemised count, shares, weight memory and KV cache of one model."""
    from engine import sizing
    from engine.views import Param, Tr, params_result

    context = Param("--context", "int", None, Tr("", ""), 1, sizing.MAX_CONTEXT).parse(args.context)
    cfg, name, published = config_from(args)
    if args.json:
        from ..printer import dumps
        print(dumps({"preset": name, **sizing.report(cfg, context, published)}))
        return 0
    from engine.views import get_view, params_settings
    settings = params_settings(cfg, name or "custom", context)
    return _emit([(get_view("params"), params_result(cfg, context, published, settings))], False, lang)
