"""Overrides given to `t3rl run --run-dir R`, on top of the ones R was run with.

The stored list stays in order; an override of a key already there replaces that entry in place
(`lr=1e-6` then `lr=5e-7` leaves one `lr=5e-7`; a stored `+` prefix stays), an override of a new
key is appended, and `~key` drops the stored entries of that key (and is kept only when none was
there, i.e. it deletes a key of the composed config). So the user never repeats `+experiment=…`
and Hydra never sees one key twice.

A credential given literally is stored masked (`key=***`): t3rl never writes its value, so it cannot
replay it. `refuse_masked` stops a resume whose overrides would still carry the mask, before anything
runs, instead of composing `***` as the credential.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from launch.config.errors import ConfigError, Problem
from launch.config.secrets import MASK, mask_override


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


def refuse_masked(overrides: Sequence[str], run_dir: Path, command: str) -> None:
    """Raise a `ConfigError` naming every override that still holds the mask (a literal credential
    stored masked and not given again on this command line); `command` is how to re-give it
    (`t3rl run --run-dir R`)."""
    problems = [
        Problem(
            key=override_key(override),
            message=(
                "this override was given as a literal credential, which t3rl stores masked "
                f"({override}) and never writes; resuming would pass {MASK} as its value"
            ),
            source=str(run_dir / "overrides.yaml"),
            fix=(
                f"give it again: {command} {_prefix(override)}{override_key(override)}=VALUE; better, "
                f"a reference that never needs repeating: {_prefix(override)}{override_key(override)}"
                "='${oc.env:NAME}' with NAME exported"
            ),
        )
        for override in overrides
        if not override.startswith("~") and MASK in override.partition("=")[2]
    ]
    if problems:
        raise ConfigError(problems)


def _prefix(override: str) -> str:
    return override[: len(override) - len(override.lstrip("+"))]


def refuse_literals_for_children(overrides: Sequence[str]) -> None:
    """Raise a `ConfigError` naming every override that holds a literal credential, for points of a
    sweep that each run as their own launcher (`t3rl run --run-dir`), which reads the point's
    overrides.yaml, where such a value is masked."""
    problems = [
        Problem(
            key=override_key(override),
            message=(
                "a literal credential cannot reach the points of a parallel sweep: each point runs as "
                f"its own t3rl process from its overrides.yaml, where it is stored masked ({MASK})"
            ),
            source=f"override `{mask_override(override)}`",
            fix=(
                f"pass it by reference: {_prefix(override)}{override_key(override)}='${{oc.env:NAME}}' "
                "with NAME exported (or executor.max_parallel=1, which runs the points in this process)"
            ),
        )
        for override in overrides
        if MASK in mask_override(override) and MASK not in override
    ]
    if problems:
        raise ConfigError(problems)
