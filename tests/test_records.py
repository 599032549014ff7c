"""engine/records.py: a record behaves as the frozen dataclass it replaces, and is the one idiom for value types."""

import ast
import pickle
from types import MappingProxyType

import pytest
from helpers.cli import ROOT

from engine.records import FrozenError, asdict, fields, not_compared, record, replace
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


@record
class Named:
    """A test record with a field left out of equality, as a dataclass field(compare=False) is."""

    size: int
    name: str = not_compared("")


def test_a_not_compared_field_is_shown_and_kept_but_not_compared_or_hashed():
    a, b = Named(1, "one"), Named(1, name="uno")
    assert a == b and hash(a) == hash(b) and Named(1, "one") != Named(2, "one")
    assert (a.name, Named(1).name, Named.name) == ("one", "", "")  # the class attribute is the default, not the mark
    assert repr(a) == "Named(size=1, name='one')" and fields(Named) == ("size", "name")
    assert replace(a, size=2) == Named(2) and replace(a, size=2).name == "one"
    with pytest.raises(TypeError):
        @record
        class SharedDefault:
            a: list = not_compared([])


def test_asdict_gives_the_fields_in_order():
    assert asdict(Point(1, 2)) == {"x": 1, "y": 2, "label": "p"} and list(asdict(Point(1))) == ["x", "y", "label"]
    assert asdict(Named(3, "n")) == {"size": 3, "name": "n"}


def test_an_empty_mapping_default_is_a_read_only_one():
    """A record takes no dict default (one dict shared by every instance); lessons/loader.py's Step gives
    MappingProxyType({}), equal to {}, which no one can fill. Such a record, as one with any dict, has no hash."""

    @record
    class Hinted:
        id: str
        hints: dict = MappingProxyType({})

    a = Hinted("a")
    assert a.hints == {} and a == Hinted("a", {}) and a != Hinted("a", {"1": "x"})
    with pytest.raises(TypeError):
        a.hints["1"] = "x"
    with pytest.raises(TypeError):
        hash(a)


def test_the_configs_save_as_they_did_as_dataclasses():
    """tiny.save's manifest and the live run's argument hold asdict(cfg): the same JSON, keys in the same order, as
    dataclasses.asdict of the frozen dataclass the config was."""
    import json

    from engine import tiny

    cfg = tiny.CONFIGS["big"]
    assert json.dumps(asdict(cfg)) == (
        '{"d_model": 64, "n_layer": 4, "n_head": 8, "d_ff": 128, "n_vocab": %d, "steps": 750, "batch": 64, '
        '"lr": 0.002, "warmup": 100, "clip": 1.0}' % cfg.n_vocab)
    assert tiny.TrainedLlamaConfig(**json.loads(json.dumps(asdict(cfg)))) == cfg


def test_a_model_config_equals_a_preset_whatever_its_name():
    """engine/views/sizing.py names a config for the preset it equals, and tui/workbench.py and `xf-tour params`
    show the published count when it equals its preset: equality leaves the name out."""
    from engine import sizing

    custom = sizing.ModelConfig(4096, 32, 32, 32, None, 11008, 32000, name="custom")
    assert custom == sizing.PRESETS["llama2-7b"] and custom.name == "custom"
    assert custom.with_(n_layer=2) != custom and custom.with_(n_layer=2).name == "custom"


def frozen_dataclasses(path):
    """The lines of a file where a class is decorated @dataclass(frozen=True), however dataclass is spelled."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        for dec in getattr(node, "decorator_list", ()) if isinstance(node, ast.ClassDef) else ():
            if isinstance(dec, ast.Call) and any(k.arg == "frozen" for k in dec.keywords):
                yield dec.lineno


def test_every_immutable_value_type_is_a_record():
    """The rule of engine/records.py: a frozen value type is a @record (no methods compiled at import); a
    @dataclass in engine/, lessons/ and tui/ is a mutable state holder."""
    found = [f"{path.relative_to(ROOT)}:{line}" for top in ("engine", "lessons", "tui")
             for path in sorted((ROOT / top).rglob("*.py")) for line in frozen_dataclasses(path)]
    assert not found, f"make these @record (engine/records.py), not frozen dataclasses: {found}"
