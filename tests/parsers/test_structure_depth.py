"""structure_depth level by level equals the depth-first walk it replaced, on generated structures
(shared and self-holding containers included), and stops at limit + 1."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.parsers.nesting import MAX_NESTING, structure_depth

_END = object()


def _depth_first(value: object, limit: int = MAX_NESTING) -> int:
    """The walk of 1083115: a stack of iterators, the deepest level seen, stopped past `limit`."""
    deepest, level, stack = 0, 0, [iter((value,))]
    while stack:
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
            level -= 1
            continue
        if isinstance(item, list | tuple | set | frozenset | dict):
            level += 1
            deepest = max(deepest, level)
            if deepest > limit:
                return deepest
            stack.append(iter(item.values() if isinstance(item, dict) else item))
    return deepest


_VALUES = st.recursive(
    st.none() | st.integers() | st.text(max_size=3) | st.floats(allow_nan=False),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.frozensets(st.integers(), max_size=2)
        | st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=12,
)


def _chain(depth: int) -> Any:
    value: Any = 1
    for n in range(depth):
        value = [value] if n % 2 else {"k": value}
    return value


@settings(max_examples=400, deadline=None)
@given(_VALUES, st.integers(0, 6))
def test_level_by_level_is_the_depth_first_walk(value: Any, limit: int) -> None:
    for candidate in (value, [value, value], {"a": value, "b": [value]}):
        assert structure_depth(candidate, limit) == _depth_first(candidate, limit)
        assert structure_depth(candidate) == _depth_first(candidate)


def test_deep_chains_stop_past_the_limit() -> None:
    for depth in (MAX_NESTING - 1, MAX_NESTING, MAX_NESTING + 1, 10_000):
        assert structure_depth(_chain(depth)) == _depth_first(_chain(depth)) == min(depth, MAX_NESTING + 1)


def test_containers_held_many_times_or_by_themselves() -> None:
    held: list[Any] = []
    held.extend([held] * 1000)  # a list holding itself a thousand times
    assert structure_depth(held) == _depth_first(held) == MAX_NESTING + 1
    shared: Any = [1]
    for _ in range(40):  # each level holds the next one twice: 2**40 paths
        shared = [shared, shared]
    assert structure_depth(shared) == 41


class _Listed(list):  # a list subclass: walked item by item, as any container that is not plain
    pass


def test_long_containers_ruled_out_by_their_types_only_when_every_member_is_an_atom() -> None:
    """A plain list, tuple or dict of more than a few members, every one of them a str, int, float,
    bool or None, adds one level without its members tested one by one; any other member (a container
    anywhere in it, an atom's subclass) is counted as the depth-first walk counts it."""
    atoms: list[Any] = ["a", 1, 2.5, True, None] * 8
    for where in (0, len(atoms) // 2, len(atoms)):
        for inner in ([1], (1,), {"k": [1]}, frozenset({1}), _Listed([[1]])):
            members = [*atoms[:where], inner, *atoms[where:]]
            for candidate in (members, tuple(members), dict(enumerate(members)), _Listed(members)):
                assert structure_depth(candidate) == _depth_first(candidate) >= 2
    for flat in (atoms, tuple(atoms), dict(enumerate(atoms)), _Listed(atoms), [*atoms, _Listed()]):
        assert structure_depth(flat) == _depth_first(flat)
