"""typing's forward references compile each text once.

A `typing.ForwardRef` compiles its text (`compile(text, "<string>", "eval")`) when it is made, and
pydantic-core's `core_schema` module declares its schemas as TypedDicts whose annotations are strings,
each of which typing makes a ForwardRef when the class is made: a cold `t3rl plan` compiled 742 such
texts, 208 of them distinct (`bool` 126 times), ~23 M of its ~1,220 M instructions. `share_compiled()`
gives the `typing` module a `compile` that returns the code already made for the same text, file name
and mode: a code object is immutable, and a ForwardRef only evaluates it, so every ForwardRef behaves
as before (a text that is not an expression raises the same SyntaxError, which is not kept). Every
other module keeps the builtin.

No `from __future__ import annotations` here: `compile` takes its caller's future flags, and typing
itself has none; the builtin is called with `dont_inherit=True` so none of this module's are taken.
"""

import builtins
import functools
import types
import typing


def share_compiled() -> None:
    """Before pydantic is imported: typing's ForwardRefs of one text share one code object."""
    if "compile" not in vars(typing):
        typing.compile = compiled_once  # typing finds `compile` in its own globals before the builtins


@functools.lru_cache(maxsize=4096)
def compiled_once(source: str, filename: str, mode: str) -> types.CodeType:
    """`compile(source, filename, mode)` as typing calls it, once per arguments."""
    return builtins.compile(source, filename, mode, dont_inherit=True)
