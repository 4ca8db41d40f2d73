"""Eval kinds of round seven: an eval stopped while it still starts its episodes (Ctrl-C: asyncio
cancels the eval's task) keeps the record of every episode that finished, and a resume verifies each
of them; a split whose rows share a task id is refused naming the id; an episode whose reward failed is
the infrastructure's, not the agent's wrong answer."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.engines.base import SamplingParams
from t3rl_core.eval import resume as resuming
from t3rl_core.eval import runner as eval_runner
from t3rl_core.eval.attribution import attribute
from t3rl_core.eval.runner import TRAJECTORIES_FILE, apply_eval_limits, plan_jobs, run_eval
from t3rl_core.rollout.failures import Failure
from t3rl_core.rollout.runner import EpisodeRunner
from tests.rollout.fakes import task
from tests.rollout.test_runner import TurnsReward, toy_runner
from tests.support.eval_runs import bfcl_runtime, read_records, reference_config
from tests.support.tiny_stack import bfcl_rows


def test_an_episode_finished_when_the_eval_is_stopped_keeps_its_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first episode ends at once (a row no world accepts) and the eval is stopped while it still
    starts the others: the stop closed the record files at once, and the finished episode, writing
    its record a moment later, met a closed file ('I/O operation on closed file', a task exception
    never retrieved): its record was lost."""
    rows = bfcl_rows(per_category=1)
    config = reference_config(concurrency=2)
    never = asyncio.Event()
    finished: list[str] = []
    evaluating: list[asyncio.Task[Any]] = []

    async def run(self: EpisodeRunner, task: Any, *args: Any, **kwargs: Any) -> Any:
        if finished:
            await never.wait()  # the others never end on their own
        finished.append(task["metadata"]["index"])
        evaluating[0].cancel()  # Ctrl-C: asyncio.run cancels the eval's task
        return self._unplayable(task, [], Failure("env", "Unplayable", "no world takes this row"))

    monkeypatch.setattr(EpisodeRunner, "run", run)

    async def main() -> None:
        evaluating.append(asyncio.current_task())  # type: ignore[arg-type]
        with pytest.raises(asyncio.CancelledError):
            await run_eval(bfcl_runtime(), config, rows, tmp_path, show_progress=False)

    asyncio.run(main())
    assert [record["task_id"] for record in read_records(tmp_path)] == finished
    settings = resuming.settings_digest(apply_eval_limits(bfcl_runtime(), config), config)
    jobs = {job.key: job.fingerprint for job in plan_jobs(rows, config, settings)}
    kept = resuming.load(tmp_path, tmp_path / TRAJECTORIES_FILE, jobs)
    # Whole and verified (neither torn nor unverified): played again only as the world's failure it is
    # (an unplayable row is the infrastructure's, which --resume plays again like the engine's).
    assert not kept.records and kept.rerun == {"infrastructure_failed": 1}


def test_rows_sharing_a_task_id_are_refused_naming_the_id() -> None:
    """The refusal said only that two rows share an id: which ones, in a split of hundreds, went unsaid."""
    rows = bfcl_rows(per_category=1)
    twin = {**rows[1], "metadata": {**rows[1]["metadata"]}}
    named = rf"1 task id\(s\) name more than one row \('{rows[1]['metadata']['index']}'\)"
    with pytest.raises(ValueError, match=named):
        plan_jobs([*rows, twin], reference_config())


def test_an_episode_whose_reward_failed_is_the_infrastructures_not_a_wrong_answer() -> None:
    """The runner records a reward that raised (or returned NaN) as the reward's failure, and the slime
    hooks leave such a sample out of training; the eval's record kept the episode's own status
    (`completed`) with reward 0.0, so a world scored by its reward (ToolRL, ReTool) counted it as the
    agent's wrong answer, attributed to the agent."""
    chat = ChatFormat.from_pretrained(shared_tokenizer_dir("qwen3"), "qwen3")
    runner = toy_runner(chat, reward=TurnsReward(fail=True))
    job = SimpleNamespace(row=task(), seed=0)
    record = asyncio.run(eval_runner._play(runner, job, SamplingParams(), {"task_id": "toy"}))
    assert record["status"] == "failed" and "reward failed: ZeroDivisionError" in record["error"]
    assert attribute(record, job.row) == {
        "party": "infrastructure",
        "kind": "crashed",
        "evidence": record["error"],
    }
