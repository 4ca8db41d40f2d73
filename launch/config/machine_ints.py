"""Every number of a config is a machine number as written: a whole number at most 2**63 - 1 in size,
and a number typed as a number, not as a boolean.

Python's int has no end, nor has pydantic's, so a field with no upper bound (`num_rollout`,
`save_interval`, `eval.concurrency`, a plugin's count) took `2**63` and the plan was built; the number
then reaches numpy, torch or a C extension (Megatron's iteration counters, SGLang's request fields),
which raise OverflowError hours into the run. The domain of an integer includes where it goes: int64,
as `StrictModel`'s `allow_inf_nan=False` makes every float finite. Numbers the schema holds as floats
are not judged by that bound (a float field given a large whole number holds a finite float); they are
judged by float32's: a nonzero float below its smallest normal (`1e-300`) is 0 where the stages compute.

pydantic's lax mode also takes a boolean for a number, as 1 or 0: `seed=true` ran with seed 1,
`eval.max_new_tokens=true` gave every call one token, a file's `temperature: off` (YAML 1.1's false)
sampled greedily, and `rollout_batch_size=true` was refused as a batch of 1 at another key. A boolean
is never what a number field means. The walk (`schema_errors.numbers_misread`) compares each number the
validated config holds with the value written, whatever the number's spelling."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from launch.config.errors import Problem
from launch.config.provenance import Provenance
from launch.config.schema_errors import INT64, default_of

INT64_MAX = INT64[-1]


def misread_number_problems(
    found: Iterable[tuple[str, Any, Any]],
    provenance: Provenance,
    root: Mapping[str, Any],
    *,
    under: tuple[str, Any] = ("", None),
) -> list[Problem]:
    """A refusal per (key, value written, number validated) of `schema_errors.numbers_misread`.
    `under`: (a stage's overlay's key, the root section it overlays), whose value the key takes without
    the one written."""
    problems = []
    prefix, section = under
    for item, raw, number in found:
        key = _list_of(item)  # an item of a list is refused at the list, which the fix sets whole
        source = provenance.source(key) or provenance.source(item)
        fallback = _value_at(section, key.removeprefix(prefix + ".")) if prefix else default_of(key, root)
        if prefix and source.startswith("override `"):
            # the overlay's value in its file, else the root's, comes back (the root's own keys get
            # their value without the override from launch.checks.undo)
            back: str | None = f"drop {source.removeprefix('override ')}"
        elif fallback not in (None, "null", "true", "false"):
            back = f"set {key}={_text(fallback)} ({'the root section' if prefix else 'its default'})"
        else:
            back = None
        if type(raw) is bool:
            what = f"item {item.removeprefix(key + '.')} of {key}" if item != key else key
            message = (
                f"{what} takes a number, but {str(raw).lower()} is a boolean, which would be read as "
                f"{number!r}: a boolean is never the number meant"
            )
            fix = back or f"give {key} a number"
        elif type(number) is float:
            message = (
                f"{key} is {number!r}, which float32 and bfloat16 (the formats the trainer and SGLang "
                f"compute in) hold as {'a subnormal' if abs(number) >= 2.0**-149 else '0'}: no "
                "setting is that small in size, so it is 0 in disguise or a typo"
            )
            fix = f"{back}; or the value meant" if back else f"give {key} the value meant (0 if it takes 0)"
        else:
            message = (
                f"{number} is past the largest 64-bit integer, {INT64_MAX}: numpy, torch and the C "
                "extensions the stages run refuse it (OverflowError)"
            )
            fix = f"give {key} a whole number of at most {INT64_MAX}"
        problems.append(Problem(key, message, source, fix))
    return problems


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "[" + ",".join(map(_text, value)) + "]"
    return str(value).lower() if isinstance(value, bool) else str(value)


def _list_of(key: str) -> str:
    """The key of the list an item's key (`eval.pass_k.0`) is in; the key itself when no item's."""
    while key.rpartition(".")[2].isdigit():
        key = key.rpartition(".")[0]
    return key


def _value_at(node: Any, key: str) -> Any:
    """The value at dotted `key` below a validated section (attributes, mapping keys, list items)."""
    for part in key.split("."):
        if isinstance(node, Mapping):
            node = node.get(part)
        elif isinstance(node, list | tuple):
            node = node[int(part)] if part.isdigit() and int(part) < len(node) else None
        else:
            node = getattr(node, part, None)
    return node
