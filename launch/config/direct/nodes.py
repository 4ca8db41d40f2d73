"""Config trees as Hydra's merge builds them, in plain dicts and lists.

OmegaConf keeps each value of a mapping in a node object, and Hydra merges without copying: a node a
file brings first is placed into the composed config as it is, so that file's content and the composed
config share it, and a later override or edit that sets a value in place shows in both. Provenance
reads each file's content after composition, so it sees exactly that sharing. Here a mapping's value
is a `Box` (a scalar, shared the same way) or a dict or list (shared as objects); list items are plain
values, as OmegaConf makes fresh nodes for them when it merges lists.
"""

from __future__ import annotations

from typing import Any

from launch.config.direct.unsupported import Unsupported


class Box:
    """A scalar value of a mapping, shared by every tree it was merged into."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def boxed(value: Any) -> Any:
    """A fresh tree with every mapping's scalar in its own box (what loading a file gives)."""
    if isinstance(value, dict):
        return {k: (boxed(v) if isinstance(v, dict | list) else Box(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [boxed(v) if isinstance(v, dict | list) else v for v in value]
    return value


def plain(value: Any) -> Any:
    """The tree as plain data (a fresh copy, boxes opened)."""
    if isinstance(value, Box):
        return value.value
    if isinstance(value, dict):
        # A mapping's box opened in place: most values are boxes, and a call each was most of the
        # ~750 a composition's `plain` makes (each file's content, then the config).
        return {k: v.value if type(v) is Box else plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def copied(value: Any) -> Any:
    """A deep copy with new boxes (what embedding a file at a package makes)."""
    if isinstance(value, Box):
        return Box(value.value)
    if isinstance(value, dict):
        return {k: Box(v.value) if type(v) is Box else copied(v) for k, v in value.items()}  # as `plain`
    if isinstance(value, list):
        return [copied(v) for v in value]
    return value


def embedded(content: dict[str, Any], package: str) -> dict[str, Any]:
    """A file's content placed at its package: the content itself at the root, else a copy."""
    if not package:
        return content
    root: dict[str, Any] = {}
    node = root
    *parents, last = package.split(".")
    for part in parents:
        node[part] = node = {}
    node[last] = copied(content)
    return root


def merge(dest: dict[str, Any], src: dict[str, Any]) -> None:
    """Merge `src` into `dest` as OmegaConf merges untyped configs without copying: mappings key by
    key, a list's items replaced in place (nested containers shared), anything else replaced by
    `src`'s (shared) node."""
    for key, value in src.items():
        current = dest.get(key)
        if current is None:
            dest[key] = value
        elif isinstance(current, dict) and isinstance(value, dict):
            merge(current, value)
        elif isinstance(current, list) and isinstance(value, list):
            current[:] = value
        elif _replaced_by(current, value):
            dest[key] = value
        else:
            raise Unsupported(f"merging {type(value).__name__} into {type(current).__name__} at {key}")


def _replaced_by(current: Any, value: Any) -> bool:
    """A scalar (not an interpolation) is replaced by anything; a mapping or a list by a null."""
    if isinstance(current, Box):
        return not is_interpolation(current.value)
    return isinstance(value, Box) and value.value is None


def is_interpolation(value: Any) -> bool:
    return isinstance(value, str) and "${" in value
