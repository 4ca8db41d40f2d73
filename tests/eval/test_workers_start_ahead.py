"""Work an env factory can start ahead (BFCL's tool-call workers) starts once the eval's first wave
holds its slots, and the first call takes that worker instead of waiting for one of its own."""

import asyncio
from typing import Any, ClassVar

from t3rl_core.envs import bounded_calls
from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.env import BFCLEnvFactory
from t3rl_core.eval import runner
from t3rl_core.eval.slots import Slots
from tests.support.eval_runs import bfcl_runtime, reference_config
from tests.support.tiny_stack import bfcl_rows


class Counted(bounded_calls._Worker):
    started: ClassVar[list["Counted"]] = []

    def __init__(self, preload: Any) -> None:
        super().__init__(preload)
        Counted.started.append(self)


def test_the_first_call_takes_the_worker_started_ahead(monkeypatch):
    monkeypatch.setattr(bounded_calls, "_Worker", Counted)
    Counted.started = []

    async def scenario() -> list[str | None]:
        workers = bounded_calls.CallWorkers(["json"])
        workers.start_ahead()
        workers.start_ahead()  # one is starting already: no second
        try:
            return [await workers.run("json:dumps", ["x"], budget_s=60.0) for _ in range(2)]
        finally:
            workers.close()

    assert asyncio.run(scenario()) == ['"x"', '"x"']
    assert len(Counted.started) == 1
    assert Counted.started[0].process.returncode is not None  # closed with the rest


def test_a_worker_still_starting_is_killed_at_the_close(monkeypatch):
    monkeypatch.setattr(bounded_calls, "_Worker", Counted)
    Counted.started = []

    async def scenario() -> None:
        workers = bounded_calls.CallWorkers(["json"])
        workers.start_ahead()
        workers.close()
        await asyncio.sleep(0)  # the cancelled wait for `ready` ends

    asyncio.run(scenario())
    assert [worker.process.returncode is not None for worker in Counted.started] == [True]


def test_slots_call_back_once_when_the_first_wave_holds_its_slots():
    called: list[int] = []

    async def scenario() -> None:
        slots = Slots(2, ahead=1, on_first_wave=lambda: called.append(len(called)))

        async def episode() -> None:
            async with slots.episode():
                await slots.take()
                await asyncio.sleep(0)

        await asyncio.gather(*(episode() for _ in range(5)))

    asyncio.run(scenario())
    assert called == [0]


def test_the_eval_starts_the_bfcl_factory_s_worker_ahead(tmp_path, monkeypatch):
    ahead: list[int] = []
    original = BFCLEnvFactory.start_ahead

    def start_ahead(self: BFCLEnvFactory) -> None:
        ahead.append(len(ahead))
        original(self)

    monkeypatch.setattr(BFCLEnvFactory, "start_ahead", start_ahead)
    monkeypatch.setattr(BFCLEnvConfig, "PURE_CALL_BUDGET_S", None)  # no worker process in this test
    config = reference_config(2, engine={"name": "reference", "latency_s": 0.002})
    asyncio.run(runner.run_eval(bfcl_runtime(), config, bfcl_rows(per_category=1)[:4], tmp_path))
    assert ahead == [0]
