"""How a stage's overrides apply to a root section (`stages.<s>.hardware` onto `hardware`, `stages.<s>.eval`
onto `eval`): key by key, except that a nested section naming another registry entry or kind replaces
the root one, since its fields belong to a different schema (e.g. an eval stage switching
`engine: {name: hf, ...}` where the root eval uses SGLang)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_DISCRIMINATORS = ("name", "kind")


def overlay(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `top` applied: nested mappings merge key by key unless they switch entry."""
    merged = dict(base)
    for key, value in top.items():
        below = merged.get(key)
        if isinstance(value, Mapping) and isinstance(below, Mapping) and not _switches(below, value):
            merged[key] = overlay(below, value)
        else:
            merged[key] = dict(value) if isinstance(value, Mapping) else value
    return merged


def _switches(base: Mapping[str, Any], top: Mapping[str, Any]) -> bool:
    return any(d in top and d in base and top[d] != base[d] for d in _DISCRIMINATORS)
