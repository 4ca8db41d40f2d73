"""The shared retry delay: exponential ceiling, capped, full jitter."""

from __future__ import annotations

import random

import pytest

from t3rl_core.backoff import backoff_delay


def test_delays_stay_below_the_doubling_ceiling_and_the_cap() -> None:
    rng = random.Random(7)
    for attempt, ceiling in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (6, 8.0), (12, 8.0)]:
        draws = [backoff_delay(attempt, 0.5, 8.0, rng) for _ in range(300)]
        assert all(0 <= d <= ceiling for d in draws)
        # Jittered: spread over the window, not the ceiling every time.
        assert min(draws) < 0.2 * ceiling and max(draws) > 0.8 * ceiling


def test_uncapped_doubles_and_zero_initial_never_waits() -> None:
    rng = random.Random(1)
    assert max(backoff_delay(8, 1.0, rng=rng) for _ in range(200)) > 100
    assert backoff_delay(3, 0.0, rng=rng) == 0.0


def test_retries_count_from_one() -> None:
    with pytest.raises(ValueError, match="from 1"):
        backoff_delay(0, 1.0)
