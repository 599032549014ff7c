"""xf-tour views: every view id, its title and its parameters."""


def cmd_views(args, lang) -> int:
    """List every view id, its title and its parameters."""
    from engine.views import VIEWS, fmt_value

    if args.json:
        from ..printer import dumps
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
