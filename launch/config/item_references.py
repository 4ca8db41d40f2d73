"""A field that names an item of a list beside it (`NamesItem`: `eval.published.target` is one of
`eval.published.results`' labels) and names none.

The two are often set by two files: an experiment writes its own target, a `published` option the results
(`+published=retool` beside stage1_bfcl's `target: T3RL stage 1`). The error was the section's model
validator, at `eval.published` with the whole section quoted back and the section dropped as the fix. Now it
is the reference's: both keys and where each was set are named, the one set last is blamed, and the fix keeps
what was typed last (the results chosen stay, for reference, with no target; a label typed gets its nearest).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from launch.config.errors import Problem, did_you_mean
from launch.config.fixes import assign, quoted
from launch.config.override_fixes import shell_word
from launch.config.provenance import Provenance
from t3rl_core.fields import NamesNothing


def names_nothing(
    cause: NamesNothing, key: str, value: Any, provenance: Provenance, root: Mapping[str, Any]
) -> Problem:
    parent = key.rpartition(".")[0]
    items = f"{parent}.{cause.other}" if parent else cause.other
    names = [str(n) for n in cause.names]
    message = (
        f"{key} {value!r} (set in {provenance.source(key)}) names none of the {cause.attr}s of {items} "
        f"(set in {provenance.source(items)}): {names}"
    )
    unset = f"set {key}=null"
    if provenance.order(items) > provenance.order(key):
        # the list was replaced after the reference was written: the list typed stays, the reference goes
        chosen = re.search(r"override `([^`]+)`", provenance.source(items))
        undo = f"; or drop `{chosen[1]}`" if chosen else ""
        return Problem(key, message, provenance.source(items), f"{unset} (the {cause.other} stay){undo}")
    near = did_you_mean(str(value), names)
    named = (
        f"set {shell_word(assign(root, key, quoted(near)))} (the nearest {cause.attr}); or " if near else ""
    )
    return Problem(key, message, provenance.source(key), f"{named}{unset}")
