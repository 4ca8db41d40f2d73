"""Retry delays for the HTTP clients (SGLang engine, SandboxFusion): exponential with full jitter.

Full jitter (a uniform draw below the exponential ceiling) spreads the retries of many episodes that
failed together — a restarting server sees them arrive over the window instead of in one burst.
"""

from __future__ import annotations

import random

_RANDOM = random.Random()


def backoff_delay(
    attempt: int, initial_s: float, max_s: float | None = None, rng: random.Random = _RANDOM
) -> float:
    """Seconds to wait before retry number `attempt` (1 = the first retry): uniform in
    [0, min(max_s, initial_s · 2^(attempt-1))]."""
    if attempt < 1:
        raise ValueError(f"attempt counts retries from 1, got {attempt}")
    ceiling = initial_s * 2 ** (attempt - 1)
    if max_s is not None:
        ceiling = min(ceiling, max_s)
    return rng.uniform(0, ceiling)
