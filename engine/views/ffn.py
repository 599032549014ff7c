"""Lesson 5: the SwiGLU feed-forward network, its width rule, and where the parameters live."""

import numpy as np

from .. import demos, ops, sizing
from ..errors import ParamError
from .core import Fact, Param, Result, Table, Tr, View, col, register

_WIDTH_RULES = (("llama2-7b", None, 256), ("llama3-8b", 1.3, 1024), ("llama2-70b", 1.3, 4096))


def _ffn_width(d_model, multiplier, multiple_of):
    mult = multiplier or None  # 0 means no multiplier, as in Llama 2 7B
    rules = [(Tr("yours", "自定义"), d_model, mult, multiple_of)]
    rules += [(Tr(sizing.PRESETS[name].name, sizing.PRESETS[name].name), sizing.PRESETS[name].d_model, m, mo)
              for name, m, mo in _WIDTH_RULES]
    if sizing.swiglu_widths(d_model, multiple_of, mult)[1] < 1:
        raise ParamError(f"multiplier={multiplier} leaves no FFN units; use 0 for none, or at least 0.1",
                         f"multiplier={multiplier} 会让前馈一个单元都不剩；不用请写 0，否则至少 0.1")
    rows = tuple((label, dm, *sizing.swiglu_widths(dm, mo, m)[:2], mo, sizing.swiglu_hidden(dm, mo, m))
                 for label, dm, m, mo in rules)
    scaled, d_ff = rows[0][3], rows[0][5]
    return Result("ffn-width", dict(d_model=d_model, multiplier=multiplier, multiple_of=multiple_of), (
        Table("width", Tr("The FFN width rule: 2/3 of 4d, times a multiplier, rounded up",
                          "前馈宽度规则：4d 的 2/3，乘以系数，再向上取整"),
              (col("model", "model", "模型"), col("d", "d_model", "d_model", "d"),
               col("two_thirds", "2/3 x 4d", "2/3 x 4d", "d"), col("scaled", "x multiplier", "x 系数", "d"),
               col("multiple_of", "multiple of", "取整到倍数", "d"), col("d_ff", "d_ff", "d_ff", "d")), rows),
    ), (Fact("d_ff", Tr("your d_ff", "你的 d_ff"), d_ff, ","),
        Fact("added", Tr("units the rounding adds", "取整多出的单元"), d_ff - scaled, ","),
        Fact("rounded", Tr("the rounding adds units", "取整多出了单元"), d_ff > scaled)))


def _shares(a, b):
    rows = []
    for name in (a, b):
        cfg = sizing.PRESETS[name]
        shares = sizing.group_shares(cfg)
        rows.append((cfg.name, shares["attention"], shares["ffn"], shares["embeddings"], shares["norms"]))
    return Result("shares", dict(a=a, b=b), (
        Table("shares", Tr("Share of all parameters", "占全部参数的比例"),
              (col("model", "model", "模型"), col("attention", "attention", "注意力", "pct"),
               col("ffn", "FFN", "前馈", "pct"), col("embeddings", "embeddings + output", "词嵌入 + 输出", "pct"),
               col("norms", "norms", "归一化", "pct")), tuple(rows)),
    ))


def _silu_dip():
    """Where silu is lowest, and its value there: read off a fine grid of z in [-4, 0]."""
    z = np.linspace(-4.0, 0.0, 40001)  # steps of 1e-4
    y = ops.silu(z)
    return float(z[np.argmin(y)]), float(y.min())


