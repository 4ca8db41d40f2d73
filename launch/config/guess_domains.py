"""A key guessed for an unknown one whose field refuses the value typed: named with what it takes.

A guess is a fix only if its field takes the value (launch.config.guess_values.takes): a switch refusing a
count is another setting, and the section's keys are listed instead. But a text kind refusing text is the
same setting typed in another form (`executor.time=25:00:00:00` for `executor.time_limit`, a SLURM
duration): the guess was dropped and the forms the field takes went unsaid. Now the guess stays, with the
value as the field reads it when its kind says (a `Corrected`: `25-00:00:00`), else with the kind's own
description of its domain, declared once on the kind (`t3rl_core.fields.SLURM_TIME_FORMS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, get_args

from pydantic import TypeAdapter, ValidationError

from launch.config.fixes import assign, quoted
from launch.config.schema_walk import model_at
from t3rl_core.fields import Corrected, StrKind


def text_kind(annotation: Any) -> StrKind | None:
    """The text kind marking `annotation` or a type inside it (an optional's member)."""
    for arg in get_args(annotation):
        if isinstance(arg, StrKind):
            return arg
        inner = text_kind(arg)
        if inner is not None:
            return inner
    return None


def refused_guess_fix(key: str, value: Any, root: Mapping[str, Any]) -> str | None:
    """The fix naming the guessed `key` whose text kind refuses the text `value`: the value as the kind
    reads it, else the kind's domain; None for any other refusal (another setting's, left unguessed)."""
    parent, _, name = key.rpartition(".")
    model = model_at(parent, root)
    field = model.model_fields.get(name) if model is not None else None
    if field is None or not isinstance(value, str):
        return None
    declared = Annotated[field.annotation, *field.metadata] if field.metadata else field.annotation
    kind = text_kind(declared)
    if kind is None:
        return None
    try:
        TypeAdapter(declared).validate_python(value)
    except ValidationError as error:
        cause = error.errors(include_url=False)[0].get("ctx", {}).get("error")
        if isinstance(cause, Corrected):
            why = str(cause).partition("; use ")[0]
            return f"did you mean '{key}'? e.g. {assign(root, key, quoted(cause.value))} ({why})"
        return f"did you mean '{key}'? it takes a {kind.name}: {kind.description}; {value!r} is none of them"
    return None
