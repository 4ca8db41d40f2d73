"""Lists declared sets (`t3rl_core.fields.Distinct`: an eval's `categories` and `pass_k`, a sandbox's paths,
modules and variables, a chat family's tokens, sbatch options, container mounts): each item once.

A repeat is never needed (a category filter keeps a row once, pass@k is reported once per k) and is
more likely a typo for another item. Every such field is found by its declaration, walking the
validated config and each eval stage's own settings; a repeat is refused with the distinct items.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from launch.checks.context import Context
from launch.checks.declared import run_fields_declaring
from launch.config.errors import Problem
from launch.config.fixes import list_override
from t3rl_core.fields import Distinct


def sets_name_each_item_once(ctx: Context) -> Iterator[Problem]:
    """A list declared a set holds each item once."""
    for key, (items, marker) in run_fields_declaring(ctx, Distinct).items():
        if not isinstance(items, list) or marker.by is not None:
            continue
        ids = [marker.identity(item) for item in items] if marker.identity else items
        repeated = [ident for i, ident in enumerate(ids) if ident in ids[:i]]
        if repeated:
            # the items as written (`~/.ssh`, not the home it validates to), each first occurrence
            written = _written(ctx.data, key, len(items)) or items
            once = [w for i, w in enumerate(written) if ids[i] not in ids[:i]]
            names = ", ".join(map(str, dict.fromkeys(repeated)))
            clashing = [str(item) for item, ident in zip(items, ids, strict=True) if ident in repeated]
            yield Problem(
                key,
                f"{key} names {names} more than once: it is a set "
                "(a repeat changes nothing, and is more likely a typo for another item)"
                if not marker.what
                else f"{key} gives the {marker.what} {names} more than once ({', '.join(clashing)}): only "
                "one of them takes effect, the others are dropped without a word",
                fix=f"set {list_override(key, once)}"
                if all(isinstance(item, str) for item in once)
                else f"set {key}=[{','.join(map(str, once))}]",
            )


def _written(data: Mapping[str, Any], key: str, length: int) -> list[Any] | None:
    """The list at `key` of the resolved config as written, when it is there with `length` items."""
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return list(node) if isinstance(node, list) and len(node) == length else None


RULES = (sets_name_each_item_once,)
