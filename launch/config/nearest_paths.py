"""The key path nearest an unknown nested key, judged as a whole: `trackng.project.name=x` (a forced add,
`++`, or a plain set) meant `tracking.project`.

The other guesses read one level at a time (the misspelt level against its siblings, the last name against
every key's last name); a typed path whose levels are each a little off, or one level too deep, found none
of them and got the section's keys listed (for `++`, a drop). Here every leaf of the composed config is
compared with the typed path as one string, and the nearest that takes the value is offered: a fix that
validates when applied (the value's own checks aside), or none.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

# A path's spelling must be this close (difflib's ratio) to be offered: `trackng.project.name` and
# `tracking.project` are 0.86 apart, `some.unknown.nested` and any key of a run below 0.6.
_CUTOFF = 0.75


def nearest_path(typed: str, value: Any, root: Mapping[str, Any], unknown: str) -> str | None:
    """The leaf key of `root` nearest the dotted `typed` that takes `value`, or None; `unknown`: the level
    of `typed` the config lacks (what a `++` merged below it is no place to offer)."""
    from launch.config.guess_values import takes  # lazy: the schema (pydantic), only on an error's path
    from launch.config.misplaced_keys import _leaf_keys

    leaves = [leaf for leaf in _leaf_keys(root, "") if not f"{leaf}.".startswith(f"{unknown}.")]
    for leaf in difflib.get_close_matches(typed, leaves, n=5, cutoff=_CUTOFF):
        if not isinstance(value, Mapping) and takes(leaf, value, root):
            return leaf
    return None
