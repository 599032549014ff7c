"""Views: what each screen of the tour shows, computed by the engine and returned as plain tables.

`core` holds the machinery (parameters, results, the registry); each topic's module defines its
views and registers them, in the order of the lessons.
"""

from . import residual, positions, attention, heads, ffn, sizing, context, misconceptions, tiny  # noqa: F401
from .core import (VIEWS, Column, Fact, Param, Result, Table, Tr, View, fmt_value, get_view, register,
                   run_view)
from .sizing import config_from, formulas, params_result, params_settings

__all__ = ["VIEWS", "Column", "Fact", "Param", "Result", "Table", "Tr", "View", "config_from", "fmt_value",
           "formulas", "get_view", "params_result", "params_settings", "register", "run_view"]
