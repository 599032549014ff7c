"""Screens of the xf-tour app."""
