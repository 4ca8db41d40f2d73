"""Eval kinds of round ten: an engine raising CancelledError of its own (a client library's
cancellation leaking out of a call) while nothing cancels the eval."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from t3rl_core.engines.base import Engine, Generation, GenerationContext, SamplingParams
from t3rl_core.eval import runner as eval_runner
from t3rl_core.eval.runner import run_eval
from tests.support.eval_runs import bfcl_runtime, read_records, reference_config
from tests.support.tiny_stack import bfcl_rows


class _CancelsItsThirdCall(Engine):
    """The reference engine, its third call raising CancelledError though nothing cancelled it."""

    def __init__(self, inner: Engine) -> None:
        self.inner, self.calls = inner, 0

    async def check(self) -> dict[str, Any]:
        return await self.inner.check()

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation:
        self.calls += 1
        if self.calls == 3:
            raise asyncio.CancelledError
        return await self.inner.generate(input_ids, sampling, context)


def test_an_engines_own_cancelled_error_leaves_a_record_of_its_episode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The episode vanished: 3 records of 4 tasks, and a summary saying complete, accuracy 1.0 over
    the 3 (the lost task out of the denominator). Now it is the engine's failure, recorded."""
    build = eval_runner.ENGINES.build

    class Engines:
        def build(self, config: Any, **kwargs: Any) -> Engine:
            return _CancelsItsThirdCall(build(config, **kwargs))

    monkeypatch.setattr(eval_runner, "ENGINES", Engines())
    rows = bfcl_rows(per_category=1)[:4]
    config = reference_config(concurrency=2, max_engine_failure_rate=0.5)
    summary = asyncio.run(run_eval(bfcl_runtime(), config, rows, tmp_path, show_progress=False))
    records = read_records(tmp_path)
    assert len(records) == len(rows) and summary["overall"]["tasks"] == len(rows)
    failed = [record for record in records if record["status"] != "completed"]
    assert len(failed) == 1 and failed[0]["engine_failure"]
    assert "CancelledError" in failed[0]["error"]


def test_an_eval_missing_a_record_is_not_complete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever ends an episode's task without its record (here a CancelledError out of the episode
    itself, which the eval's gather takes for a cancellation), the summary said complete over the
    tasks it had. Now complete means a record of every selected episode, and a resume plays the rest."""
    rows = bfcl_rows(per_category=1)[:3]
    play = eval_runner._run_episode
    lost: list[str] = []

    async def loses_one(runner: Any, job: Any, sampling: Any, attempt: int) -> dict[str, Any]:
        if not lost:
            lost.append(job.task_id)
            raise asyncio.CancelledError
        return await play(runner, job, sampling, attempt)

    monkeypatch.setattr(eval_runner, "_run_episode", loses_one)
    summary = asyncio.run(run_eval(bfcl_runtime(), reference_config(), rows, tmp_path, show_progress=False))
    assert len(read_records(tmp_path)) == len(rows) - 1
    assert not summary["complete"] and "1 episode(s) ended without a record" in summary["reason"]
    resumed = asyncio.run(
        run_eval(bfcl_runtime(), reference_config(), rows, tmp_path, resume=True, show_progress=False)
    )
    assert resumed["complete"] and {r["task_id"] for r in read_records(tmp_path)} >= set(lost)
