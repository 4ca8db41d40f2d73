"""An experiment built on another whose defaults list puts `_self_` before it (`- _self_`, `- stage1_bfcl`,
as t3rl's own experiments start their lists): the base, merged after, replaced the experiment's own
values and put its stages after the experiment's. Validated further, the run was refused for what
followed from it ("train stage 'train' reads prepared data, but no prepare_data stage runs before it",
blamed on the base's file, with a fix adding a stage the base already has), or, with nothing else set,
ran under the base's name. One problem per experiment and base, before any other check."""

from __future__ import annotations

from pathlib import Path

from launch.config.errors import Problem
from launch.config.provenance import Provenance


def bases_merged_after(provenance: Provenance) -> list[Problem]:
    """Each experiment file whose values an experiment named in its defaults list replaced."""
    replaced: dict[tuple[str, str], list[str]] = {}
    for key, shadow in provenance.shadowed.items():
        if Path(shadow.by).parent.name == "experiment":
            replaced.setdefault((shadow.source, shadow.by), []).append(f"{key}={shadow.raw}")
    problems = []
    for (source, by), values in replaced.items():
        base = Path(by).stem
        shown = ", ".join(values[:3]) + (f" and {len(values) - 3} more" if len(values) > 3 else "")
        problems.append(
            Problem(
                key="defaults",
                message=f"{source} lists `_self_` before its base experiment `{base}`: {by}, merged after "
                f"it, replaces its own values ({shown})",
                source=source,
                fix=f"in {source}'s defaults list, put `- {base}` before `- _self_` (an experiment's own "
                "values merge where `_self_` stands)",
            )
        )
    return problems
