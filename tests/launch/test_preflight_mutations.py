"""Mutations of the shipped experiments generated from the schema (tests/support/preflight_mutations.py):
each is refused at its key with a first fix that validates when applied, or accepted with a plan whose
slime argv the option table accepts. The suite runs a fixed sample of every kind; the full run is
`python -m tests.support.preflight_mutations` (its counts are in docs/explanation/preflight.md)."""

from __future__ import annotations

from collections import defaultdict

import pytest

from tests.support.once_per_run import once_per_run
from tests.support.preflight_mutations import Mutation, judge, mutations

# Per kind of mutation, every how-many-th one the suite runs (the kinds differ in number by 20x).
_EVERY = {
    "domain": 23,
    "wrong kind": 17,
    "choice": 5,
    "wrong case": 5,
    "other choice": 5,
    "flipped": 5,
    "option": 12,
    "collision": 3,
    "reference": 3,
    "repeat": 2,
    "yaml text": 9,
    # round seven (tests/support/mutation_kinds.py): a handful of each
    "group option": 50,
    "pair": 90,
    "deleted": 40,
    "null": 50,
    "one-item list": 80,
    "quoted number": 60,
    "only item": 5,
    "scalar for section": 12,
    # round eight: a section as a one-item list
    "list for section": 12,
    # round nine: a mapping where a list, a value or a section goes; past int64; a stage deleted; a
    # letter of another script drawn as an ASCII one
    "mapping for list": 4,
    "mapping for scalar": 40,
    "mapping for section": 12,
    "beyond int64": 20,
    "deleted entry": 14,
    "look-alike": 20,
    # round ten: a boolean typed for a number (beyond int64 also as quoted text)
    "boolean for number": 40,
}


def _sample() -> list[Mutation]:
    by_kind: dict[str, list[Mutation]] = defaultdict(list)
    for mutation in mutations():
        by_kind[mutation.kind].append(mutation)
    return [m for kind, found in sorted(by_kind.items()) for m in found[:: _EVERY.get(kind, 1)]]


# Drawn once for the run (~1.4 s of CPU), read back by every other xdist worker as it collects.
SAMPLE = once_per_run("preflight-mutation-sample", _sample)


@pytest.mark.parametrize("mutation", SAMPLE, ids=[str(m) for m in SAMPLE])
def test_a_mutation_is_refused_with_a_fix_that_validates_or_accepted(mutation: Mutation) -> None:
    verdict = judge(mutation)
    assert verdict.outcome in ("refused, fix validates", "accepted"), verdict.detail


def test_the_sample_covers_every_kind() -> None:
    assert {m.kind for m in SAMPLE} == set(_EVERY)
    assert len(SAMPLE) >= 60
