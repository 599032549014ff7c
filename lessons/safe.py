"""Text that may reach a terminal, and JSON that may: what a lesson, a cache, a progress file, a path or a
command-line word holds is shown, never obeyed. Standard library only, so that every command can use it.

A terminal obeys C0 and C1 controls (ESC clears the screen or sets the window title; U+009B is the one-byte
CSI) and the invisible characters that reorder or break what it shows: the bidi marks, embeddings, overrides
and isolates (U+202E turns a line around), and the Unicode line and paragraph separators.
"""

import json
import re

# every C0 control but the newline (a tab too: its width is the terminal's guess), DEL, every C1 control,
# the bidi marks, embeddings, overrides and isolates, the line and paragraph separators, and lone surrogates:
# a path or an argument that is not UTF-8 holds its bytes as U+DC80-U+DCFF, which the output writes back raw
# (0x9B is the one-byte CSI)
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
UNSAFE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")  # \n too


def _stand_in(m: re.Match) -> str:
    code = ord(m.group())
    if code == 0x09:
        return " "
    if code < 0x20:
        return chr(0x2400 + code)  # its control picture, such as ␛ for ESC: one cell, not ambiguous width
    return "\u2421" if code == 0x7F else "?"


def printable(text: str) -> str:
    """text as it may reach a terminal: each UNSAFE character replaced by one harmless character; newlines
    kept."""
    return UNSAFE.sub(_stand_in, text)


def printable_line(text) -> str:
    """str(text) as part of one line on a terminal: printable(), and a newline shown as ␊ too."""
    return UNSAFE_LINE.sub(_stand_in, str(text))


def _escaped(m: re.Match) -> str:
    return f"\\u{ord(m.group()):04x}"


def json_text(obj, **options) -> str:
    """json.dumps(obj, ensure_ascii=False, **options) with every UNSAFE character written as a \\uXXXX escape:
    the same data to a JSON reader, nothing a terminal obeys. JSON escapes C0 in strings itself (a newline
    left in the text is indentation), and outside strings it has nothing UNSAFE: only the escapes inside
    strings change."""
    return UNSAFE.sub(_escaped, json.dumps(obj, ensure_ascii=False, **options))
