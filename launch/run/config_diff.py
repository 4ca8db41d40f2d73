"""Differences between two configs, one line per changed key (for `t3rl plan|run --run-dir`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

_MISSING = object()


def config_changes(
    old_config: Any, new_config: Any, limit: int = 40, where: Callable[[str], str] | None = None
) -> list[str]:
    """`key: old → new` per leaf that differs (`+ key: v` added, `- key: v` removed), at most `limit`;
    each followed by `  (set in: …)` when `where(key)` names the file or override that set it now. The
    configs as read from config.yaml (the record's through `record_files.read_yaml`: a file damaged
    into nesting too deep to walk is refused there)."""
    old, new = flatten(old_config or {}), flatten(new_config or {})
    lines = []
    for key in sorted(old.keys() | new.keys()):
        before, after = old.get(key, _MISSING), new.get(key, _MISSING)
        if before == after:
            continue
        if before is _MISSING:
            lines.append(f"+ {key}: {_show(after)}")
        elif after is _MISSING:
            lines.append(f"- {key}: {_show(before)}")
        else:
            lines.append(f"{key}: {_show(before)} → {_show(after)}")
        source = where(key) if where is not None and after is not _MISSING else ""
        if source:
            lines[-1] += f"  (set in: {source})"
    if len(lines) > limit:
        lines = [*lines[:limit], f"… and {len(lines) - limit} more"]
    return lines


def flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    """A nested config as dotted keys → leaf values (an empty mapping is a leaf)."""
    if isinstance(node, dict) and node:
        flat: dict[str, Any] = {}
        for key, value in node.items():
            flat.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: node}


def _show(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    text = text.removesuffix("\n...").removesuffix("...").strip()
    return text if len(text) <= 80 else text[:77] + "…"
