"""engine/records.py: a record behaves as the frozen dataclass it replaces."""

import pickle

import pytest

from engine.records import FrozenError, fields, record, replace
from engine.views.core import Fact, Tr


@record
class Point:
    """A test record."""

    x: int
    y: int = 0
    label: str = "p"

    def norm1(self):
        return abs(self.x) + abs(self.y)


def test_construction_fills_defaults_by_position_and_keyword():
    assert (Point(1).x, Point(1).y, Point(1).label) == (1, 0, "p")
    p = Point(1, label="q")
    assert (p.x, p.y, p.label, p.norm1()) == (1, 0, "q", 1)
    assert fields(p) == fields(Point) == ("x", "y", "label")


@pytest.mark.parametrize("make", [lambda: Point(), lambda: Point(1, 2, "a", 4), lambda: Point(1, x=2),
                                  lambda: Point(1, z=3)])
def test_wrong_arguments_are_refused(make):
    with pytest.raises(TypeError):
        make()


def test_a_field_without_default_after_one_with_is_refused():
    with pytest.raises(TypeError, match="follows"):
        @record
        class Bad:
            a: int = 0
            b: int


def test_what_a_record_cannot_be_is_refused():
    with pytest.raises(TypeError):
        @record
        class NoFields:
            pass
    with pytest.raises(TypeError):
        @record
        class SharedDefault:
            a: list = []
    with pytest.raises(TypeError):
        @record
        class OwnInit:
            a: int

            def __init__(self, a):
                pass


def test_equality_hash_and_repr_follow_the_fields():
    assert Point(1, 2) == Point(1, 2) and Point(1, 2) != Point(2, 1)
    assert hash(Point(1, 2)) == hash(Point(1, 2))
    assert len({Point(1, 2), Point(1, 2), Point(0)}) == 2
    assert Point(1, 2) != (1, 2, "p")  # not a tuple
    assert repr(Point(1, 2)) == "Point(x=1, y=2, label='p')"
    assert Tr("a", "b") == Tr("a", "b") and Tr("a", "b") != Fact("a", "b", 1)


def test_a_record_cannot_change():
    p = Point(1)
    with pytest.raises(FrozenError):
        p.x = 2
    with pytest.raises(AttributeError):  # FrozenError is an AttributeError, as dataclasses' is
        del p.y
    assert p.x == 1 and p.y == 0


def test_replace_copies_with_changes_and_checks_the_names():
    p = Point(1, 2)
    q = replace(p, y=5)
    assert (q, p) == (Point(1, 5), Point(1, 2))
    with pytest.raises(TypeError):
        replace(p, z=1)


def test_a_record_pickles():
    p = Point(3, 4, "z")
    assert pickle.loads(pickle.dumps(p)) == p


def test_post_init_runs_after_the_fields_are_set():
    seen = []

    @record
    class Checked:
        n: int

        def __post_init__(self):
            seen.append(self.n)
            if self.n < 0:
                raise ValueError("n < 0")

    assert Checked(2).n == 2 and seen == [2]
    with pytest.raises(ValueError):
        Checked(-1)
