"""Lesson texts as templates: {placeholders} the engine fills, and {if NAME}...{else}...{end} it decides.

A template is data. A placeholder names a fact, a setting or a table cell of the step's view; a
condition names a true-or-false fact or setting of that view, optionally after `not`. Nothing in a
template is evaluated: a sentence that holds only at some settings is kept or dropped by a value the
engine computed.
"""

import re

from engine.views import Result, fmt_value

from .safe import UNSAFE, printable  # noqa: F401  what a lesson text may not hold: the loader and screens use both

TOKEN = re.compile(r"\{([^{}]*)\}")
_IF = re.compile(r"if (not )?([A-Za-z_][A-Za-z0-9_]*)")
_ROW = re.compile(r"[0-9]{1,6}")  # a row number as a placeholder writes it: ASCII digits, not "²" or 5,000 of them

class TemplateError(ValueError):
    """A template that names something the view does not have, or whose {if} blocks do not balance."""


def is_control(ref: str) -> bool:
    """Whether a {…} token is a condition word rather than a placeholder."""
    return ref in ("else", "end") or _IF.fullmatch(ref) is not None or ref.startswith("if ")


def placeholders(text: str) -> list[str]:
    """The placeholders a template names, conditions left out."""
    return [ref for ref in TOKEN.findall(text) if not is_control(ref)]


def structure_problems(text: str) -> list[str]:
    """What is wrong with a template's {if}/{else}/{end} nesting; empty when it balances."""
    problems, depth, seen_else = [], 0, []
    for ref in TOKEN.findall(text):
        if ref.startswith("if "):
            if not _IF.fullmatch(ref):
                problems.append(f"{{{ref}}} is not a condition: write {{if NAME}} or {{if not NAME}}")
            depth += 1
            seen_else.append(False)
        elif ref == "else":
            if not depth:
                problems.append("{else} without an {if}")
            elif seen_else[-1]:
                problems.append("two {else} in one {if}")
            else:
                seen_else[-1] = True
        elif ref == "end":
            if not depth:
                problems.append("{end} without an {if}")
            else:
                depth -= 1
                seen_else.pop()
    if depth:
        problems.append("an {if} without its {end}")
    return problems


def lookup(result: Result, ref: str):
    """The raw value and format a placeholder names; KeyError when it names nothing."""
    parts = ref.split(".")
    if len(parts) == 1:
        for fact in result.facts:
            if fact.key == parts[0]:
                return fact.value, fact.fmt
        if parts[0] in result.params:  # a setting, such as {draws}: written as the settings line writes it
            return fmt_value(result.params[parts[0]]), "text"
        raise KeyError(f"no fact or setting {ref!r}")
    if len(parts) != 3:
        raise KeyError(f"{ref!r} is neither a fact nor table.row.column")
    tables = {t.key: t for t in result.tables}
    table = tables.get(parts[0])
    if table is None:
        raise KeyError(f"no table {parts[0]!r}")
    cols = [c.key for c in table.columns]
    if not _ROW.fullmatch(parts[1]) or int(parts[1]) >= len(table.rows) or parts[2] not in cols:
        raise KeyError(f"no cell {ref!r}")
    col = cols.index(parts[2])
    return table.rows[int(parts[1])][col], table.columns[col].fmt


def condition(result: Result, name: str) -> bool:
    """The truth of a true-or-false fact or setting; TemplateError for anything else."""
    for fact in result.facts:
        if fact.key == name:
            if isinstance(fact.value, bool):
                return fact.value
            raise TemplateError(f"{{if {name}}}: fact {name!r} is not true-or-false")
    if name in result.params:
        if isinstance(result.params[name], bool):
            return result.params[name]
        raise TemplateError(f"{{if {name}}}: setting {name!r} is not on-or-off")
    raise TemplateError(f"{{if {name}}}: no fact or setting {name!r}")


def pieces(text: str, result: Result) -> list[tuple[str, bool]]:
    """The template at this result, conditions decided: (literal text, False) and (placeholder, True)."""
    out, frames, pos = [], [], 0  # a frame per open {if}: [the text around it shows, its condition, in {else}]

    def showing() -> bool:
        return all(outer and (truth != in_else) for outer, truth, in_else in frames)

    for m in TOKEN.finditer(text):
        if m.start() > pos and showing():
            out.append((text[pos:m.start()], False))
        pos, ref = m.end(), m.group(1)
        if ref.startswith("if "):
            m_if = _IF.fullmatch(ref)
            if m_if is None:
                raise TemplateError(f"{{{ref}}} is not a condition")
            outer = showing()
            truth = condition(result, m_if.group(2)) != bool(m_if.group(1)) if outer else False
            frames.append([outer, truth, False])
        elif ref == "else":
            if not frames:
                raise TemplateError("{else} without an {if}")
            frames[-1][2] = True
        elif ref == "end":
            if not frames:
                raise TemplateError("{end} without an {if}")
            frames.pop()
        elif showing():
            out.append((ref, True))
    if frames:
        raise TemplateError("an {if} without its {end}")
    if pos < len(text) and showing():
        out.append((text[pos:], False))
    return out
