"""BFCL multi-turn: one decoded trajectory (calls per step per turn) → the official verdict.

The trajectory is played through `BFCLEnv` (`t3rl_core.envs.bfcl.replay.play_decoded`), so the verdict is
the environment's own: in eval mode bfcl-eval's checker semantics (state and response checks per
turn, force-termination), in train mode T3RL's progress semantics.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from t3rl_core.envs.base import Mode
from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.data import build_row, split_of_ids, system_prompt
from t3rl_core.envs.bfcl.env import BFCLEnv, BFCLTask
from t3rl_core.envs.bfcl.replay import Decoded, play_decoded
from t3rl_core.finite import scored
from t3rl_core.score.verdict import Verdict, run_sync


def bfcl_row(task_id: str, config: BFCLEnvConfig | None = None) -> dict[str, Any]:
    """The dataset row of one entry (e.g. "multi_turn_base_5"), built from its category's data only."""
    config_json = (config or BFCLEnvConfig()).model_dump_json()
    return copy.deepcopy(_row(task_id, config_json))


@lru_cache(maxsize=1024)
def _row(task_id: str, config_json: str) -> dict[str, Any]:
    # lazy: bfcl_eval, only when trajectories are scored
    from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

    config = BFCLEnvConfig.model_validate_json(config_json)
    category, _, number = task_id.rpartition("_")
    if category not in config.data.categories or not number.isdigit():
        raise ValueError(
            f"unknown BFCL task id {task_id!r}: expected <category>_<n> with a category of "
            f"{', '.join(config.data.categories)}"
        )
    entries = load_dataset_entry(category, include_prereq=False, include_language_specific_hint=False)
    entry = next((e for e in entries if e["id"] == task_id), None)
    if entry is None:
        raise ValueError(f"unknown BFCL task id {task_id!r}: not in bfcl-eval's {category} data")
    truth = next(item["ground_truth"] for item in load_ground_truth_entry(category) if item["id"] == task_id)
    split = split_of_ids(config.data).get(int(number))
    if split is None:
        raise ValueError(f"BFCL task id {task_id!r}: id {number} >= data.num_ids {config.data.num_ids}")
    return build_row(entry, truth, category, split, system_prompt(config.data.think_tags))


async def abfcl(
    decoded: Decoded,
    *,
    task_id: str | None = None,
    row: Mapping[str, Any] | None = None,
    mode: Mode = "eval",
    config: BFCLEnvConfig | None = None,
) -> Verdict:
    """Score `decoded` ([turn][step][call string], bfcl-eval's decoded form) on the entry `task_id` (or a
    prepared `row`). Steps without calls are dropped; a turn ends after its last step."""
    config = config or BFCLEnvConfig()
    if row is None:
        if task_id is None:
            raise ValueError("give task_id or row")
        row = bfcl_row(task_id, config)
    _check_shape(decoded)
    env = BFCLEnv(BFCLTask.from_row(row), config, mode)
    outcome = await play_decoded(env, decoded)
    # The world's scores read strictly (a NaN accuracy was solved to bool(), a None one failed).
    source = f"the BFCL outcome of task {env.task.id!r}"
    solved = scored(outcome, "accuracy", source) == 1.0
    progress = scored(outcome, "progress", source)
    errors = outcome["turn_errors"]
    failed_turn = None
    if not solved:
        failed_turn = next((t for t, e in enumerate(errors) if e), outcome["turns_completed"])
    details = {
        "valid": solved,
        "error_type": outcome["failure"],
        "failed_turn": failed_turn,
        "mode": mode,
        **{k: outcome[k] for k in ("progress", "turn_scores", "turn_errors", "turns_completed", "category")},
    }
    return Verdict("bfcl", outcome["task_id"], progress, solved, details)


def bfcl(
    decoded: Decoded,
    *,
    task_id: str | None = None,
    row: Mapping[str, Any] | None = None,
    mode: Mode = "eval",
    config: BFCLEnvConfig | None = None,
) -> Verdict:
    """`abfcl` from sync code (also inside a running event loop)."""
    return run_sync(abfcl(decoded, task_id=task_id, row=row, mode=mode, config=config))


def _check_shape(decoded: Any) -> None:
    ok = isinstance(decoded, list | tuple) and all(
        isinstance(turn, list | tuple)
        and all(isinstance(step, list | tuple) and all(isinstance(c, str) for c in step) for step in turn)
        for turn in decoded
    )
    if not ok:
        raise ValueError(
            "a BFCL trajectory is a list of turns, each a list of steps, each a list of call strings"
        )
