"""Overrides given to `t3rl run --run-dir R`, on top of the ones R was run with.

The stored list stays in order; an override of a key already there replaces that entry in place
(`lr=1e-6` then `lr=5e-7` leaves one `lr=5e-7`; a stored `+` prefix stays), an override of a new
key is appended, and `~key` drops the stored entries of that key (and is kept only when none was
there, i.e. it deletes a key of the composed config). So the user never repeats `+experiment=…`
and Hydra never sees one key twice.
"""

from __future__ import annotations

from collections.abc import Sequence


def override_key(override: str) -> str:
    """`+experiment=x` → `experiment`, `++a.b=1` → `a.b`, `~a.b` / `~a.b=1` → `a.b`."""
    return override.lstrip("+~").split("=", 1)[0].strip()


def merge_overrides(stored: Sequence[str], given: Sequence[str]) -> list[str]:
    merged = list(stored)
    for override in given:
        key = override_key(override)
        positions = [i for i, old in enumerate(merged) if override_key(old) == key]
        if override.startswith("~"):
            merged = [old for i, old in enumerate(merged) if i not in positions]
            if not positions:
                merged.append(override)
        elif positions:
            # `lr=…` replacing a stored `+lr=…` keeps the `+`: the key is still added, not overridden.
            stored_prefix = merged[positions[0]][
                : len(merged[positions[0]]) - len(merged[positions[0]].lstrip("+"))
            ]
            merged[positions[0]] = override if override.startswith("+") else stored_prefix + override
            merged = [old for i, old in enumerate(merged) if i not in positions[1:]]
        else:
            merged.append(override)
    return merged
