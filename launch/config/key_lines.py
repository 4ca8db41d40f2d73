"""The line of a config file where a key is written, read from the file's YAML nodes: provenance keeps which
file set a key, and a message names the line too (`mine.yaml:6`), so a value a file gives in the wrong
shape (`seed: {value: 3}`) is found where it is, not searched for in the file."""

from __future__ import annotations

import functools
import os
from typing import Any

import yaml


def key_line(file: str, path: str) -> int | None:
    """The 1-based line of `path` (dotted, within the file: its package not included) in `file`, or of the
    deepest key above it the file writes; None when the file writes none of them or cannot be read."""
    try:
        stat = os.stat(file)
    except OSError:
        return None
    lines = _lines(file, stat.st_ino, stat.st_mtime_ns, stat.st_size)
    while path:
        if path in lines:
            return lines[path]
        path = path.rpartition(".")[0]
    return None


@functools.lru_cache(maxsize=64)
def _lines(file: str, inode: int, mtime_ns: int, size: int) -> dict[str, int]:
    """Dotted path → the line its key is written on (the file's stamp keys the cache)."""
    try:
        with open(file, encoding="utf-8") as handle:
            root = yaml.compose(handle.read(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    found: dict[str, int] = {}
    _walk(root, "", found)
    return found


def _walk(node: Any, path: str, found: dict[str, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and not (not path and key.value == "defaults"):
                dotted = f"{path}.{key.value}" if path else str(key.value)
                found.setdefault(dotted, key.start_mark.line + 1)
                _walk(value, dotted, found)
    elif isinstance(node, yaml.SequenceNode) and path:
        for index, item in enumerate(node.value):
            found.setdefault(f"{path}.{index}", item.start_mark.line + 1)
            _walk(item, f"{path}.{index}", found)
