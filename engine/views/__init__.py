"""Views: what each screen of the tour shows, computed by the engine and returned as plain tables.

`core` holds the machinery (parameters, results, the registry); each topic's module defines its
views and registers them, in the order of the lessons. A topic's module is imported when one of its
views is first asked for (`get_view`), and all of them when `VIEWS` is: core.HOMES says which is where.
"""

from .core import Chart, Column, Fact, Param, Result, Series, Table, Tr, View, fmt_value, get_view, register, run_view

__all__ = ["VIEWS", "Chart", "Column", "Fact", "Param", "Result", "Series", "Table", "Tr", "View", "config_from",
           "fmt_value",
           "formulas", "get_view", "params_result", "params_settings", "register", "run_view"]

_SIZING = ("config_from", "formulas", "params_result", "params_settings")


def __getattr__(name):
    """`VIEWS`: every topic's views, in the order of the lessons; the sizing helpers from their module."""
    if name == "VIEWS":
        from .core import load_all
        return load_all()
    if name in _SIZING:
        from . import sizing
        return getattr(sizing, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
