"""Widgets of the xf-tour app."""
