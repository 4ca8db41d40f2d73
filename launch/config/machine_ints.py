"""Every whole number of a config is a machine integer: at most 2**63 - 1 in size.

Python's int has no end, nor has pydantic's, so a field with no upper bound (`num_rollout`,
`save_interval`, `eval.concurrency`, a plugin's count) took `2**63` and the plan was built; the number
then reaches numpy, torch or a C extension (Megatron's iteration counters, SGLang's request fields),
which raise OverflowError hours into the run. The domain of an integer includes where it goes: int64,
as `StrictModel`'s `allow_inf_nan=False` makes every float finite. Numbers the schema holds as floats
are not judged (a float field given a large whole number holds a finite float)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from launch.config.errors import Problem
from launch.config.provenance import Provenance

INT64_MAX = 2**63 - 1


def beyond_int64(data: dict[str, Any], run: Any, provenance: Provenance) -> list[Problem]:
    """A refusal per whole number of `data` past int64 that the validated config `run` holds as an int."""
    return [
        Problem(
            key,
            f"{value} is past the largest 64-bit integer, {INT64_MAX}: numpy, torch and the C extensions "
            "the stages run refuse it (OverflowError)",
            provenance.source(key),
            f"give {key} a whole number of at most {INT64_MAX}",
        )
        for key, value in _huge(data, "")
        if isinstance(_validated(run, key), int)
    ]


def _huge(node: Any, prefix: str) -> Iterator[tuple[str, int]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _huge(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _huge(v, f"{prefix}.{i}")
    elif type(node) is int and not -INT64_MAX - 1 <= node <= INT64_MAX:
        yield prefix, node


def _validated(run: Any, key: str) -> Any:
    """The validated value at `key` (attributes of models, keys of mappings, items of lists); the raw
    mapping's value where a section is kept as a plain mapping (a stage's overlays)."""
    node = run
    for part in key.split("."):
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list | tuple):
            node = node[int(part)] if part.isdigit() and int(part) < len(node) else None
        else:
            node = getattr(node, part, None)
    return node
