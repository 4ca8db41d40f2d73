"""Groups the primary config lists with `null` (nothing chosen), chosen with `group=x` or `+group=x`."""

from __future__ import annotations

OPTIONAL_GROUPS = ("experiment", "hparams_search")


def optional_group_choice(override: str) -> str:
    """`+experiment=x` → `experiment=x`: the primary config lists these groups as `null`, so Hydra wants
    a plain override, while `+group=x` is the spelling people know from Hydra's docs."""
    for group in OPTIONAL_GROUPS:
        if override.startswith(f"+{group}="):
            return override[1:]
    return override
