"""Whether the value typed under an unknown key is one the guessed key takes.

A "did you mean" names another key for the value the user typed (`hardware.micro_batch_size=2` →
`hardware.dynamic_batch=2`); the guess is a fix only if that override validates when applied. A key
spelt alike is often another setting of another domain (a switch for a count), so each guess is tried
against the domain its field declares (its type and constraints) before it is offered, and dropped for
the next candidate, or for the section's keys, when the field refuses the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, get_args

from pydantic import TypeAdapter, ValidationError

from launch.config.fixes import value_at
from launch.config.schema_walk import model_at
from launch.config.secrets import is_secret_key
from t3rl_core.fields import CommaList


def takes(key: str, value: Any, root: Mapping[str, Any]) -> bool:
    """Whether the field at dotted `key` takes `value` as typed (a value only the config's other keys
    could refuse counts as taken); True where no field is declared (a free-form mapping's entry)."""
    if is_secret_key(key):
        return True  # the value typed is never offered back there: the fix is the reference form
    parent, _, name = key.rpartition(".")
    model = model_at(parent, root)
    field = model.model_fields.get(name) if model is not None else None
    if field is None or isinstance(value, Mapping) or isinstance(value_at(root, key), Mapping):
        # a section's keys are judged one by one where they are placed (misplaced_keys.fits), and a place
        # standing for a mapping above the typed leaf holds the value below it; a name typed for a section
        # is its group's option (`rewrd=binary` → reward=binary), judged by the group
        return True
    declared = Annotated[field.annotation, *field.metadata] if field.metadata else field.annotation
    try:
        TypeAdapter(declared).validate_python(value)
    except ValidationError:
        return False
    except Exception:  # a validator needing the config's other keys: not this value's fault
        return True
    return True


def one_value_with_commas(key: str, text: str, root: Mapping[str, Any]) -> bool:
    """Whether the field at `key` declares its one value a list split at ',' (`CommaList`: sbatch's
    partitions) and takes `text` so: `executor.partition=gpu,debug` is that value, not a sweep."""
    parent, _, name = key.rpartition(".")
    model = model_at(parent, root)
    field = model.model_fields.get(name) if model is not None else None
    return field is not None and _marked(field.annotation) and takes(key, text, root)


def _marked(annotation: Any) -> bool:
    """Whether a `CommaList` marks `annotation` or a type inside it (an optional's member)."""
    return any(isinstance(arg, CommaList) or _marked(arg) for arg in get_args(annotation))
