"""Whether a value is a finite real number, asked without raising.

`math.isfinite` raises OverflowError on an int past a float's range (10**400, which a world's outcome,
a reward function or a server's JSON integer can hand over), and `float()` of it does too: every check
of "a finite number" that t3rl applies to what a world, a reward or an environment server returns
asks here, so such a value is reported as the value's problem instead of crashing the check.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
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


class MissingScore(NotFinite):
    """A world's scorer (tau2's evaluator, bfcl-eval's checkers, a math grader) answered no score where
    one was due: the key missing, None, NaN, a text, a bool. Raised, it is the episode's failure
    (recorded with its task, never trained on); read with `or 0.0` it was a wrong answer, and read
    with bool() a NaN was a right one."""


def scored(answer: Mapping[str, Any], key: str, source: str, *, share: bool = True) -> float:
    """`answer[key]`, the score `source` (a scorer, its task named) gave, as a float; MissingScore naming
    both for anything else, and for a `share` outside [0, 1]. The one reading of a scorer's score:
    a missing score is never a 0 or a 1."""
    if not isinstance(answer, Mapping) or key not in answer:
        got = f"keys {sorted(map(str, answer))[:8]}" if isinstance(answer, Mapping) else shown(answer)
        raise MissingScore(f"{source} gave no {key!r} ({got}): the score is missing, not 0")
    value = as_score(answer[key], f"{source}: {key!r}")
    if share and not 0.0 <= value <= 1.0:
        raise MissingScore(f"{source}: {key!r} must be a share in [0, 1], got {shown(answer[key])}")
    return value


def as_score(value: Any, source: str) -> float:
    """`value`, a score `source` gave, as a float (`outside_real`); MissingScore for anything else."""
    try:
        return outside_real(value, source)
    except NotFinite as exc:
        raise MissingScore(str(exc)) from None


def verdict_flag(answer: Mapping[str, Any], key: str, source: str) -> bool:
    """`answer[key]`, a pass/fail verdict `source` gave, which must be a bool (Python's or numpy's):
    missing, None, NaN (true to bool()) or the text 'False' (true too) is MissingScore naming both."""
    value = answer.get(key, _ABSENT) if isinstance(answer, Mapping) else _ABSENT
    if _is_bool(value):
        return bool(value)
    got = "nothing" if value is _ABSENT else f"{type(value).__name__} {shown(value)}"
    raise MissingScore(f"{source}: {key!r} must be true or false, got {got}: the verdict is missing")


_ABSENT = object()
