"""Fix text as an override the user can paste: `key=value`, or `+key=value` when the key is valid but
absent from the composed config (Hydra refuses to set a key that is not there without '+')."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def present(data: Mapping[str, Any], key: str) -> bool:
    """True when the dotted key exists in the composed config."""
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def assign(data: Mapping[str, Any], key: str, value: object) -> str:
    """`key=value`, with '+' when the key is not in the composed config."""
    return f"{'' if present(data, key) else '+'}{key}={value}"
