"""What the message line says after a key (or a typed value) changed a setting: the setting before -> after, then
the numbers that moved with it, before -> after. The first number always shows: its label is shortened, then the
setting's value before is left out, before the number would be. Plain text, no UI: the lesson screen says it, the
tests walk it."""

from rich.cells import cell_len

from lessons.template import pieces

from . import page
from .fill import fill, ref_label
from .format import format_value
from .layout.screen import PAD
from .layout.wrap import shorten

LABEL_MIN = 12   # cells a shortened label keeps at least: fewer says nothing, and the label is left out
VALUE_MIN = 12   # cells a setting's value (a sentence, say) is begun in when the line needs the room


def changed_refs(step, before, after, lang: str) -> tuple[page.Marks, list[str]]:
    """The marks of what changed, and the prose's placeholders whose number moved in place, in prose order."""
    refs = [ref for ref, is_ref in pieces(step.text(lang), after) if is_ref and ref not in after.params]
    marks = page.diff(before, after, lang, refs)
    changed = [r for r in dict.fromkeys(refs) if r in marks.refs and page.same_place(before, after, r, lang)]
    return marks, changed


def _cell_figure(step, before, after, marks: page.Marks, lang: str) -> tuple[str, str, str] | None:
    """Where no number of the prose moved: the first cell that changed in the step's tables, (label, before,
    after), its row found in `before` by its first cell as the marks found it."""
    shown = [tb for tb in after.tables if not step.tables or tb.key in step.tables]
    for table in sorted(shown, key=lambda tb: step.tables.index(tb.key) if step.tables else 0):
        cells = sorted(marks.cells_of(table.key))
        old = next((tb for tb in before.tables if tb.key == table.key), None)
        if not cells or old is None:
            continue
        i, j = cells[0]
        row_id = page.row_ids(table, lang)[i]
        was = dict(zip(page.row_ids(old, lang), old.rows))[row_id]
        fmt = table.columns[j].fmt
        label = ref_label(after, f"{table.key}.{i}.{table.columns[j].key}", lang)
        return label, format_value(was[j], fmt, lang), format_value(table.rows[i][j], fmt, lang)
    return None


def figures(step, before, after, marks: page.Marks, changed: list[str], lang: str) -> list[tuple[str, str, str]]:
    """The numbers that moved, each (label, before, after): the prose's, or else the first changed cell."""
    out = [(ref_label(after, ref, lang), *(fill("{%s}" % ref, r, lang) for r in (before, after))) for ref in changed]
    if not out:
        cell = _cell_figure(step, before, after, marks, lang)
        out = [cell] if cell is not None else []
    return out


def head_line(setting: tuple[str, str, str, str], figs: list[tuple[str, str, str]], lang: str, width: int) -> str:
    """One line: `setting` (key, name, value before, value after) as "[key] name a -> b", then the figures. The
    first figure keeps its numbers: its label is shortened, then the setting's value before is left out and the
    one after begun (page.brief), then the label is left out (and a text that moved is begun too); each further
    figure goes in only whole."""
    room = width - 2 * PAD
    key, name, was, now = setting
    head = f"[{key}] {name} {was} -> {now}"
    if not figs:
        return head
    colon, sep = ("：", "；") if lang == "zh" else (": ", "; ")
    label, a, b = figs[0]
    numbers = f"{a} -> {b}"
    starts = (head, f"[{key}] {name} -> {now}", f"[{key}] {name} -> {page.brief(now, VALUE_MIN)}")
    line = next((f"{start}{colon}{shorten(label, spare)} {numbers}" for start in starts
                 if (spare := room - cell_len(f"{start}{colon} {numbers}")) >= min(LABEL_MIN, cell_len(label))),
                None)
    line = line or next((f"{start}{colon}{numbers}" for start in starts
                         if cell_len(f"{start}{colon}{numbers}") <= room), None)
    if line is None:  # a text that moved (a sampled continuation): both begun, in what the line has left
        most = max(8, (room - cell_len(f"{starts[-1]}{colon} -> ")) // 2)
        line = f"{starts[-1]}{colon}{page.brief(a, most)} -> {page.brief(b, most)}"
    for label, a, b in figs[1:]:
        figure = f"{sep}{label} {a} -> {b}"
        if cell_len(line + figure) > room:
            break
        line += figure
    return line
