"""Episodes set up ahead of a free slot and take it at their first model call: never more than `slots`
past their first call, and a freed slot goes to an episode already set up."""

import asyncio
import time
from typing import Any

from t3rl_core.engines.base import Engine, Generation, GenerationContext, SamplingParams
from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.eval import resume as resuming
from t3rl_core.eval import runner
from t3rl_core.eval.slots import Slots, SlottedEngine, _episode
from tests.support.eval_runs import bfcl_runtime, read_records, reference_config
from tests.support.tiny_stack import bfcl_rows


class Gate(Engine):
    """Answers a call once the test lets it; counts the episodes at the engine."""

    def __init__(self) -> None:
        self.waiting: list[asyncio.Future[None]] = []

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation:
        answer = asyncio.get_running_loop().create_future()
        self.waiting.append(answer)
        await answer
        return Generation([1], [0.0], "stop")


def test_a_freed_slot_goes_to_an_episode_set_up_while_every_slot_was_busy():
    async def scenario() -> tuple[list[str], list[int]]:
        gate, slots = Gate(), Slots(2, ahead=1)
        engine = SlottedEngine(gate, slots)
        events: list[str] = []
        past_first_call: list[int] = []
        in_call: set[int] = set()

        async def episode(number: int) -> None:
            async with slots.episode():
                events.append(f"set-up {number}")
                for _ in range(2):
                    await engine.generate([number], SamplingParams())
                    in_call.add(number)
                    past_first_call.append(len(in_call))
                in_call.discard(number)
                events.append(f"end {number}")

        tasks = [asyncio.create_task(episode(number)) for number in range(5)]
        while not all(task.done() for task in tasks):
            await asyncio.sleep(0)
            if gate.waiting:
                gate.waiting.pop(0).set_result(None)
        await asyncio.gather(*tasks)
        await engine.aclose()
        return events, past_first_call

    events, past_first_call = asyncio.run(scenario())
    # Episodes 0 and 1 hold the slots; episode 2 sets up before either ends, 3 only once one has.
    assert events.index("set-up 2") < events.index("end 0")
    assert events.index("set-up 3") > min(events.index("end 0"), events.index("end 1"))
    assert max(past_first_call) == 2 and sorted(e for e in events if e.startswith("end")) == [
        f"end {n}" for n in range(5)
    ]


def test_at_the_start_the_episodes_ahead_wait_for_the_first_wave_to_hold_its_slots():
    async def scenario() -> tuple[list[int], list[int]]:
        gate, slots = Gate(), Slots(3, ahead=2)
        engine = SlottedEngine(gate, slots)
        set_up: list[int] = []
        ready = [asyncio.Event() for _ in range(6)]

        async def episode(number: int) -> None:
            async with slots.episode():
                set_up.append(number)
                await ready[number].wait()  # its set-up
                for _ in range(2):
                    await engine.generate([number], SamplingParams())

        async def settle() -> None:
            for _ in range(20):
                await asyncio.sleep(0)

        tasks = [asyncio.create_task(episode(number)) for number in range(6)]
        await settle()
        first_wave = list(set_up)
        for number in (0, 1, 2):
            ready[number].set()
        await settle()
        with_slots = list(set_up)
        for event in ready:
            event.set()
        while not all(task.done() for task in tasks):
            await asyncio.sleep(0)
            if gate.waiting:
                gate.waiting.pop(0).set_result(None)
        return first_wave, with_slots

    first_wave, with_slots = asyncio.run(scenario())
    # The first wave sets up alone; the two ahead once its three calls are at the engine.
    assert first_wave == [0, 1, 2] and with_slots == [0, 1, 2, 3, 4]


def test_outside_an_episode_a_call_takes_no_slot():
    async def call() -> Generation:
        gate = Gate()
        engine = SlottedEngine(gate, Slots(1, ahead=1))
        answer = asyncio.create_task(engine.generate([1], SamplingParams()))
        while not gate.waiting:
            await asyncio.sleep(0)
        gate.waiting.pop().set_result(None)
        return await answer

    assert asyncio.run(call()).finish_reason == "stop"


def test_the_eval_sets_the_next_episode_up_while_the_slot_is_busy(tmp_path, monkeypatch):
    events: list[str] = []
    started, write = runner._run_episode, resuming.write

    async def run_episode(engine_runner: Any, job: Any, *args: Any) -> dict[str, Any]:
        events.append(f"start {job.task_id}")
        record = await started(engine_runner, job, *args)
        events.append(f"end {job.task_id}")
        return record

    def written(sink: Any, index: Any, key: Any, *args: Any) -> None:
        events.append(f"written {key[0]}")
        write(sink, index, key, *args)

    monkeypatch.setattr(runner, "_run_episode", run_episode)
    monkeypatch.setattr(resuming, "write", written)
    rows = bfcl_rows(per_category=1)[:3]
    # An engine call that takes time: the episode set up ahead does so while the first one waits on it.
    config = reference_config(1, engine={"name": "reference", "latency_s": 0.005})
    asyncio.run(runner.run_eval(bfcl_runtime(), config, rows, tmp_path, show_progress=False))
    order = [record["task_id"] for record in read_records(tmp_path)]
    # One slot: the second episode starts before the first one ends, the third once it has.
    assert events.index(f"start {order[1]}") < events.index(f"end {order[0]}")
    assert events.index(f"start {order[2]}") > events.index(f"end {order[0]}")
    assert all(record["success"] for record in read_records(tmp_path))


