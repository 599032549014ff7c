"""Output any terminal can take: streams that cannot encode Chinese, and a COLUMNS that is not a width."""

import os
import sys

MIN_COLUMNS, MAX_COLUMNS = 40, 1000  # narrower, a table breaks into a character per line; wider, Rich crawls


def safe_output(environ=os.environ) -> None:
    """Make any output writable: a stream that cannot encode Chinese (PYTHONIOENCODING=ascii) writes
    backslash escapes instead of failing, and a COLUMNS that is not a width (0, -1, "abc") is ignored,
    one outside MIN_COLUMNS..MAX_COLUMNS moved to the nearer end."""
    for stream in (sys.stdout, sys.stderr):
        try:
            "中文".encode(stream.encoding or "ascii")
        except (LookupError, UnicodeEncodeError):
            if hasattr(stream, "reconfigure"):
                stream.reconfigure(errors="backslashreplace")
        except AttributeError:  # a stream replaced by something without an encoding
            pass
    columns = environ.get("COLUMNS")
    if columns is not None:
        text = columns.strip().lstrip("0")
        if not (text.isascii() and text.isdigit()):  # "0" is "" by now
            del environ["COLUMNS"]  # Rich then asks the terminal, or uses 80
        else:  # digits past 6 are wider than any screen, and int() would refuse 5,000 of them
            environ["COLUMNS"] = str(min(max(int(text[:7]), MIN_COLUMNS), MAX_COLUMNS))
