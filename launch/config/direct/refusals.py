"""Hydra's Problem for an override the direct composition found Refused (`overrides.Refused`): a key the
config lacks, or `+` of one it has. The place the key meets the config is found in the boxed tree, as
`launch.config.compose._override_problem` finds it with OmegaConf (the deepest mapping the key's path
reaches), and worded by `launch.config.key_refusals`, the words both compositions share.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from launch.config.direct import search_files
from launch.config.direct.nodes import plain
from launch.config.direct.overrides import Override
from launch.config.direct.unsupported import Unsupported
from launch.config.errors import Problem
from launch.config.key_refusals import added_again, unknown_key
from launch.config.override_fixes import nothing_to_delete


def refusal(config: dict[str, Any], override: Override) -> Problem:
    """The problem of `override` on the boxed `config` as composed so far."""
    parts = override.key.split(".")
    node = config
    depth = 0
    while depth < len(parts) - 1 and parts[depth] in node:
        node = node[parts[depth]]  # a mapping: `apply` refuses only below mappings
        depth += 1
    parent, leaf = ".".join(parts[:depth]), parts[depth]
    if override.add:
        return added_again(override.key, override.text)
    if override.delete:
        return nothing_to_delete(override.key, override.text, list(node))
    assert leaf not in node  # the first level the config lacks
    composed = plain(config)
    return unknown_key(
        override.key,
        override.text,
        override.value,
        parent,
        node,
        composed,
        _group_choice,
        search_files.option_kinds,
    )


def _group_choice(name: str, value: object, keys: Collection[str]) -> str | None:
    """`launch.config.compose.group_choice` (shipped groups alone, as it reads them) without Hydra."""
    from launch.config.group_names import nearest_group_choice  # lazy: only a top-level key refused

    groups = search_files.groups(())
    if groups is None:
        raise Unsupported("groups the direct listing leaves to Hydra")

    def options(group: str) -> list[str]:
        found = search_files.group_options(group, ())
        if found is None:
            raise Unsupported(f"options of {group} the direct listing leaves to Hydra")
        return found

    return nearest_group_choice(name, value, keys, groups, options)
