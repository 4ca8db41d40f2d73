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

All slots start at once, and an episode's set-up is slowest when it is the first of its tool list: the
prompt's head (the system prompt with the tools, ~15k characters) is rendered and encoded, and the
list's action parser built. Given a `group` per row (`tool_names`: equal tool lists, equal groups), the
first job of each sequence is instead one of the group that the most sequences hold (a greedy cover),
the rest of the sequence longest first: its total, and so the plan's end, is unchanged. On the 300
BFCL test tasks and 32 slots the first wave needs 4 tool lists instead of 24; the others come in as
the slots free, one at a time.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable


@runtime_checkable
class KnowsEpisodeLength(Protocol):
    """An env factory that can tell how many model calls a row's episode takes (its gold play)."""

    def expected_model_calls(self, task: Mapping[str, Any]) -> int | None: ...


class HasRow(Protocol):
    @property
    def row(self) -> Mapping[str, Any]: ...


Job = TypeVar("Job", bound=HasRow)


def start_order(
    jobs: list[Job],
    factory: object,
    slots: int,
    group: Callable[[Mapping[str, Any]], Hashable] | None = None,
) -> list[Job]:
    """`jobs` in the order their planned start on `slots` slots (`pack`); the plan's order when the
    factory cannot tell any episode's length. A job whose length it cannot tell counts as the mean of
    the others. With `group`, each slot's first job is of a group many slots share (module docstring)."""
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
    groups = None if group is None else [group(job.row) for job in jobs]
    return [jobs[i] for i in planned_order(lengths, slots, groups)]


def tool_names(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """The names of a row's tools (`metadata.tools`: OpenAI's `{"function": {"name": …}}`, a bare
    `{"name": …}`, anything else as its text): rows whose tool lists are equal have equal names (the
    converse is not needed, a group only orders the start). Read before the eval's first call: a list
    of OpenAI tools in one comprehension (the 300 BFCL rows' 8,388 tools: ~1 ms, where each tool's
    checks and `str` took 5.9 ms, and a generator 3.4 ms), any other list tool by tool."""
    tools = (row.get("metadata") or {}).get("tools") or ()
    try:
        return tuple([tool["function"]["name"] for tool in tools])
    except (KeyError, TypeError, IndexError):
        return _any_tool_names(tools)


def _any_tool_names(tools: Any) -> tuple[str, ...]:
    names = []
    for tool in tools:
        if isinstance(tool, dict):
            function = tool.get("function")
            names.append(str((function if isinstance(function, dict) else tool).get("name")))
        else:
            names.append(str(tool))
    return tuple(names)


def planned_order(lengths: Sequence[int], slots: int, groups: Sequence[Hashable] | None = None) -> list[int]:
    """Indices of `lengths` by their planned start on `slots` slots (ties: the slot packed first); with
    `groups` (one per length), each slot's first job one of a group many slots share (`shared_first`)."""
    sequences = pack(lengths, slots)
    if groups is not None:
        sequences = shared_first(sequences, groups)
    starts = []
    for slot, sequence in enumerate(sequences):
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


def shared_first(sequences: list[list[int]], groups: Sequence[Hashable]) -> list[list[int]]:
    """Each sequence with its first job of the group that the most sequences not yet given one hold
    (then the next such group, until every sequence has one), the longest of it; the rest in order."""
    left = [i for i, sequence in enumerate(sequences) if sequence]
    first: dict[int, int] = {}
    while left:
        held = Counter(g for i in left for g in dict.fromkeys(groups[j] for j in sequences[i]))
        shared = held.most_common(1)[0][0]
        for i in left:
            first[i] = next((j for j in sequences[i] if groups[j] == shared), -1)
        left = [i for i in left if first[i] < 0]
    return [
        [first[i], *(j for j in sequence if j != first[i])] if sequence else []
        for i, sequence in enumerate(sequences)
    ]
