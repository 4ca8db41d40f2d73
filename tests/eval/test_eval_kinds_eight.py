"""Eval kinds of round eight: a world whose outcome holds a verdict that is no share in [0, 1] (a text, a
list, NaN, 5) is the world's failure, recorded for that episode alone; a failed episode is solved only
by its world's own verdict, never by its reward."""

from __future__ import annotations

import asyncio
import fcntl
import math
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
import yaml

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.engines.base import SamplingParams
from t3rl_core.envs.bfcl.env import BFCLEnv
from t3rl_core.eval import runner as eval_runner
from t3rl_core.eval.record_lock import RECORD_LOCK, RecordsInUse
from t3rl_core.eval.runner import run_eval
from tests.rollout.fakes import ToyEnv, task
from tests.rollout.test_runner import ToyFactory, TurnsReward, toy_runner
from tests.support.eval_runs import bfcl_runtime, read_records, reference_config
from tests.support.tiny_stack import bfcl_rows


@pytest.mark.parametrize("verdict", ["n/a", [1.0], {"solved": True}], ids=["text", "list", "mapping"])
def test_one_worlds_verdict_of_the_wrong_type_fails_that_episode_not_the_eval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verdict: Any
) -> None:
    """The eval read `float(outcome["accuracy"])` outside the episode's guard: one world reporting a
    text or a list raised out of its episode's task, and the eval stopped with every other record
    unwritten."""
    rows = bfcl_rows(per_category=1)[:4]
    broken = rows[1]["metadata"]["bfcl_task"]["id"]
    outcome = BFCLEnv.outcome

    def reported(self: BFCLEnv) -> dict[str, Any]:
        result = outcome(self)
        return result | {"accuracy": verdict} if self.task.id == broken else result

    monkeypatch.setattr(BFCLEnv, "outcome", reported)
    summary = asyncio.run(run_eval(bfcl_runtime(), reference_config(), rows, tmp_path, show_progress=False))
    records = {record["task_id"]: record for record in read_records(tmp_path)}
    assert len(records) == len(rows) and summary["complete"]
    failed = records[broken]
    assert (failed["status"], failed["success"]) == ("failed", False)
    assert "outcome accuracy must be a share in [0, 1]" in failed["error"]
    assert failed["attribution"]["party"] == "infrastructure"
    assert all(r["status"] == "completed" and r["success"] for tid, r in records.items() if tid != broken)


class _Reports(ToyEnv):
    """The toy world, reporting `accuracy` and `progress` as given."""

    verdicts: ClassVar[dict[str, Any]] = {}

    def outcome(self) -> dict[str, Any]:
        return {**super().outcome(), **self.verdicts}


class _ReportsFactory(ToyFactory):
    def __call__(self, row: dict[str, Any], mode: str) -> ToyEnv:
        self.envs.append(_Reports(row["metadata"]["questions"]))
        return self.envs[-1]


def _record(verdicts: dict[str, Any], reward: TurnsReward | None = None, env: type = _Reports) -> dict:
    chat = ChatFormat.from_pretrained(shared_tokenizer_dir("qwen3"), "qwen3")
    _Reports.verdicts = verdicts
    factory = _ReportsFactory()
    runner = toy_runner(chat, factory=factory, reward=reward)
    job = SimpleNamespace(row=task(), seed=0, task_id="toy", category="toy", sample=0, repeat=0)
    return asyncio.run(eval_runner._run_episode(runner, job, SamplingParams(), 1))


@pytest.mark.parametrize(
    "verdicts",
    [
        {"accuracy": math.nan},
        {"accuracy": 5.0},
        {"accuracy": -1},
        {"progress": math.inf},
        {"progress": "0.5"},
    ],
    ids=["nan", "above-one", "negative", "progress-inf", "progress-text"],
)
def test_a_verdict_that_is_no_share_is_the_worlds_failure(verdicts: dict[str, Any]) -> None:
    """NaN was the agent's wrong answer (success False, attributed to the agent), 5.0 a success, and a
    progress of inf or a text reached the summary's means."""
    record = _record(verdicts)
    assert record["status"] == "failed" and record["success"] is False
    assert record["attribution"]["party"] == "infrastructure"
    assert not set(verdicts) & set(record["outcome"])  # no score reads it


@pytest.mark.parametrize(
    ("verdicts", "solved"),
    [
        ({}, True),
        ({"accuracy": None}, True),
        ({"accuracy": 1}, True),
        ({"accuracy": 0.25, "progress": 1}, False),
    ],
)
def test_a_share_or_no_verdict_is_the_worlds_own(verdicts: dict[str, Any], solved: bool) -> None:
    """No verdict (absent or None): the toy reward's full 1.0 decides; a share: the world's verdict."""
    record = _record(verdicts)
    assert (record["status"], record["success"]) == ("completed", solved)


