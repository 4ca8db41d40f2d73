"""Whether a value is a finite real number, asked without raising.

`math.isfinite` raises OverflowError on an int past a float's range (10**400, which a world's outcome,
a reward function or a server's JSON integer can hand over), and `float()` of it does too: every check
of "a finite number" that t3rl applies to what a world, a reward or an environment server returns
asks here, so such a value is reported as the value's problem instead of crashing the check.
"""

from __future__ import annotations

import math
import numbers
from typing import Any


def finite_real(value: Any) -> bool:
    """A real number (bools and numpy scalars included, as `numbers.Real` counts them) that a float holds
    and that is neither NaN nor infinite."""
    if not isinstance(value, numbers.Real):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond a float's range
        return False


def shown(value: Any, limit: int = 80) -> str:
    """`repr(value)` cut to `limit` characters, for a message about it: the repr of an int of more than
    4300 digits (or of a list holding one) raises ValueError (Python's int-to-text limit), and that of
    a list nested thousands of levels deep RecursionError."""
    try:
        text = repr(value)
    except ValueError:
        return f"<a {type(value).__name__} holding a number too long to print>"
    except RecursionError:
        return f"<a {type(value).__name__} nested too deep to print>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


class NotFinite(ValueError):
    """A number from outside t3rl (a world's score, an engine's answer) that is no finite real number."""


def outside_real(value: Any, source: str, *, bools: bool = False) -> float:
    """`value`, a number `source` handed over (a world's reward, an environment's metric), as a float;
    raises NotFinite naming `source` for anything else. `float()` took the text '  3 ' as 3.0, 'nan',
    'inf' and '1e999' as non-finite floats, a bool as 1.0 and raised on None without naming the value's
    source. A bool is a number only where `bools` says so (a check's metric, a share of episodes): as a
    reward it is a check returned where its score was meant. numpy scalars are real numbers."""
    if _is_bool(value):
        if bools:
            return float(bool(value))
        raise NotFinite(
            f"{source} is the bool {value!r}, not a number (a check returned where a score was meant)"
        )
    if not isinstance(value, numbers.Real):
        raise NotFinite(f"{source} must be a finite number, got {type(value).__name__} {shown(value)}")
    if not finite_real(value):
        raise NotFinite(f"{source} must be a finite number, got {shown(value)}")
    return float(value)


def _is_bool(value: Any) -> bool:
    """A bool, Python's or numpy's (whose bool is no `numbers.Real`; numpy is not imported for it)."""
    kind = type(value)
    return isinstance(value, bool) or (kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_"))
