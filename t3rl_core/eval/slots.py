"""The eval's slots: `eval.concurrency` episodes at the engine at once, a few more setting up ahead.

An episode's set-up (its env, its first prompt rendered and encoded, a new tool list's first prompt in
a worker thread) used to start only once a slot was free, and the slot waited for it. Now up to
`ahead` more episodes than slots are alive: they set up while every slot is busy, and each takes its
slot at its first model call, so a freed slot goes to an episode ready to call the engine at once.
A slot is held from an episode's first model call to its end; no more than `slots` episodes are ever
past their first call. Which episode gets a freed slot: the next in the start order
(t3rl_core.eval.schedule), or a later one ready before it while a slot is left for it.

At the eval's start the `ahead` episodes wait until the first `slots` ones hold their slots (or have
ended): set up earlier, they would only compete with the first wave's set-ups (on the one loop, and
their new tool lists' prompts on the same two encode workers) for slots that free much later.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from t3rl_core.engines.base import Engine, Generation, GenerationContext, SamplingParams


@dataclass
class _Ticket:
    number: int  # the episode's place in the start order
    holds_slot: bool = False


# The episode the running task plays (a task started inside an episode copies it, and shares its ticket).
_episode: ContextVar[_Ticket | None] = ContextVar("t3rl_eval_episode", default=None)


def ahead_for(slots: int) -> int:
    """Episodes set up ahead of a free slot: one in eight slots, at least one."""
    return max(1, slots // 8)


class Slots:
    """`async with slots.episode():` around an episode; its engine (`SlottedEngine`) takes the slot.

    Every episode alive without a slot is owed one, in the order the episodes started: a waiting
    episode takes a free slot only when one is left for each episode started before it that still
    sets up (its set-up may end later: a new tool list's first prompt is encoded in a worker thread).
    So a freed slot goes to the next episode of the planned order, and at the eval's start (every
    slot free) an episode ready early calls the engine at once instead of waiting for the slower
    set-ups started before it. An episode that ends (or is cancelled) before its first model call
    is owed nothing more."""

    def __init__(self, slots: int, ahead: int, on_first_wave: Callable[[], None] | None = None) -> None:
        # Called once the first wave holds its slots (work started any earlier competes with its set-ups).
        self.on_first_wave = on_first_wave
        self._free = slots
        self._alive = asyncio.Semaphore(slots)
        # Let in once the first wave (the first `slots` episodes) holds its slots (module docstring).
        self._ahead, self._first_wave = ahead, slots
        self._numbers = itertools.count()
        self._owed: set[int] = set()  # numbers of the alive episodes without a slot
        self._waiting: dict[int, tuple[_Ticket, asyncio.Future[None]]] = {}

    @asynccontextmanager
    async def episode(self) -> AsyncIterator[None]:
        async with self._alive:
            ticket = _Ticket(next(self._numbers))
            self._first_wave -= 1
            self._owed.add(ticket.number)
            token = _episode.set(ticket)
            try:
                yield
            finally:
                _episode.reset(token)
                self._end(ticket)

    async def take(self) -> None:
        """The calling episode's slot, at its first model call, once a slot is free beyond those owed
        to the episodes started before it (outside an episode: none)."""
        ticket = _episode.get()
        if ticket is None or ticket.holds_slot:
            return
        granted = asyncio.get_running_loop().create_future()
        self._waiting[ticket.number] = (ticket, granted)
        self._wake()
        try:
            await granted
        finally:
            self._waiting.pop(ticket.number, None)  # cancelled while it waited

    def _end(self, ticket: _Ticket) -> None:
        if ticket.holds_slot:
            self._free += 1
        self._owed.discard(ticket.number)
        self._wake()

    def _wake(self) -> None:
        """Free slots to the waiting episodes, in start order, each keeping one free slot for every
        episode before it still owed one; the first time none is owed one, the episodes ahead start."""
        before = 0  # episodes earlier in the order, owed a slot and not given one here
        for number in sorted(self._owed):
            if before >= self._free:
                return
            waiter = self._waiting.pop(number, None)
            if waiter is None or waiter[1].cancelled():
                before += 1
                continue
            ticket, granted = waiter
            self._owed.discard(number)
            self._free -= 1
            ticket.holds_slot = True  # also when it is cancelled before it resumes: its end frees it
            granted.set_result(None)
        if self._ahead and self._first_wave <= 0 and not self._owed:
            for _ in range(self._ahead):
                self._alive.release()
            self._ahead = 0
            if self.on_first_wave is not None:
                self.on_first_wave()


class SlottedEngine(Engine):
    """`engine`, each episode's first call waiting for a slot of `slots`."""

    def __init__(self, engine: Engine, slots: Slots) -> None:
        self.engine, self.slots = engine, slots

    @property
    def answers_plain(self) -> bool:  # type: ignore[override]
        """The wrapped engine's answers, passed on as they are."""
        return getattr(self.engine, "answers_plain", False) is True

    async def check(self) -> dict[str, Any]:
        return await self.engine.check()

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation:
        await self.slots.take()
        return await self.engine.generate(input_ids, sampling, context)

    async def aclose(self) -> None:
        await self.engine.aclose()
