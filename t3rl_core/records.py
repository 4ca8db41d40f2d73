"""`Record`: a `typing.NamedTuple` whose class is made without compiling source text.

`class Claim(Record): port: int; owner: str = ""` makes the class `class Claim(NamedTuple)` makes: a tuple
with the same fields, defaults, `__new__` signature and errors, `repr`, `_replace`, `_asdict`, `_make`,
`_fields`, `_field_defaults`, `__match_args__`, no instance `__dict__`, pickled the same way.
`typing.NamedTuple` evaluates each field's annotation (under postponed annotations a string, compiled as a
`ForwardRef`) and `collections.namedtuple` compiles its `__new__` from text: ~0.9 M instructions a class
of three fields, ~60 M in all for the ~70 of a cold `t3rl plan`. Here `__new__` is a precompiled
function of the same arity with its parameters renamed (`CodeType.replace`), and annotations stay as
written (nothing here reads them; `typing.get_type_hints` evaluates them on demand as for any class).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from operator import itemgetter
from types import FunctionType
from typing import Any, ClassVar, TypeVar

from t3rl_core.counts import counted

_R = TypeVar("_R", bound="Record")
_tuple_new = tuple.__new__


# `__new__` of each arity, as `collections.namedtuple` writes it (`_tuple_new(_cls, (a, b))`); a class's
# own is one of these with its field names (parameter names are looked up by name for keywords).
def _new0(_cls: Any) -> Any:
    return _tuple_new(_cls, ())


def _new1(_cls: Any, _0: Any) -> Any:
    return _tuple_new(_cls, (_0,))


def _new2(_cls: Any, _0: Any, _1: Any) -> Any:
    return _tuple_new(_cls, (_0, _1))


def _new3(_cls: Any, _0: Any, _1: Any, _2: Any) -> Any:
    return _tuple_new(_cls, (_0, _1, _2))


def _new4(_cls: Any, _0: Any, _1: Any, _2: Any, _3: Any) -> Any:
    return _tuple_new(_cls, (_0, _1, _2, _3))


def _new5(_cls: Any, _0: Any, _1: Any, _2: Any, _3: Any, _4: Any) -> Any:
    return _tuple_new(_cls, (_0, _1, _2, _3, _4))


def _new6(_cls: Any, _0: Any, _1: Any, _2: Any, _3: Any, _4: Any, _5: Any) -> Any:
    return _tuple_new(_cls, (_0, _1, _2, _3, _4, _5))


def _new7(_cls: Any, _0: Any, _1: Any, _2: Any, _3: Any, _4: Any, _5: Any, _6: Any) -> Any:
    return _tuple_new(_cls, (_0, _1, _2, _3, _4, _5, _6))


def _new8(_cls: Any, _0: Any, _1: Any, _2: Any, _3: Any, _4: Any, _5: Any, _6: Any, _7: Any) -> Any:
    return _tuple_new(_cls, (_0, _1, _2, _3, _4, _5, _6, _7))


_NEW: tuple[Callable[..., Any], ...] = (_new0, _new1, _new2, _new3, _new4, _new5, _new6, _new7, _new8)


def _constructor(qualname: str, fields: tuple[str, ...], defaults: tuple[Any, ...]) -> Callable[..., Any]:
    if len(fields) < len(_NEW):
        code = _NEW[len(fields)].__code__
        code = code.replace(
            co_varnames=("_cls", *fields), co_name="__new__", co_qualname=f"{qualname}.__new__"
        )
    else:  # rare (a handful of classes): compiled from text, as namedtuple does
        names = ", ".join(fields)
        code = compile(f"lambda _cls, {names}: _tuple_new(_cls, ({names}))", "<record>", "eval").co_consts[0]
        code = code.replace(co_name="__new__", co_qualname=f"{qualname}.__new__")
    return FunctionType(code, {"_tuple_new": _tuple_new}, "__new__", defaults or None)


# What a record's class gets made here, as typing.NamedTuple refuses a class body that defines them.
_MADE = frozenset(
    {
        "__new__",
        "__init__",
        "__slots__",
        "__getnewargs__",
        "_fields",
        "_field_defaults",
        "_make",
        "_replace",
        "_asdict",
    }
)


class _RecordMeta(type):
    def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> _RecordMeta:
        record = globals().get("Record")
        if record is None or record not in bases:  # Record itself, or a subclass of a record class
            return super().__new__(mcs, name, bases, ns)
        if len(bases) > 1:
            raise TypeError(f"{name}: a record has Record as its only base")
        for made in _MADE.intersection(ns):
            raise AttributeError(f"Cannot overwrite NamedTuple attribute {made}")
        fields = tuple(ns.get("__annotations__", {}))
        defaults: list[Any] = []
        for field in fields:
            if field.startswith("_"):
                raise ValueError(f"Field names cannot start with an underscore: {field!r}")
            if field in ns:
                defaults.append(ns.pop(field))
            elif defaults:
                raise TypeError(f"Non-default namedtuple field {field} cannot follow default field(s)")
        ns["__slots__"] = ()
        ns["_fields"] = fields
        ns["_field_defaults"] = dict(zip(fields[len(fields) - len(defaults) :], defaults, strict=True))
        ns["__match_args__"] = fields
        ns["__new__"] = _constructor(ns.get("__qualname__", name), fields, tuple(defaults))
        for index, field in enumerate(fields):
            ns[field] = property(itemgetter(index), doc=f"Alias for field number {index}")
        return super().__new__(mcs, name, bases, ns)


class Record(tuple, metaclass=_RecordMeta):  # type: ignore[type-arg]
    """Base of a NamedTuple-like class made cheaply (see the module's docstring)."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _field_defaults: ClassVar[dict[str, Any]] = {}

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={value!r}" for name, value in zip(self._fields, self, strict=True))
        return f"{type(self).__name__}({inner})"

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)

    @classmethod
    def _make(cls: type[_R], iterable: Iterable[Any]) -> _R:
        made = _tuple_new(cls, iterable)
        if len(made) != len(cls._fields):
            raise TypeError(f"Expected {counted(len(cls._fields), 'argument')}, got {len(made)}")
        return made

    def _replace(self: _R, **changes: Any) -> _R:
        made = self._make(changes.pop(name, value) for name, value in zip(self._fields, self, strict=True))
        if changes:
            raise TypeError(f"Got unexpected field names: {list(changes)!r}")
        return made

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(self._fields, self, strict=True))
