"""Lessons: TOML files that script each step of the tour, and their strict loader.

Lesson files are data: they are read with tomllib and never executed.
"""
