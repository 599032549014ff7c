"""The documented default seed of every random demo: each demo takes `seed` for a fresh draw.

A module of its own, so that a view can name the default without importing the demos."""

DEMO_SEED = 0
