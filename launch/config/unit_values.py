"""A number typed with its unit (`hardware.gpu_memory_gib=80GiB`, `executor.timeout_s=2h`) for a field whose
name carries the unit: the number the field takes, read in the field's own unit. Imported on an error's
path only (`launch.config.schema_errors`)."""

from __future__ import annotations

import re

# What one of each unit is, per dimension, in that dimension's base unit (bytes, seconds). A field's unit
# is the last `_` part of its name; the units typed are matched without regard to case.
_UNITS: dict[str, tuple[str, float]] = {
    "b": ("bytes", 1),
    "kb": ("bytes", 1e3),
    "gb": ("bytes", 1e9),
    "tb": ("bytes", 1e12),
    "kib": ("bytes", 2**10),
    "mib": ("bytes", 2**20),
    "gib": ("bytes", 2**30),
    "tib": ("bytes", 2**40),
    # Kubernetes' binary suffixes (`80Gi`)
    "ki": ("bytes", 2**10),
    "mi": ("bytes", 2**20),
    "gi": ("bytes", 2**30),
    "ti": ("bytes", 2**40),
    "ms": ("seconds", 1e-3),
    "s": ("seconds", 1),
    "sec": ("seconds", 1),
    "secs": ("seconds", 1),
    "seconds": ("seconds", 1),
    "m": ("seconds", 60),
    "min": ("seconds", 60),
    "mins": ("seconds", 60),
    "minutes": ("seconds", 60),
    "h": ("seconds", 3600),
    "hours": ("seconds", 3600),
}
# `mb` is read as MB by some tools and as MiB by others: a field named `_mb` takes a number typed in `MB`
# as it is, and one typed in another unit is not converted (which of the two it means is the field's).
_SAME_ONLY = frozenset({"mb"})
# A letter alone (`80G`, SLURM's and Docker's memory sizes) is read as 1000s by some tools and 1024s by
# others: it is the field's own unit when that is one of its readings (`gpu_memory_gib=80G` is 80), and
# converted to none.
_EITHER = {"k": frozenset({"kb", "kib"}), "g": frozenset({"gb", "gib"}), "t": frozenset({"tb", "tib"})}
_TYPED = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]+)\s*")


def in_field_unit(key: str, typed: object, *, whole: bool) -> tuple[float | int, str] | None:
    """The number `typed` (text: a number and a unit) is in the unit `key`'s name ends in, with that
    unit's name; None when the key names no unit, the text is no number with a unit of its dimension,
    or (`whole`: an integer field) the number is not whole."""
    field_unit = key.rpartition(".")[2].rpartition("_")[2].lower()
    match = _TYPED.fullmatch(typed) if isinstance(typed, str) else None
    if match is None or (field_unit not in _UNITS and field_unit not in _SAME_ONLY):
        return None
    number, unit = float(match.group(1)), match.group(2).lower()
    if unit == field_unit or field_unit in _EITHER.get(unit, ()):
        value = number
    elif field_unit in _SAME_ONLY or unit not in _UNITS:
        return None
    else:
        (dimension, size), (field_dimension, field_size) = _UNITS[unit], _UNITS[field_unit]
        if dimension != field_dimension:
            return None
        value = round(number * size / field_size, 6)
    if value == int(value):  # `80`, not `80.0`: the number as one would type it
        return int(value), field_unit
    return None if whole else (value, field_unit)
