"""`t3rl_core.records.Record` makes the class `typing.NamedTuple` makes: the same fields, defaults,
constructor signature and errors, repr, equality, hashing, helpers and pickling, checked side by side
on classes of every arity the precompiled constructors cover and past it."""

from __future__ import annotations

import ast
import copy
import inspect
import pickle
import types
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from t3rl_core.records import Record
from tests.support import source_tree


class Pair(NamedTuple):
    port: int
    owner: str = ""


class PairRecord(Record):
    port: int
    owner: str = ""


class Empty(NamedTuple):
    pass


class EmptyRecord(Record):
    pass


def _declared(name: str, base: Any) -> Any:
    """`class <name>(<base>): a: int … i: int; j: int = 10`, past the precompiled arities."""

    def body(namespace: dict[str, Any]) -> None:
        namespace.update(__annotations__=dict.fromkeys("abcdefghij", "int"), j=10, __module__=__name__)

    return types.new_class(name, (base,), exec_body=body)


Wide = _declared("Wide", NamedTuple)
WideRecord = _declared("WideRecord", Record)


class WithMethod(Record):
    x: int
    y: int = 2

    def total(self) -> int:
        return self.x + self.y


PAIRS = [(Pair, PairRecord), (Empty, EmptyRecord), (Wide, WideRecord)]
CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((), {}),
    ((1,), {}),
    ((1, "a"), {}),
    ((1, "a", 3), {}),
    ((), {"port": 1}),
    ((), {"owner": "b", "port": 2}),
    ((1,), {"port": 2}),
    ((), {"nothing": 1}),
    (tuple(range(9)), {}),
    (tuple(range(10)), {}),
    (tuple(range(11)), {}),
    (tuple(range(8)), {"i": 9}),
    (tuple(range(8)), {"i": 9, "j": 1}),
    (tuple(range(8)), {"h": 9}),
]


def _outcome(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, Any]:
    try:
        made = cls(*args, **kwargs)
    except TypeError as error:
        return "error", str(error).replace(f"{cls.__name__}.", "")
    return "made", (tuple(made), repr(made).replace("Record(", "("), made._asdict())


@pytest.mark.parametrize(("plain", "record"), PAIRS)
@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_constructed_as_namedtuple(plain: type, record: type, args: Any, kwargs: Any) -> None:
    assert _outcome(record, args, kwargs) == _outcome(plain, args, kwargs)


def _parameters(cls: type) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(cls).parameters.values()]


@pytest.mark.parametrize(("plain", "record"), PAIRS)
def test_the_class_as_namedtuple(plain: Any, record: Any) -> None:
    assert record._fields == plain._fields and record.__match_args__ == plain.__match_args__
    assert record._field_defaults == plain._field_defaults
    assert _parameters(record) == _parameters(plain)  # the annotations aside (namedtuple evaluates them)
    assert record.__slots__ == () and issubclass(record, tuple)


def test_the_instance_as_namedtuple() -> None:
    plain, made = Pair(1, "a"), PairRecord(1, "a")
    assert made == plain == (1, "a") and hash(made) == hash(plain)
    assert (made.port, made.owner) == (1, "a") and made[1] == "a"
    port, owner = made
    assert (port, owner) == (1, "a")
    assert made._replace(owner="b") == PairRecord(1, "b") and type(made._replace()) is PairRecord
    assert PairRecord._make([3, "c"]) == PairRecord(3, "c")
    with pytest.raises(TypeError, match="unexpected field names"):
        made._replace(nothing=1)
    with pytest.raises(TypeError, match="Expected 2 arguments, got 1"):
        PairRecord._make([1])
    with pytest.raises(AttributeError):
        made.port = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        made.other = 2  # type: ignore[attr-defined]
    assert not hasattr(made, "__dict__")
    assert pickle.loads(pickle.dumps(made)) == made and type(pickle.loads(pickle.dumps(made))) is PairRecord
    assert copy.deepcopy(made) == made and type(copy.copy(made)) is PairRecord


def test_methods_and_subclasses() -> None:
    assert WithMethod(1).total() == 3 and WithMethod(1, 5).total() == 6

    class Sub(WithMethod):
        def doubled(self) -> int:
            return 2 * self.total()

    assert Sub(1).doubled() == 6 and Sub._fields == ("x", "y") and Sub(1) == WithMethod(1)


def test_declarations_namedtuple_refuses_are_refused() -> None:
    with pytest.raises(TypeError, match="Non-default namedtuple field"):

        class Late(Record):
            a: int = 1
            b: int

    with pytest.raises(ValueError, match="underscore"):

        class Hidden(Record):
            _a: int

    with pytest.raises(AttributeError, match="Cannot overwrite NamedTuple attribute __new__"):

        class Made(Record):
            a: int

            def __new__(cls, a: int) -> Made:  # type: ignore[misc]
                return super().__new__(cls)


def test_t3rl_makes_records_not_namedtuples() -> None:
    # typing.NamedTuple compiles each class's __new__ and each string annotation: ~0.75 M instructions a
    # class against ~0.14 M for a Record, ~70 classes on a cold plan's way.
    root = Path(__file__).resolve().parents[2]
    found = [
        f"{path.relative_to(root)}:{node.lineno} {node.name}"
        for package in ("launch", "t3rl_core")
        for path in sorted((root / package).rglob("*.py"))
        for node in source_tree.nodes(path)  # parsed once for the scans of this process
        if isinstance(node, ast.ClassDef)
        and any(ast.unparse(base) in ("NamedTuple", "typing.NamedTuple") for base in node.bases)
    ]
    assert found == []
