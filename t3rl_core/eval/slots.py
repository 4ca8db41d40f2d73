"""The eval's slots: `eval.concurrency` episodes at the engine at once, a few more setting up ahead.

An episode's set-up (its env, its first prompt rendered and encoded, a new tool list's first prompt in
a worker thread) used to start only once a slot was free, and the slot waited for it. Now up to
`ahead` more episodes than slots are alive: they set up while every slot is busy, and each takes its
slot at its first model call, so a freed slot goes to an episode ready to call the engine at once.
A slot is held from an episode's first model call to its end; no more than `slots` episodes are ever
past their first call. Which episode gets a freed slot: the first to ask for one, in practice the
next in the start order (t3rl_core.eval.schedule).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from t3rl_core.engines.base import Engine, Generation, GenerationContext, SamplingParams


@dataclass
class _Ticket:
    number: int  # the episode's place in the start order
    holds_slot: bool = False
    had_turn: bool = False  # the turn has moved past it (a slot taken, or its turn given up)


# The episode the running task plays (a task started inside an episode copies it, and shares its ticket).
_episode: ContextVar[_Ticket | None] = ContextVar("t3rl_eval_episode", default=None)


def ahead_for(slots: int) -> int:
    """Episodes set up ahead of a free slot: one in eight slots, at least one."""
    return max(1, slots // 8)


class Slots:
    """`async with slots.episode():` around an episode; its engine (`SlottedEngine`) takes the slot.

    Slots are taken in the order the episodes started (their set-up may end in another order: a new
    tool list's first prompt is encoded in a worker thread), so the eval keeps the planned order; an
    episode that ends (or is cancelled) before its first model call gives its turn up."""

    def __init__(self, slots: int, ahead: int) -> None:
        self._free = slots
        self._alive = asyncio.Semaphore(slots + ahead)
        self._numbers = itertools.count()
        self._turn = 0  # the number of the next episode to take a slot
        self._passed: set[int] = set()  # later numbers whose episode ended without a model call
        self._waiting: dict[int, tuple[_Ticket, asyncio.Future[None]]] = {}

    @asynccontextmanager
    async def episode(self) -> AsyncIterator[None]:
        async with self._alive:
            ticket = _Ticket(next(self._numbers))
            token = _episode.set(ticket)
            try:
                yield
            finally:
                _episode.reset(token)
                self._end(ticket)

    async def take(self) -> None:
        """The calling episode's slot, at its first model call, once every episode started before it
        has taken its own (outside an episode: none)."""
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
        elif not ticket.had_turn:
            if ticket.number == self._turn:
                self._advance()
            else:
                self._passed.add(ticket.number)
        self._wake()

    def _wake(self) -> None:
        """Free slots to the waiting episodes whose turn it is, in order."""
        while self._free > 0 and self._turn in self._waiting:
            ticket, granted = self._waiting.pop(self._turn)
            ticket.had_turn = True
            self._advance()
            if granted.cancelled():
                continue
            self._free -= 1
            ticket.holds_slot = True  # also when it is cancelled before it resumes: its end frees it
            granted.set_result(None)

    def _advance(self) -> None:
        self._turn += 1
        while self._turn in self._passed:
            self._passed.remove(self._turn)
            self._turn += 1


class SlottedEngine(Engine):
    """`engine`, each episode's first call waiting for a slot of `slots`."""

    def __init__(self, engine: Engine, slots: Slots) -> None:
        self.engine, self.slots = engine, slots

    async def check(self) -> dict[str, Any]:
        return await self.engine.check()

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation:
        await self.slots.take()
        return await self.engine.generate(input_ids, sampling, context)

    async def aclose(self) -> None:
        await self.engine.aclose()
