"""xf-tour model get and model info: fetch the real model, and say what a model file holds."""

import sys

from lessons.safe import json_text, printable_line

from .parser import PROG


def cmd_get(args, lang) -> int:
    """Fetch SmolLM2-135M into the state folder, unless it is there already; say where it is."""
    from ..model_file import SHA256, SIZE, FetchError, default_path, fetch, sha256_file

    dest = default_path()
    if dest.is_file() and dest.stat().st_size == SIZE and sha256_file(dest) == SHA256:
        print(printable_line(f"{dest}: " + ("已经在这里，sha256 无误" if lang == "zh" else
                                            "already here, sha256 checked")))
        share(dest, lang)
        return 0
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    console, failed = Console(stderr=True), None
    bar = Progress(TextColumn("下载" if lang == "zh" else "downloading"), BarColumn(), DownloadColumn(),
                   TransferSpeedColumn(), console=console, transient=True, disable=not console.is_terminal)
    with bar:
        task = bar.add_task("get", total=None)
        try:
            fetch(dest, lambda done, total: bar.update(task, completed=done, total=total))
        except FetchError as err:
            failed = err
    if failed is not None:
        print(printable_line(f"{PROG} model get: " + ("错误: " if lang == "zh" else "error: ") + failed.text(lang)),
              file=sys.stderr)
        return 2
    print(printable_line(f"{dest}: " + (f"{SIZE:,} 字节，sha256 无误" if lang == "zh" else
                                        f"{SIZE:,} bytes, sha256 checked")))
    share(dest, lang)
    return 0


def share(dest, lang) -> None:
    """Make the float32 copy every tour of the account maps (engine/weights_cache.py) now, so that no learner's
    first real-model step waits for it, and say where it is; or, in one line, that each tour will make its own."""
    from engine import weights_cache

    if not weights_cache.enabled():
        return
    model = weights_cache.load(dest)
    path = weights_cache.cache_path(dest)
    if not model.weights["embed"].flags.writeable:  # mapped from the cache, not the process's own
        size = path.stat().st_size
        print(printable_line(f"{path}: " + (f"{size:,} 字节，所有导览共用的 float32 权重（可随时删除，会重建）"
                                            if lang == "zh" else f"{size:,} bytes, the float32 weights every tour "
                                            "shares (safe to delete: it is made again)")))
    else:
        print(printable_line(f"{path}: " + ("无法写入；每个导览各自反量化一份权重" if lang == "zh" else
                                            "could not be written; each tour dequantizes its own copy")))


def cmd_info(args, lang) -> int:
    """A model file's architecture, sizes and parameter count, by its tensors and by the formula."""
    from ..model_file import NoModel, find_model

    try:
        path = find_model(args.model)
    except NoModel as err:
        print(printable_line(f"{PROG} model info: " + ("错误: " if lang == "zh" else "error: ") + err.text(lang)),
              file=sys.stderr)
        return 2
    from engine import real_llama, weights_cache
    from engine.gguf_file import GGUFFile

    with GGUFFile(path) as f:
        model = real_llama.read_config(f)
        real_llama.check_tensors(f, model.cfg)
        info = facts(f, model)
        cache, ready = weights_cache.cached(f, model.cfg)
        info.update(float32_cache=str(cache), float32_cache_ready=ready)
    if args.json:
        print(json_text(info, indent=2, allow_nan=False))
        return 0
    from rich.cells import cell_len

    for label, value in lines(info, lang):  # a Chinese character is two cells wide
        print(printable_line(label + " " * (18 - cell_len(label)) + value))
    return 0


def facts(f, model) -> dict:
    """What `model info` says, as plain data."""
    from collections import Counter

    from engine import real_llama

    cfg = model.cfg
    return {"file": f.path, "bytes": f.n_bytes, "name": cfg.name, "architecture": f.metadata["general.architecture"],
            "n_layer": cfg.n_layer, "d_model": cfg.d_model, "n_head": cfg.n_head, "n_kv_head": cfg.n_kv_head,
            "head_dim": cfg.d_head, "d_ff": cfg.d_ff, "n_vocab": cfg.n_vocab, "tied_embeddings": cfg.tied_embeddings,
            "rope_base": model.rope_base, "rms_eps": model.rms_eps, "context": model.context,
            "tensor_types": dict(Counter(t.type_name for t in f.tensors.values())),
            "params_tensors": sum(real_llama.param_counts(f).values()),
            "params_formula": real_llama.formula_total(model), "float32_bytes": real_llama.float32_bytes(f)}


def lines(info: dict, lang: str) -> list[tuple[str, str]]:
    """facts() as labelled lines in `lang`."""
    types = ", ".join(f"{n} {name}" for name, n in info["tensor_types"].items())
    n_tensors = sum(info["tensor_types"].values())
    zh = lang == "zh"
    tied = ("共享词嵌入" if info["tied_embeddings"] else "输出投影独立") if zh else \
        ("tied embeddings" if info["tied_embeddings"] else "its own output matrix")
    shape = (f"{info['architecture']}：{info['n_layer']} 层，d_model {info['d_model']}，{info['n_head']} 个查询头、"
             f"{info['n_kv_head']} 个键值头，每头 {info['head_dim']}，FFN {info['d_ff']}，"
             f"词表 {info['n_vocab']:,}，{tied}"
             if zh else
             f"{info['architecture']}: {info['n_layer']} layers, d_model {info['d_model']}, {info['n_head']} query "
             f"heads and {info['n_kv_head']} K/V heads of {info['head_dim']}, FFN {info['d_ff']}, vocabulary "
             f"{info['n_vocab']:,}, {tied}")
    same = info["params_tensors"] == info["params_formula"]
    return [
        ("文件" if zh else "file", f"{info['file']} ({info['bytes']:,} " + ("字节)" if zh else "bytes)")),
        ("名称" if zh else "name", info["name"]),
        ("架构" if zh else "architecture", shape),
        ("超参数" if zh else "hyperparameters",
         f"RoPE base {info['rope_base']:,g}{'，' if zh else ', '}RMSNorm eps {info['rms_eps']:.0e}"
         + (f"，训练上下文 {info['context']:,}" if zh else f", context {info['context']:,}")),
        ("张量" if zh else "tensors", f"{n_tensors}: {types}"),
        ("参数" if zh else "parameters",
         (f"按张量 {info['params_tensors']:,}；按公式 {info['params_formula']:,}（{'一致' if same else '不一致'}）"
          if zh else f"{info['params_tensors']:,} by tensors; {info['params_formula']:,} by the formula "
          f"({'the same' if same else 'they differ'})")),
        ("float32", f"{info['float32_bytes'] / 2**20:,.0f} MiB"),
        ("共享副本" if zh else "shared copy", f"{info['float32_cache']} (" + (
            ("已就绪" if zh else "ready") if info["float32_cache_ready"] else
            ("尚未写入：第一个导览会写" if zh else "not written yet: the first tour writes it")) + ")"),
    ]