def test_a_freed_slot_takes_its_next_call_before_the_last_record_is_written(tmp_path, monkeypatch):
    events: list[str] = []
    waiting: list[int] = []  # episodes (by start number) that waited for a slot
    write, generate, take = resuming.write, ReferenceEngine.generate, Slots.take

    def written(sink: Any, index: Any, key: Any, *args: Any) -> None:
        events.append("written")
        write(sink, index, key, *args)

    async def noted_take(self: Slots) -> None:
        ticket = _episode.get()
        if ticket is not None and not ticket.holds_slot:
            waiting.append(ticket.number)
        await take(self)

    async def call(engine: Any, input_ids: Any, sampling: Any, context: Any = None) -> Any:
        ticket = _episode.get()
        assert ticket is not None
        events.append(f"call {ticket.number}")  # the call has its slot: it is at the engine
        deadline = time.monotonic() + 60.0  # the first episode's calls wait for the second to wait
        while ticket.number == 0 and 1 not in waiting and time.monotonic() < deadline:
            await asyncio.sleep(0.001)
        return await generate(engine, input_ids, sampling, context)

    monkeypatch.setattr(resuming, "write", written)
    monkeypatch.setattr(Slots, "take", noted_take)
    monkeypatch.setattr(ReferenceEngine, "generate", call)
    # Two episodes of one task and one slot: the second sets up and waits for the slot.
    config = reference_config(1, samples=2)
    asyncio.run(
        runner.run_eval(bfcl_runtime(), config, bfcl_rows(per_category=1)[:1], tmp_path, show_progress=False)
    )
    # The second episode's first call comes before the first episode's record is written.
    assert 1 in waiting and events.index("call 1") < events.index("written")
    assert len(read_records(tmp_path)) == 2 and all(record["success"] for record in read_records(tmp_path))


def test_slots_go_in_start_order_a_turn_is_given_up_and_a_cancelled_waiter_frees_nothing_it_lacks():
    async def scenario() -> tuple[list[str], int]:
        gate, slots = Gate(), Slots(1, ahead=4)
        engine = SlottedEngine(gate, slots)
        events: list[str] = []
        may_call = {number: asyncio.Event() for number in range(-1, 4)}
        may_call[-1].set()  # the first wave: it holds the slot while the four ahead set up

        async def episode(number: int, calls: int) -> None:
            async with slots.episode():
                await may_call[number].wait()  # its set-up
                for _ in range(calls):
                    await engine.generate([number], SamplingParams())
                events.append(f"end {number}")

        async def settle() -> None:
            for _ in range(20):
                await asyncio.sleep(0)

        tasks = [asyncio.create_task(episode(n, calls)) for n, calls in enumerate([1, 1, 0, 1, 1], -1)]
        await settle()
        may_call[3].set()  # the last started is ready first: it waits for the three before it
        may_call[2].set()
        await settle()
        tasks[3].cancel()  # episode 2, waiting for its turn
        may_call[1].set()  # no model call: its turn passes on
        await settle()
        gate.waiting.pop().set_result(None)  # the first wave's episode ends: its slot is free
        await settle()
        assert not gate.waiting and events == ["end 1", "end -1"]
        may_call[0].set()
        while not all(task.done() for task in tasks):
            await asyncio.sleep(0)
            if gate.waiting:
                gate.waiting.pop(0).set_result(None)
        await asyncio.gather(*tasks, return_exceptions=True)
        return events, slots._free

    events, free = asyncio.run(scenario())
    assert events == ["end 1", "end -1", "end 0", "end 3"] and free == 1


def test_a_ready_episode_takes_a_spare_slot_before_slower_set_ups_started_before_it():
    """At the start every slot is free: an episode ready early calls the engine at once, as long as a
    slot is left for each episode started before it that still sets up (they never wait for it)."""

    async def scenario() -> list[str]:
        gate, slots = Gate(), Slots(2, ahead=1)
        engine = SlottedEngine(gate, slots)
        events: list[str] = []
        may_call = {number: asyncio.Event() for number in range(3)}

        async def episode(number: int) -> None:
            async with slots.episode():
                await may_call[number].wait()  # its set-up
                await engine.generate([number], SamplingParams())
                events.append(f"end {number}")

        async def settle() -> None:
            for _ in range(20):
                await asyncio.sleep(0)

        tasks = [asyncio.create_task(episode(number)) for number in range(3)]
        await settle()
        may_call[1].set()  # one slot is spare beside the one owed to episode 0: episode 1 takes it
        may_call[2].set()  # the other is owed to episode 0, still setting up: episode 2 waits
        await settle()
        events.append(f"at the engine {len(gate.waiting)}")
        gate.waiting.pop().set_result(None)
        await settle()
        may_call[0].set()
        while not all(task.done() for task in tasks):
            await asyncio.sleep(0)
            if gate.waiting:
                gate.waiting.pop(0).set_result(None)
        await asyncio.gather(*tasks)
        return events

    events = asyncio.run(scenario())
    assert events[:2] == ["at the engine 1", "end 1"] and sorted(events[2:]) == ["end 0", "end 2"]
