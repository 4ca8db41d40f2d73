"""A model's call of a stateless BFCL class runs in a worker process stopped past its budget: bfcl-eval's
`power(10, 10**9)` (one big-integer operation in C, which holds the GIL for minutes) used to stall the
event loop and every episode on it; now the call gets an error text and the other episodes go on."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.env import BFCLEnv, BFCLEnvFactory
from t3rl_core.envs.bfcl.world import ERROR_PREFIX, World, stateless_modules
from t3rl_core.envs.bounded_calls import CallWorkers
from t3rl_core.types import ToolCall, ToolCallAction

_HOSTILE = ToolCall("power", {"base": 10, "exponent": 10**9})


def _budget(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    monkeypatch.setattr(BFCLEnvConfig, "PURE_CALL_BUDGET_S", seconds)


@pytest.fixture
def math_row(bfcl_rows: list[dict[str, Any]]) -> dict[str, Any]:
    return next(r for r in bfcl_rows if "MathAPI" in r["metadata"]["bfcl_task"]["involved_classes"])


async def _started(factory: BFCLEnvFactory, row: dict[str, Any]) -> BFCLEnv:
    env = factory(row, "eval")
    await env.reset()
    return env


async def _results(env: BFCLEnv, *calls: ToolCall) -> list[str]:
    transition = await env.step(ToolCallAction(calls=calls, text=""))
    return [str(message["content"]) for message in transition.messages]


def test_a_call_past_its_budget_is_the_calls_error(monkeypatch: pytest.MonkeyPatch, math_row) -> None:
    _budget(monkeypatch, 1.0)
    factory = BFCLEnvFactory(BFCLEnvConfig())

    async def play() -> list[str]:
        try:
            env = await _started(factory, math_row)
            return await _results(env, _HOSTILE, ToolCall("add", {"a": 2, "b": 3}))
        finally:
            await factory.aclose()

    hostile, after = asyncio.run(play())
    assert hostile == f"{ERROR_PREFIX}power ran past its 1 s budget and was stopped"
    assert after == '{"result": 5}'  # the next call gets a fresh worker


def test_other_episodes_go_on_while_a_call_runs(monkeypatch: pytest.MonkeyPatch, math_row) -> None:
    """No duration asserted: with a budget of minutes, the hostile call is still running when two
    other episodes (a file-system call on the loop, a math call in a second worker) have finished."""
    _budget(monkeypatch, 600.0)
    factory = BFCLEnvFactory(BFCLEnvConfig())

    async def play() -> tuple[bool, list[str], list[str]]:
        try:
            hostile_env, math_env, files_env = [await _started(factory, math_row) for _ in range(3)]
            hostile = asyncio.create_task(_results(hostile_env, _HOSTILE))
            await asyncio.sleep(0)  # the hostile call is sent to its worker
            files = await _results(files_env, ToolCall("pwd", {}))
            math = await _results(math_env, ToolCall("add", {"a": 2, "b": 3}))
            running = not hostile.done()
            hostile.cancel()  # an episode cancelled mid-call kills its worker
            with pytest.raises(asyncio.CancelledError):
                await hostile
            return running, files, math
        finally:
            await factory.aclose()

    running, files, math = asyncio.run(play())
    assert running
    assert len(files) == 1 and not files[0].startswith(ERROR_PREFIX)
    assert math == ['{"result": 5}']


_NUMBER = st.one_of(st.integers(-(10**6), 10**6), st.floats(-1e6, 1e6, allow_nan=False), st.text(max_size=4))


@pytest.fixture(scope="module")
def workers() -> Iterator[CallWorkers]:
    pool = CallWorkers(stateless_modules(), size=1)
    yield pool
    pool.close()


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(sorted(World({}, ["MathAPI"], False).methods)), a=_NUMBER, b=_NUMBER)
def test_worker_results_are_the_worlds(workers: CallWorkers, name: str, a: Any, b: Any) -> None:
    """A call through a worker returns the text the world's own executor gives, errors included."""
    world = World({}, ["MathAPI"], False)
    call = ToolCall(name, {"a": a, "b": b})
    pure = world.pure_call(call)
    assert pure is not None
    assert asyncio.run(workers.run(*pure, 600.0)) == world.execute(call)


def test_calls_a_worker_cannot_receive_unchanged_stay_on_the_loop() -> None:
    world = World({}, ["MathAPI", "GorillaFileSystem"], False)
    assert world.pure_call(ToolCall("add", {"a": (1,), "b": 2})) is None  # a tuple would become a list
    assert world.pure_call(ToolCall("add", {"a": float("nan"), "b": 2})) is None
    assert world.pure_call(ToolCall("ls", {})) is None  # a stateful class's
    assert world.pure_call(ToolCall("add", {"a": 1, "b": 2})) is not None


def test_closing_signals_every_worker_before_waiting_for_any() -> None:
    # Two workers' exits overlap: each is sent its kill before the first one is waited for.
    events: list[str] = []

    class Process:
        def __init__(self, name: str) -> None:
            self.name = name

        def kill(self) -> None:
            events.append(f"kill {self.name}")

        def wait(self) -> None:
            events.append(f"wait {self.name}")

    class Worker:
        def __init__(self, name: str) -> None:
            self.process = Process(name)

        def kill(self) -> None:
            self.process.kill()
            self.process.wait()

    workers = CallWorkers(stateless_modules())
    workers._idle.extend([Worker("a"), Worker("b")])  # type: ignore[list-item]
    workers.close()
    waits = [index for index, event in enumerate(events) if event.startswith("wait")]
    assert {"kill a", "kill b"} <= set(events[: waits[0]]) and len(waits) == 2 and not workers._idle
