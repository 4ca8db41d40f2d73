"""A count and its noun, agreeing: `counted(1, "run")` is "1 run", `counted(3, "run")` "3 runs".

Every message that counts something says it through this module (a test scans launch/ and t3rl_core/
for an f-string putting a count before a plural noun, "1 runs in runs", and for a plural written by
hand, `f"row{'s' if n > 1 else ''}"`, which reads "0 row").
"""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and `noun`, in the plural (`plural`, or the noun with an s) unless `n` is 1."""
    return f"{n} {agreeing(n, noun, plural)}"


def agreeing(n: int, noun: str, plural: str | None = None) -> str:
    """`noun` as it agrees with a count of `n` left unsaid ("at the spaces", "the executor kinds ray,
    slurm"): the plural (`plural`, or the noun with an s) unless `n` is 1."""
    return noun if n == 1 else plural or noun + "s"