def test_a_failed_episode_is_solved_by_its_worlds_verdict_never_by_its_reward() -> None:
    """A world that raised in a step, scored 1.0 by a reward reading its partial outcome: the record
    said `failed` and `success: true` (attribution none), a crash counted as a solved task."""

    class Crashes(_Reports):
        async def step(self, action: Any) -> Any:
            raise RuntimeError("the world broke")

    class Full(TurnsReward):
        def __call__(self, inp: Any) -> Any:
            return type(super().__call__(inp))(1.0)

    class CrashFactory(ToyFactory):
        def __call__(self, row: dict[str, Any], mode: str) -> ToyEnv:
            return Crashes(row["metadata"]["questions"])

    chat = ChatFormat.from_pretrained(shared_tokenizer_dir("qwen3"), "qwen3")
    _Reports.verdicts = {}
    runner = toy_runner(chat, factory=CrashFactory(), reward=Full())
    job = SimpleNamespace(row=task(), seed=0, task_id="toy", category="toy", sample=0, repeat=0)
    record = asyncio.run(eval_runner._run_episode(runner, job, SamplingParams(), 1))
    assert (record["status"], record["reward"], record["success"]) == ("failed", 1.0, False)
    assert record["attribution"]["kind"] == "crashed"

    _Reports.verdicts = {"accuracy": 1.0}  # the world's own verdict still decides
    record = asyncio.run(eval_runner._run_episode(runner, job, SamplingParams(), 1))
    assert (record["status"], record["success"]) == ("failed", True)


# --- Two evals writing one record dir ---------------------------------------------------------------------


def test_a_second_eval_into_a_dir_another_eval_writes_is_refused_before_writing(tmp_path: Path) -> None:
    """The pipeline's eval stage (`python -m t3rl_core.eval`) locked nothing: a second eval into the dir
    of one still running truncated its trajectories.jsonl (a resume replaced it), and the first went on
    appending to a file no longer in the dir, its records lost, its summary.json overwritten."""
    rows = bfcl_rows(per_category=1)[:2]
    asyncio.run(run_eval(bfcl_runtime(), reference_config(), rows, tmp_path, show_progress=False))
    before = {name: (tmp_path / name).read_bytes() for name in ("trajectories.jsonl", "summary.json")}
    running = os.open(tmp_path / RECORD_LOCK, os.O_RDWR | os.O_CREAT)  # the first eval, still writing
    fcntl.flock(running, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        for resume in (False, True):
            with pytest.raises(RecordsInUse, match="another eval still running"):
                asyncio.run(
                    run_eval(
                        bfcl_runtime(), reference_config(), rows, tmp_path, resume=resume, show_progress=False
                    )
                )
            assert {name: (tmp_path / name).read_bytes() for name in before} == before
    finally:
        os.close(running)
    # Once it has ended (or died: the OS drops its lock), the dir is free again.
    summary = asyncio.run(
        run_eval(bfcl_runtime(), reference_config(), rows, tmp_path, resume=True, show_progress=False)
    )
    assert summary["complete"] and len(read_records(tmp_path)) == len(rows)


def test_the_eval_stage_command_names_the_dir_in_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from t3rl_core.eval import __main__ as stage

    def busy(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise RecordsInUse(f"{tmp_path} is being written by another eval still running")

    monkeypatch.setattr(stage, "evaluate", busy)
    runtime = tmp_path / "runtime.yaml"
    runtime.write_text(yaml.safe_dump({"t3rl": bfcl_runtime().model_dump(mode="json")}))
    code = stage.main(["--runtime-config", str(runtime), "--data", str(tmp_path), "--out", str(tmp_path)])
    assert code == 1


# --- Attribution of a world that is not tau2 -------------------------------------------------------------


def _eval(rows: list[dict[str, Any]], out: Path) -> dict[str, Any]:
    return asyncio.run(run_eval(bfcl_runtime(), reference_config(), rows, out, show_progress=False))


@pytest.mark.parametrize("task", ["gsm8k", ["a"], {"evaluation_criteria": "x"}, {"user_scenario": "text"}])
def test_a_task_that_is_not_tau2s_never_stops_the_eval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, task: Any
) -> None:
    """The attribution read a row's `task` as tau2's whenever the outcome had a `termination_reason`: a
    world reporting one beside a row whose `task` is a text (a verifiers dataset's column) raised
    AttributeError out of the episode's record, and the eval stopped with the others unwritten."""
    rows = bfcl_rows(per_category=1)[:3]
    rows[0] = {**rows[0], "metadata": {**rows[0]["metadata"], "task": task}}
    outcome = BFCLEnv.outcome

    def reported(self: BFCLEnv) -> dict[str, Any]:
        return outcome(self) | {"accuracy": 0.0, "termination_reason": "user_stop"}

    monkeypatch.setattr(BFCLEnv, "outcome", reported)
    summary = _eval(rows, tmp_path)
    records = read_records(tmp_path)
    assert len(records) == len(rows) and summary["complete"]
    assert all(record["attribution"]["party"] == "agent" for record in records)
