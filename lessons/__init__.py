"""Lessons: TOML files that script each step of the tour, and (with issue 3) their strict loader.

Lesson files are data: they are read with tomllib and never executed.
"""