def _swiglu(seed):
    r = demos.swiglu_demo(seed)
    unit = r.units
    opened = int(np.argmax(unit[:, 1]))               # silu lets the most through
    closed = int(np.argmin(np.abs(unit[:, 1])))       # silu lets the least through, either sign
    dip = int(np.argmin(unit[:, 1]))                  # silu's most negative output: its dip near -1.28
    added = np.linalg.norm(unit[:, 3:4] * r.w_down, axis=1)  # [d_ff] how long each unit's contribution is
    top = np.argsort(-added, kind="stable")[:3]
    dims = range(min(4, r.w_down.shape[1]))
    memory_rows = tuple((int(j), float(unit[j, 3]), *(float(r.w_down[j, c]) for c in dims), float(added[j]))
                        for j in top)
    out_norm = float(np.linalg.norm(r.out))
    dip_at, dip_low = _silu_dip()
    return Result("swiglu", dict(seed=seed), (
        Table("gate", Tr("One token through SwiGLU: the gate decides what passes",
                         "一个词元经过 SwiGLU：门控决定放行多少"),
              (col("unit", "unit j", "单元 j"), col("gate", "x.W_gate", "x.W_gate", "+.2f"),
               col("silu", "silu(gate)", "silu(gate)", "+.2f"), col("up", "x.W_up", "x.W_up", "+.2f"),
               col("h", "product", "乘积", "+.2f")),
              tuple((j, *map(float, row)) for j, row in enumerate(unit))),
        Table("memory", Tr("The three units that add most: each adds its row of W_down, times its product",
                           "贡献最大的三个单元：各自把 W_down 里的一行乘上乘积，加到 x 上"),
              (col("unit", "unit j", "单元 j"), col("h", "product", "乘积", "+.2f"),
               *(col(f"w{c}", f"row d{c}", f"行 d{c}", "+.2f") for c in dims),
               col("added", "|added|", "|加上的|", ".2f")), memory_rows,
              note=Tr(f"row: unit j's row of W_down, {r.w_down.shape[1]} numbers, one per dim of x; "
                      f"the first {len(dims)} are shown. |added|: length of product * row",
                      f"行：W_down 里单元 j 那一行，共 {r.w_down.shape[1]} 个数，对应 x 的每一维，这里显示前 "
                      f"{len(dims)} 个。|加上的|：乘积 * 这一行的长度")),
    ), (Fact("open_unit", Tr("the most open unit", "最开的单元"), opened, "d"),
        Fact("open_gate", Tr("the most open unit's gate", "最开的单元的门控"), float(unit[opened, 0]), "+.2f"),
        Fact("open_silu", Tr("silu of the most open unit's gate", "最开的单元的 silu(门控)"),
             float(unit[opened, 1]), "+.2f"),
        Fact("open_share", Tr("the share silu keeps of the most open gate", "silu 对最开的门控保留的比例"),
             float(unit[opened, 1] / unit[opened, 0]), "pct"),
        Fact("closed_unit", Tr("the most nearly shut unit", "最接近关死的单元"), closed, "d"),
        Fact("closed_gate", Tr("the most nearly shut unit's gate", "最接近关死的单元的门控"),
             float(unit[closed, 0]), "+.2f"),
        Fact("closed_silu", Tr("silu of the most nearly shut unit's gate", "最接近关死的单元的 silu(门控)"),
             float(unit[closed, 1]), "+.2f"),
        Fact("dip_unit", Tr("the unit silu turns most negative", "silu 输出最负的单元"), dip, "d"),
        Fact("dip_gate", Tr("the gate of the unit in silu's dip", "落在 silu 低谷里的单元的门控"),
             float(unit[dip, 0]), "+.2f"),
        Fact("dip_silu", Tr("silu of the gate in the dip", "低谷里那个门控的 silu"), float(unit[dip, 1]), "+.2f"),
        Fact("dip_relu", Tr("ReLU of the gate in the dip", "低谷里那个门控的 ReLU"),
             max(float(unit[dip, 0]), 0.0), "+.2f"),
        Fact("dip_is_closed", Tr("the unit in the dip is the most nearly shut", "低谷里的单元就是最接近关死的单元"),
             dip == closed),
        Fact("top_unit", Tr("the unit that adds most", "加得最多的单元"), int(top[0]), "d"),
        Fact("top_share", Tr("the top unit's length over the output's", "加得最多的单元的长度占输出长度的比例"),
             memory_rows[0][-1] / out_norm if out_norm else 0.0, "pct"),
        Fact("units", Tr("hidden units", "隐藏单元数"), int(unit.shape[0]), "d"),
        Fact("dip_at", Tr("where silu is lowest", "silu 最低处的 z"), dip_at, "+.2f"),
        Fact("dip_low", Tr("silu's lowest value", "silu 的最低值"), dip_low, "+.2f")))


register(View("swiglu", Tr("The SwiGLU feed-forward network, one token", "SwiGLU 前馈网络：一个词元"),
     (Param("seed", "int", demos.DEMO_SEED, Tr("random token and weights", "随机词元与权重"), 0, 2**32 - 1),),
     _swiglu, (ops.silu, ops.swiglu, demos.swiglu_demo)))

register(View("ffn-width", Tr("The FFN width rule", "前馈宽度规则"),
     (Param("d_model", "int", 4096, Tr("d_model for the width rule", "宽度规则里的 d_model"), 1, sizing.MAX_DIM),
      Param("multiplier", "float", 0.0, Tr("ffn_dim_multiplier, 0 for none", "ffn_dim_multiplier，0 表示不用"), 0, 8),
      Param("multiple_of", "int", 256, Tr("round up to a multiple of", "向上取整到的倍数"), 1, 65536)),
     _ffn_width, (sizing.swiglu_widths, sizing.swiglu_hidden)))

register(View("shares", Tr("Where the parameters live", "参数都花在哪里"),
     (Param("a", "choice", "llama2-7b", Tr("first model", "第一个模型"), choices=tuple(sizing.PRESETS)),
      Param("b", "choice", "llama3-8b", Tr("second model", "第二个模型"), choices=tuple(sizing.PRESETS))),
     _shares, (sizing.param_count, sizing.group_shares)))
