"""The base of every config model: unknown keys are errors, never silently dropped.

A module of config models evaluates its annotations as its classes are created (no `from __future__
import annotations`): pydantic would evaluate each annotation string again, at every cold plan and
validate (tests/architecture/test_startup_imports.py checks the models of a run config)."""

from typing import Any

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """A pydantic model that rejects unknown keys and is immutable once validated."""

    # defer_build: a model's validator is built on first use, once, inside the model that uses it;
    # building each of the ~40 config models eagerly at import took most of `t3rl plan`'s start-up.
    # hide_input_in_errors: a rejected value may be a credential; launch names the key and its source
    # from `errors()` (which keep the input for non-secret keys), a raw traceback never echoes it.
    # allow_inf_nan=False: no setting is infinite or NaN, also when written as the string "inf" or
    # "nan"; it holds for floats inside lists, dicts and tuples, and for every subclass (plugins').
    # validate_default: a default meets its field's domain and its order with other fields
    # (t3rl_core.fields.Ordered), as a value the user writes does.
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        defer_build=True,
        hide_input_in_errors=True,
        allow_inf_nan=False,
        validate_default=True,
    )


def empty_list() -> list[Any]:
    """A list field's default factory. pydantic asks each factory whether it takes the validated data,
    through `inspect.signature`: for the builtin `list` that parses its text signature (~0.2 ms a field,
    ~3 ms the first time in a process); for a Python function it reads the code object."""
    return []
