"""Frozen records: the project's value types, made without compiling code at import.

`@dataclass(frozen=True)` writes each class's __init__, __eq__, __hash__, __repr__, __setattr__ and
__delattr__ as source and compiles them one by one, at import. The views' types and the demos' and the
grammar's results are many classes, so a `print` of one view paid for compiling all of them before
computing anything. A record gets the same methods as closures over its field names, with nothing to
compile; an instance is made about as fast (measured in bench/; see bench/HISTORY.md).

The rule: every immutable value type of engine/, lessons/ and tui/ (a result, a config, a lesson as read, a
footer item) is a record, and tests/test_records.py refuses a `@dataclass(frozen=True)` there. A mutable state
holder, an object the app changes as the learner moves (tui/tour_state.py Tour, tui/progress.py Progress), stays
a plain `@dataclass`.

    @record
    class Fact:
        key: str
        value: Any
        fmt: str = "text"   # a default, as in a dataclass

Fields are the class's own annotations, in order: a record has no base class of fields, no ClassVar,
no mutable default (an empty mapping's default is `types.MappingProxyType({})`), and defines none of the
methods it is given. It is immutable, compares and hashes by its fields, as a frozen dataclass does, and
pickles. A field whose default is `not_compared(value)` is left out of equality and the hash, as a dataclass
field(default=value, compare=False) is: a preset's display name, where a lesson was read from.
`replace(r, **changes)` is dataclasses.replace; `asdict(r)` is dataclasses.asdict for a record of plain values
(it does not go into nested records or copy containers).
"""

_FIELDS = "__record_fields__"


class not_compared:  # noqa: N801  (read as a field's default, as dataclasses' field() is)
    """A field's default, and the mark that equality and the hash leave the field out."""

    __slots__ = ("default",)

    def __init__(self, default):
        self.default = default


class FrozenError(AttributeError):
    """Raised on an attempt to change a record's field."""


def record(cls):
    """Give cls an __init__ over its annotated fields, value equality, a hash, a repr, and no way to
    change a field after construction."""
    names = tuple(cls.__annotations__)  # the class's own (Python 3.10 on), evaluated on 3.14's lazy annotations
    defaults = {n: cls.__dict__[n] for n in names if n in cls.__dict__}
    loose = {n for n, v in defaults.items() if isinstance(v, not_compared)}
    for name in loose:
        defaults[name] = defaults[name].default
        setattr(cls, name, defaults[name])  # the class attribute is the default, as in a dataclass
    compared = tuple(n for n in names if n not in loose)
    if not names or any(isinstance(v, (list, dict, set)) for v in defaults.values()) or any(
            m in cls.__dict__ for m in ("__init__", "__eq__", "__hash__", "__repr__", "__setattr__", "__delattr__")):
        raise TypeError(f"{cls.__name__}: a record needs a field, takes no list, dict or set default, and "
                        "makes its own __init__, __eq__, __hash__, __repr__, __setattr__ and __delattr__")
    first_default = next((i for i, n in enumerate(names) if n in defaults), len(names))
    if any(n not in defaults for n in names[first_default:]):
        raise TypeError(f"{cls.__name__}: a field without a default follows one with a default")
    known = frozenset(names)
    post_init = getattr(cls, "__post_init__", None)

    def __init__(self, *args, **kwargs):
        if len(args) == len(names) and not kwargs:  # every field by position: the common case
            self.__dict__.update(zip(names, args))
        else:
            if len(args) > len(names):
                raise TypeError(f"{cls.__name__}() takes {len(names)} fields, got {len(args)}")
            values = dict(zip(names, args))
            for name, value in kwargs.items():
                if name not in known or name in values:
                    raise TypeError(f"{cls.__name__}() got an unexpected or repeated field {name!r}")
                values[name] = value
            for name in names:
                if name not in values:
                    if name not in defaults:
                        raise TypeError(f"{cls.__name__}() is missing the field {name!r}")
                    values[name] = defaults[name]
            self.__dict__.update(values)
        if post_init is not None:
            post_init(self)

    def _values(self):
        return tuple(map(self.__dict__.__getitem__, compared))

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self is other or _values(self) == _values(other)

    def __hash__(self):
        return hash(_values(self))

    def __repr__(self):
        return f"{cls.__qualname__}(" + ", ".join(f"{n}={self.__dict__[n]!r}" for n in names) + ")"

    def __setattr__(self, name, value):
        raise FrozenError(f"cannot assign to field {name!r} of a {cls.__name__}")

    def __delattr__(self, name):
        raise FrozenError(f"cannot delete field {name!r} of a {cls.__name__}")

    for method in (__init__, __eq__, __hash__, __repr__, __setattr__, __delattr__):
        method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, method.__name__, method)
    setattr(cls, _FIELDS, names)
    cls.__match_args__ = names
    return cls


def fields(r) -> tuple[str, ...]:
    """The names of a record's (or record class's) fields, in order."""
    return getattr(r, _FIELDS)


def asdict(r) -> dict:
    """A record's fields as {name: value}, in order; the values as they are (shallow)."""
    return {n: r.__dict__[n] for n in fields(r)}


def replace(r, **changes):
    """A copy of record r with some fields changed, checked as the constructor checks them."""
    unknown = set(changes) - set(fields(r))
    if unknown:
        raise TypeError(f"{type(r).__name__} has no field {sorted(unknown)[0]!r}")
    return type(r)(**{n: changes.get(n, r.__dict__[n]) for n in fields(r)})
