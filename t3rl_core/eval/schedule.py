"""The order an eval starts its episodes in, planned so that every slot stays busy until the last call.

The eval runs its jobs through `concurrency` slots, each freed slot taking the next job of one list.
When the env factory can tell how many model calls a row's episode takes (`expected_model_calls`),
the jobs are first packed into `slots` sequences of nearly equal total calls (first fit decreasing
into the smallest capacity that holds them all: on the 300 BFCL test tasks and 32 slots, 75 calls for
an average of 74.2, where taking the longest job first onto the slot freed first ends at 77), and the
list is the jobs in the order the plan starts them. Started that way, each freed slot takes exactly
the job the plan gave it next, so the eval ends with the plan's longest sequence; when episodes run
longer or shorter than planned, the next job still goes to the first slot free. Within a sequence the
longest job goes first, so the short ones that even out the end come last.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable


@runtime_checkable
class KnowsEpisodeLength(Protocol):
    """An env factory that can tell how many model calls a row's episode takes (its gold play)."""

    def expected_model_calls(self, task: Mapping[str, Any]) -> int | None: ...


class HasRow(Protocol):
    @property
    def row(self) -> Mapping[str, Any]: ...


Job = TypeVar("Job", bound=HasRow)


def start_order(jobs: list[Job], factory: object, slots: int) -> list[Job]:
    """`jobs` in the order their planned start on `slots` slots (`pack`); the plan's order when the
    factory cannot tell any episode's length. A job whose length it cannot tell counts as the mean of
    the others."""
    if not isinstance(factory, KnowsEpisodeLength) or len(jobs) <= 1:
        return jobs
    known: dict[int, int | None] = {}
    for job in jobs:
        if id(job.row) not in known:
            known[id(job.row)] = factory.expected_model_calls(job.row) or None
    told = [length for length in known.values() if length is not None]
    if not told:
        return jobs
    mean = round(sum(told) / len(told))
    lengths = [known[id(job.row)] or mean for job in jobs]
    return [jobs[i] for i in planned_order(lengths, slots)]


def planned_order(lengths: Sequence[int], slots: int) -> list[int]:
    """Indices of `lengths` by their planned start on `slots` slots (ties: the slot packed first)."""
    starts = []
    for slot, sequence in enumerate(pack(lengths, slots)):
        at = 0
        for index in sequence:
            starts.append((at, slot, index))
            at += lengths[index]
    return [index for _, _, index in sorted(starts)]


def pack(lengths: Sequence[int], slots: int) -> list[list[int]]:
    """Indices of `lengths` in `slots` sequences, each longest first, whose largest total is small:
    first fit decreasing into the smallest capacity (from the average up, then in steps of ~2 %) that
    holds every length."""
    slots = max(1, min(slots, len(lengths)))
    decreasing = sorted(range(len(lengths)), key=lambda index: -lengths[index])
    capacity = max(math.ceil(sum(lengths) / slots), max(lengths, default=0))
    while True:
        packed = _first_fit(lengths, decreasing, slots, capacity)
        if packed is not None:
            return packed
        capacity += max(1, capacity // 50)


def _first_fit(
    lengths: Sequence[int], decreasing: list[int], slots: int, capacity: int
) -> list[list[int]] | None:
    sequences: list[list[int]] = [[] for _ in range(slots)]
    room = [capacity] * slots
    open_slots = list(range(slots))  # slots with room left for the smallest length
    smallest = lengths[decreasing[-1]] if decreasing else 0
    for index in decreasing:
        length = lengths[index]
        slot = next((slot for slot in open_slots if room[slot] >= length), None)
        if slot is None:
            return None
        sequences[slot].append(index)
        room[slot] -= length
        if room[slot] < smallest:
            open_slots.remove(slot)
    return sequences
