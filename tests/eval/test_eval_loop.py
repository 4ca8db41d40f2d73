"""`t3rl eval`'s event loop (t3rl_core/eval/loop.py): waits end at their timeout, not a millisecond on,
I/O still wakes them, and timers never fire early."""

from __future__ import annotations

import asyncio
import select
import selectors
import socket
from pathlib import Path

import pytest

from t3rl_core.eval import evaluate as evaluating
from t3rl_core.eval import loop

pytestmark = pytest.mark.skipif(not hasattr(selectors, "EpollSelector"), reason="epoll: Linux only")


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[int], float]]:
    """The (descriptors, timeout) of every select(2) wait the loop module makes."""
    made: list[tuple[list[int], float]] = []
    real = select.select

    def recorded(readable: list[int], writable: list[int], errors: list[int], timeout: float) -> object:
        made.append((list(readable), timeout))
        return real(readable, writable, errors, timeout)

    monkeypatch.setattr(loop.select, "select", recorded)
    return made


def test_a_wait_is_for_its_exact_timeout_on_the_epoll_descriptor(
    waits: list[tuple[list[int], float]],
) -> None:
    # epoll_wait(2) takes whole milliseconds: asyncio's selector would wait 13 ms (or 14: the float
    # 0.013 rounds up again) for this; select(2) takes microseconds.
    with loop.PreciseSelector() as selector:
        assert selector.select(0.0123) == []
        assert waits == [([selector.fileno()], 0.0123)]


def test_a_ready_descriptor_ends_the_wait_and_its_event_is_returned(
    waits: list[tuple[list[int], float]],
) -> None:
    left, right = socket.socketpair()
    with left, right, loop.PreciseSelector() as selector:
        key = selector.register(left, selectors.EVENT_READ)
        right.send(b"x")
        assert selector.select(60.0) == [(key, selectors.EVENT_READ)]
        assert len(waits) == 1


def test_no_timeout_and_a_zero_one_wait_in_epoll(waits: list[tuple[list[int], float]]) -> None:
    left, right = socket.socketpair()
    with left, right, loop.PreciseSelector() as selector:
        key = selector.register(left, selectors.EVENT_READ)
        assert selector.select(0) == []
        right.send(b"x")
        assert selector.select(None) == [(key, selectors.EVENT_READ)]
        assert waits == []


def test_an_epoll_descriptor_select_cannot_take_waits_in_epoll(
    waits: list[tuple[list[int], float]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loop, "FD_SETSIZE", 0)  # as if the descriptor were above select(2)'s sets
    left, right = socket.socketpair()
    with left, right, loop.PreciseSelector() as selector:
        key = selector.register(left, selectors.EVENT_READ)
        assert selector.select(0.002) == []
        right.send(b"x")
        assert selector.select(60.0) == [(key, selectors.EVENT_READ)]
        assert waits == []


def test_timers_fire_in_order_and_never_before_they_are_due() -> None:
    async def timers() -> list[tuple[float, float]]:
        running = asyncio.get_running_loop()
        fired: list[tuple[float, float]] = []
        done = running.create_future()
        start = running.time()
        whens = [start + 0.0003 + 0.00137 * n for n in range(12)]
        for when in whens:
            running.call_at(when, lambda when=when: fired.append((when, running.time())))
        running.call_at(whens[-1], done.set_result, None)
        await done
        return fired

    fired = loop.run(timers())
    assert [when for when, _ in fired] == sorted(when for when, _ in fired)
    assert all(at >= when for when, at in fired)


def test_t3rl_eval_runs_on_this_loop(
    waits: list[tuple[list[int], float]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    class Ran(Exception):
        pass

    async def run_eval(*args: object, **kwargs: object) -> dict[str, object]:
        await asyncio.sleep(0.001)
        raise Ran

    monkeypatch.setattr(evaluating, "resolve_data", lambda data, split: data)
    monkeypatch.setattr(evaluating, "load_rows", lambda path: [{"id": "t"}])
    monkeypatch.setattr(evaluating, "select_rows", lambda rows, config: rows)
    monkeypatch.setattr(evaluating, "run_eval", run_eval)
    config = evaluating.EvalConfig.model_validate({"engine": {"name": "reference"}})
    with pytest.raises(Ran):
        evaluating.evaluate(None, config, tmp_path / "data.jsonl", tmp_path / "out", progress=False)  # type: ignore[arg-type]
    assert waits and all(timeout > 0 for _, timeout in waits)
