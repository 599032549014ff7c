"""What would make tomllib slow, or fail on Python's own limits, found before it reads a lesson file: one pass of
regular expressions over the text, strings and comments left out. The loader (lessons/loader.py) refuses a file
with any of it, naming the line and the key."""

import re

# Caps, far above any real lesson: past them tomllib can take minutes and gigabytes (a 40 KB file with one
# 20,000-part dotted key).
MAX_DEPTH = 16               # arrays and tables nested inside each other; a lesson needs 3
MAX_KEY_PARTS = 8            # parts of one dotted key or table name; hints.1.en has 3
MAX_DIGITS = 50              # digits in one number; Python refuses to read an int of more than 4,300

# TOML strings and comments, whose brackets, dots and digits are text, not structure.
_SKIP = re.compile(r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}\n]+")
_LONG_KEY = re.compile(r"(?<![\w.-])[\w-]+(?:[ \t]*\.[ \t]*[\w-]+){%d}" % MAX_KEY_PARTS)
_LONG_NUMBER = re.compile(r"0[xob](?:_?[0-9A-Fa-f]){%d}|(?<![0-9_])[0-9](?:_?[0-9]){%d}"
                          % (MAX_DIGITS + 1, MAX_DIGITS))


def too_big(source: str) -> tuple[str, str, int, str | None] | None:
    """The first thing in a file's text past a cap, as (what, how to fix it, its line, the key it sets): nesting
    deeper than MAX_DEPTH, a dotted key of more than MAX_KEY_PARTS parts, a number of more than MAX_DIGITS
    digits. None when there is none."""
    bare = _SKIP.sub(lambda m: "s" + "\n" * m.group().count("\n"), source)  # keeps the line numbers
    depth, line = 0, 1
    for ch in _NOT_BRACKET.sub("", bare):
        if ch == "\n":
            line += 1
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return (f"arrays or tables nested more than {MAX_DEPTH} deep",
                        "write flatter data: a lesson needs three levels at most", line, _key_on(source, line))
        else:
            depth -= 1
    for pattern, message, fix in (
            (_LONG_KEY, f"a dotted key of more than {MAX_KEY_PARTS} parts", "use the keys of lessons/README.md"),
            (_LONG_NUMBER, f"a number of more than {MAX_DIGITS} digits", "write a shorter number")):
        m = pattern.search(bare)
        if m:
            line = bare.count("\n", 0, m.start()) + 1
            return message, fix, line, _key_on(source, line)
    return None


def _key_on(source: str, line: int) -> str | None:
    """The key that line `line` of a file sets, cut short; None if the line sets none."""
    text = source.split("\n", line)[line - 1] if line <= source.count("\n") + 1 else ""
    m = re.match(r"\s*([^=#\[\]]+?)\s*=", text[:200])
    return cut(m.group(1), 40) if m else None


def cut(text: str, length: int) -> str:
    """Text cut to `length` characters, the last three of them "..." when it was longer."""
    return text if len(text) <= length else text[:length - 3] + "..."
