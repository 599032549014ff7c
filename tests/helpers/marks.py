"""Marks the test modules share (the `slow` mark itself is declared in pyproject.toml)."""

import pytest

# The tests that bound a child process's wall-clock time (a tour on a pty gone within 1 s of a hang-up, a serve
# session within 2 s, an escape delay read off the clock) run one at a time under pytest-xdist: with
# --dist loadgroup (pyproject.toml's addopts) every test of this group goes to the same worker, in turn, so no
# two of them start a tour at once on the two cores. Without xdist the mark does nothing.
WALL_CLOCK = pytest.mark.xdist_group("wall_clock")

# The tests that run the real model (SmolLM2-135M, engine/views/real.py): slow, and run with XF_TOUR_MODEL naming its
# file, fetched once as a learner fetches it (tests/conftest.py, bench/smollm.py)
REAL_MODEL = (pytest.mark.slow, pytest.mark.real_model)


def with_real_marks(cases, is_real) -> list:
    """The cases of a parametrized test, each one that runs the real model (is_real(case)) marked REAL_MODEL."""
    return [pytest.param(*(case if isinstance(case, tuple) else (case,)), marks=REAL_MODEL) if is_real(case)
            else case for case in cases]
