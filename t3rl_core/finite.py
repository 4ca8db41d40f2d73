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
