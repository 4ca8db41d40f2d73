"""A published result's pinned split (`data_sha256`) is the file t3rl's own data preparation writes now.

The verdict holds an eval's split file against the pin: a change to a world's data preparation (its
prompts, ids or order) or to the benchmark package it reads makes every eval of the shipped recipe
"not comparable: another data" without a word anywhere else. Here each seed experiment's env prepares
its data (CPU, from the installed packages) and every pinned split it writes must hash to its pin:
such a change fails here, and the pin is updated (or the declaration's note says why not) with it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from launch.checks.resolve import resolve
from t3rl_core.data import prepare_env_data
from tests.eval.test_published_verdicts import SEEDS
from tests.support.once_per_run import once_per_run


def _pinned(experiment: str) -> dict[str, str]:
    """Split → its pinned sha256, over the experiment's published results (one pin per split)."""
    published = resolve([f"+experiment={experiment}"]).run.eval.published
    pins: dict[str, set[str]] = {}
    for result in published.results if published else []:
        if result.split is not None and result.data_sha256 is not None:
            pins.setdefault(result.split, set()).add(result.data_sha256)
    assert all(len(shas) == 1 for shas in pins.values()), (
        f"{experiment}: one split pinned to two files {pins}"
    )
    return {split: shas.pop() for split, shas in pins.items()}


# Composed once for the run (each seed experiment resolved: ~0.4 s of CPU), read back by every other xdist
# worker as it collects.
PINNED = once_per_run(
    "published-pins", lambda: {experiment: pins for experiment in SEEDS if (pins := _pinned(experiment))}
)


def test_the_seed_experiments_pin_their_published_splits() -> None:
    assert "stage1_bfcl" in PINNED and "bfcl_unseen" in PINNED["stage1_bfcl"]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    """Env config → its prepared splits, each distinct env prepared once (the BFCL recipes share one)."""
    made: dict[str, dict[str, Path]] = {}
    for experiment in sorted(PINNED):
        env = resolve([f"+experiment={experiment}"]).run.env
        key = env.model_dump_json()
        if key not in made:
            made[key] = prepare_env_data(env, tmp_path_factory.mktemp("data"))
    return made


@pytest.mark.parametrize("experiment", sorted(PINNED))
def test_every_pinned_split_is_what_the_data_preparation_writes(
    experiment: str, prepared: dict[str, dict[str, Path]]
) -> None:
    written = prepared[resolve([f"+experiment={experiment}"]).run.env.model_dump_json()]
    for split, pin in PINNED[experiment].items():
        assert split in written, (
            f"{experiment}: the published split {split} is not prepared ({sorted(written)})"
        )
        sha = hashlib.sha256(written[split].read_bytes()).hexdigest()
        assert sha == pin, (
            f"{experiment}: {split}.jsonl is now {sha}, the published result pins {pin}: update data_sha256 "
            "in conf/published/ (and its comment's versions) if the change is meant"
        )
