"""A group an experiment of one's own lists before the base experiment that chooses it again.

`- /model: qwen3_8b` in a user's defaults list, above `- stage1_bfcl` (whose own list has `override /model:
…`), puts model in the final defaults list twice. Hydra says "model appears more than once in the final
defaults list" and names no file, no key and no fix (t3rl printed it with an empty key and fix). The same
line after the base is "Multiple values for model" (launch.config.defaults_order.group_listed_again): both
are one mistake, an option chosen again without `override`, answered the same way: the file and its line,
`override` as the fix, after the base experiment so that it wins.
"""

from __future__ import annotations

import re
from typing import Any

from launch.config.defaults_order import _defaults_of, _is_override, chosen_files
from launch.config.errors import Problem

# Hydra's words (hydra/_internal/defaults_list.py, 1.3) for a group that two entries of the final list name.
_TWICE = r"^(?P<group>[\w/]+) appears more than once in the final defaults list"


def group_listed_twice(message: str, chosen: list[str], loader: Any) -> Problem | None:
    found = re.match(_TWICE, message)
    if found is None:
        return None
    group = found["group"]
    for file in chosen_files(chosen, loader):
        for entry in _defaults_of(file):
            target, _, option = entry.rpartition(":")
            if _is_override(entry) or target.strip().lstrip("/").partition("@")[0] != group:
                continue
            meant = f"- override /{group}: {option.strip()}"
            return Problem(
                key="defaults",
                message=f"{file} lists `{entry}` without `override`, and a config its defaults list also "
                f"chooses names config group '{group}' again: Hydra refuses the list ({message})",
                source=file,
                fix=f"in {file}'s defaults list, write `{meant}` for `- {entry}`, "
                "after the base experiment's entry (an override on the command line cannot change a file's "
                f"defaults list; for one run: {group}={option.strip()})",
            )
    return None
