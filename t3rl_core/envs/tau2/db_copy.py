"""Copies of tau2's pydantic databases; the garbage collector paused around tree-shaped work and kept
off long-lived objects.

`copy.deepcopy` (what `model_copy(deep=True)` uses) keeps a memo of every object for shared and
cyclic references; a database parsed from JSON has neither, so a plain recursive copy is several
times faster. Anything that is not a JSON-shaped value or a pydantic model is deep-copied as usual.
"""

from __future__ import annotations

import copy
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel

_IMMUTABLE = frozenset({str, int, float, bool, type(None)})


def copy_tree(value: Any) -> Any:
    """A deep copy of a tree of dicts, lists, tuples, scalars and pydantic models."""
    kind = type(value)
    if kind in _IMMUTABLE:
        return value
    if kind is dict:
        return {key: copy_tree(item) for key, item in value.items()}
    if kind is list:
        return [copy_tree(item) for item in value]
    if kind is tuple:
        return tuple(copy_tree(item) for item in value)
    if isinstance(value, BaseModel):
        return copy_model(value, copy_tree(value.__dict__))
    return copy.deepcopy(value)


def copy_model(value: BaseModel, fields: dict[str, Any]) -> BaseModel:
    """A copy of a pydantic model whose fields are `fields` (already copied), the rest of its state
    copied with `copy_tree`; no validation runs."""
    kind = type(value)
    copied = kind.__new__(kind)
    extra, private = value.__pydantic_extra__, value.__pydantic_private__
    object.__setattr__(copied, "__dict__", fields)
    object.__setattr__(copied, "__pydantic_fields_set__", set(value.__pydantic_fields_set__))
    object.__setattr__(copied, "__pydantic_extra__", None if extra is None else copy_tree(extra))
    object.__setattr__(copied, "__pydantic_private__", None if private is None else copy_tree(private))
    return copied


class _Pause:
    """How many threads are inside `paused_gc()`, and whether the first found the collector on."""

    lock = threading.Lock()
    depth = 0
    resume = False


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while the block allocates a large tree (which has no cycles);
    reference counting still frees everything. Nested and concurrent uses resume it once, at the end."""
    with _Pause.lock:
        if _Pause.depth == 0:
            _Pause.resume = gc.isenabled()
            gc.disable()
        _Pause.depth += 1
    try:
        yield
    finally:
        with _Pause.lock:
            _Pause.depth -= 1
            if _Pause.depth == 0 and _Pause.resume:
                gc.enable()
