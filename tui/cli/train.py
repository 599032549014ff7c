"""xf-tour train: train the tiny Llama and write its weights."""

import os
import re
import sys

from lessons.safe import json_text, printable_line

from .parser import PROG, UsageError

REFRESH = 0.25  # seconds between redraws of the progress line: a redraw in a thread of its own slowed the steps


def cmd_train(args, lang) -> int:
    """Train a tiny Llama, show its progress, write its weights and manifest."""
    import time
    from pathlib import Path

    from engine import tiny
    from engine.records import replace
    from engine.views import Param, Tr

    from ..training import steady_heap

    cfg = tiny.CONFIGS[args.config]
    seed = Param("--seed", "int", None, Tr("", ""), 0, 2**32 - 1).parse(args.seed)
    if args.steps is not None:
        cfg = replace(cfg, steps=Param("--steps", "int", None, Tr("", ""), 1, 100_000).parse(args.steps))
    if args.lr is not None:
        cfg = replace(cfg, lr=Param("--lr", "float", None, Tr("", ""), 1e-6, 1.0).parse(args.lr))
    out = Path(args.out or f"tiny-{args.config}.npz")
    if out.resolve() == tiny.SHIPPED.resolve() and not args.out:
        raise UsageError("refusing to overwrite the shipped weights without --out", "没有 --out 时不会覆盖随附的权重")
    _check_out(out, args.force)

    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    label = {"zh": ("训练", "损失", "一致率", "头熵之比"), "en": ("training", "loss", "agreement", "head spread")}[lang]
    reading = {"agreement": float("nan"), "spread": float("nan")}
    bar = Progress(TextColumn(f"{label[0]} {args.config}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                   TextColumn(f"{label[1]} {{task.fields[loss]:.3f}}  {label[2]} {{task.fields[agreement]:.3f}}  "
                              f"{label[3]} {{task.fields[spread]:.2f}}"),
                   TimeRemainingColumn(), console=Console(stderr=True), transient=False, auto_refresh=False)

    shown = 0.0

    def on_reading(step, e):  # every 100 steps, on the 200 held-out sentences of train()'s spread curve
        reading.update(agreement=e["agreement"], spread=tiny.spread(e["head_entropy"]))

    def on_step(step, loss, w):
        nonlocal shown
        if (now := time.perf_counter()) - shown >= REFRESH:
            shown = now
            bar.update(task, completed=step + 1, loss=loss, **reading)
            bar.refresh()

    steady_heap()
    start = time.perf_counter()
    with bar:
        task = bar.add_task("train", total=cfg.steps, loss=float("nan"), **reading)
        w, summary = tiny.train(cfg, seed, on_step, on_reading=on_reading)
        bar.update(task, completed=summary["steps"], loss=summary["train_loss"], **reading)
        bar.refresh()
    summary["seconds"] = time.perf_counter() - start
    manifest = {"seed": seed, **{k: v for k, v in summary.items()}}
    try:
        tiny.save(out, w, cfg, manifest)
    except OSError as err:  # a full disk, say: save() left any old file as it was
        why = err.strerror or err
        print(printable_line(f"{PROG} train: " + (f"错误: 无法写入 {out}（{why}）；原有文件未改动" if lang == "zh" else
                                                  f"error: could not write {out} ({why}); any old file is unchanged")),
              file=sys.stderr)
        return 1
    if args.json:
        print(json_text({**{k: summary[k] for k in ("loss", "floor", "agreement", "agreement_mismatch",
                                                     "entropy_spread_init", "entropy_spread_trained", "seconds")},
                         "loss_unseen": summary["loss_unseen"], "steps": summary["steps"], "out": str(out)},
                        indent=2, allow_nan=False))
    else:
        print(f"{printable_line(out)}: loss {summary['loss']:.4f} (floor {summary['floor']:.4f}), agreement "
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
    _sweep(out)
    try:  # the save writes a temporary file beside `out`, so that is what must work
        fd, probe = tempfile.mkstemp(prefix=f".{out.name}-", suffix=".tmp", dir=out.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise UsageError(f"cannot write in the folder {out.parent} for --out ({err.strerror or err})",
                         f"无法在 --out 的文件夹 {out.parent} 中写入（{err.strerror or err}）") from None


def _sweep(out) -> None:
    """Delete the temporary files of saves of `out` that were killed (tiny.save names them as mkstemp does,
    .NAME-XXXXXXXX.tmp): only regular files of exactly that name, a minute old; a link is never followed."""
    from ..progress import sweep

    sweep(out.parent, re.compile(re.escape(f".{out.name}-") + r"[a-z0-9_]{8}\.tmp"))
