"""typing's forward references compile each text once.

A `typing.ForwardRef` compiles its text (`compile(text, "<string>", "eval")`) when it is made, and
pydantic-core's `core_schema` module declares its schemas as TypedDicts whose annotations are strings,
each of which typing makes a ForwardRef when the class is made: a cold `t3rl plan` compiled 742 such
texts, 208 of them distinct (`bool` 126 times), ~23 M of its ~1,220 M instructions. `share_compiled()`
gives the `typing` module a `compile` that returns the code already made for the same text, file name
and mode: a code object is immutable, and a ForwardRef only evaluates it, so every ForwardRef behaves
as before (a text that is not an expression raises the same SyntaxError, which is not kept). Every
other module keeps the builtin.

The same for the methods `dataclasses` writes as text and `exec`s (`__init__`, `__repr__`, `__eq__`,
…): the libraries a cold plan imports make 50 dataclasses (annotated_types' constraints, pydantic's
validator markers and decorator infos), whose 210 methods cost ~90 M instructions to compile, 32 of
them a text compiled before (`func` fields, empty classes). The `exec` given to `dataclasses` runs the
code already made for the same text, with the globals and locals it is given, as `exec` of the text
does.

No `from __future__ import annotations` here: `compile` takes its caller's future flags, and neither
typing nor dataclasses has any; the builtin is called with `dont_inherit=True` so none of this module's
are taken (with `annotations`, a generated `__init__`'s annotations would become strings).
"""

import builtins
import functools
import types
import typing
from typing import Any


def share_compiled() -> None:
    """Before pydantic is imported: typing's ForwardRefs of one text share one code object, and so do
    the methods dataclasses generates from one text."""
    if "compile" not in vars(typing):
        typing.compile = compiled_once  # typing finds `compile` in its own globals before the builtins
    # lazy: dataclasses (inspect, tokenize), after launch.cli.deferred_patterns is in place
    import dataclasses

    if "exec" not in vars(dataclasses):
        dataclasses.exec = exec_compiled_once  # type: ignore[attr-defined]  # found before the builtin


def exec_compiled_once(source: Any, globals: Any = None, locals: Any = None, /) -> None:
    """`exec(source, globals, locals)` as dataclasses calls it, a text compiled once."""
    code = compiled_once(source, "<string>", "exec") if isinstance(source, str) else source
    builtins.exec(code, globals, locals)


@functools.lru_cache(maxsize=4096)
def compiled_once(source: str, filename: str, mode: str) -> types.CodeType:
    """`compile(source, filename, mode)` as typing calls it, once per arguments."""
    return builtins.compile(source, filename, mode, dont_inherit=True)
