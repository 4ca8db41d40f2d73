"""The standalone eval loop with real episodes: the scripted reference engine on BFCL rows."""

import asyncio
import json

import pytest

from t3rl_core.eval import runner as eval_runner
from t3rl_core.eval.config import EvalConfig
from t3rl_core.eval.metrics import summarize
from t3rl_core.eval.resume import INDEX_FILE
from t3rl_core.eval.runner import SUMMARY_FILE, TRAJECTORIES_FILE, plan_jobs, run_eval, score_of, select_rows
from tests.support.eval_runs import bfcl_runtime, count_episodes, read_records, reference_config
from tests.support.tiny_stack import bfcl_rows


@pytest.fixture(scope="module")
def rows():
    return bfcl_rows(per_category=2)


@pytest.fixture(scope="module")
def runtime():
    return bfcl_runtime()


_config = reference_config
_records = read_records


def test_selection_and_seeds(rows):
    config = _config(limit_per_category=1, categories=["multi_turn_base", "multi_turn_miss_param"], samples=3)
    kept = select_rows(rows, config)
    assert [r["metadata"]["data_source"] for r in kept] == ["multi_turn_base", "multi_turn_miss_param"]
    jobs = plan_jobs(kept, config)
    assert len(jobs) == 6 and len({j.seed for j in jobs}) == 6
    # A task's seeds depend on the task and sample only, not on what else is evaluated.
    again = plan_jobs(kept[1:], config)
    assert [j.seed for j in again] == [j.seed for j in jobs[3:]]
    assert [j.seed for j in plan_jobs(kept, _config(samples=3, seed=1))] != [j.seed for j in jobs]
    with pytest.raises(ValueError, match="unique"):
        plan_jobs([kept[0], kept[0]], config)


def test_reference_eval_writes_consistent_trajectories_and_summary(rows, runtime, tmp_path):
    config = _config(samples=2, pass_k=[1, 2])
    summary = asyncio.run(run_eval(runtime, config, rows, tmp_path, show_progress=False))
    records = _records(tmp_path)
    assert len(records) == len(rows) * 2
    assert {(r["task_id"], r["sample"]) for r in records} == {
        (j.task_id, j.sample) for j in plan_jobs(rows, config)
    }
    for record in records:
        n = len(record["response_ids"])
        assert n > 0 and len(record["loss_mask"]) == n and len(record["log_probs"]) == n
        assert record["success"] == (record["outcome"]["accuracy"] == 1.0)
        assert record["progress"] == record["outcome"]["progress"]
    assert summary == json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert summary["complete"] is True
    recomputed = summarize([score_of(r) for r in records], [1, 2])
    assert summary["overall"] == recomputed["overall"]
    assert summary["categories"] == recomputed["categories"]
    # The scripted gold policy is deterministic: both samples of a task agree.
    by_task = {}
    for record in records:
        by_task.setdefault(record["task_id"], set()).add(record["success"])
    assert all(len(v) == 1 for v in by_task.values())
    assert summary["categories"]["multi_turn_base"]["accuracy"] == 1.0


def test_a_crashing_episode_is_recorded_not_fatal(rows, runtime, tmp_path, monkeypatch):
    from t3rl_core.rollout.runner import EpisodeRunner

    original = EpisodeRunner.run
    broken = rows[0]["metadata"]["index"]

    async def run(self, task, *args, **kwargs):
        if task["metadata"]["index"] == broken:
            raise RuntimeError("boom")
        return await original(self, task, *args, **kwargs)

    monkeypatch.setattr(EpisodeRunner, "run", run)
    summary = asyncio.run(run_eval(runtime, _config(), rows, tmp_path, show_progress=False))
    failed = [r for r in _records(tmp_path) if r["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["error"] == "RuntimeError: boom" and failed[0]["success"] is False
    assert summary["overall"]["episodes"] == len(rows) and summary["overall"]["statuses"]["failed"] == 1


def test_resume_runs_only_what_is_missing(rows, runtime, tmp_path, monkeypatch):
    config = _config()
    full = asyncio.run(run_eval(runtime, config, rows, tmp_path / "full", show_progress=False))
    partial_dir = tmp_path / "partial"
    partial_dir.mkdir()
    lines = (tmp_path / "full" / TRAJECTORIES_FILE).read_text().splitlines(keepends=True)
    (partial_dir / TRAJECTORIES_FILE).write_text("".join(lines[:3]) + lines[3][:40])  # torn last line
    index = (tmp_path / "full" / INDEX_FILE).read_text().splitlines(keepends=True)
    (partial_dir / INDEX_FILE).write_text("".join(index[:4]))

    played = count_episodes(monkeypatch)
    resumed = asyncio.run(run_eval(runtime, config, rows, partial_dir, resume=True, show_progress=False))
    assert len(played) == len(rows) - 3
    records = _records(partial_dir)
    assert len(records) == len(rows) and len({r["task_id"] for r in records}) == len(rows)
    assert resumed["overall"] == full["overall"] and resumed["categories"] == full["categories"]


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({"temperature": 0.8, "top_p": 1.0, "top_k": 20}, (0.8, 1.0, 20)),  # Tau2-RL-Pipeline's pass@k run
        ({"temperature": 0.7}, (0.7, 1.0, -1)),  # top_p from the runtime, no top-k
        ({"temperature": 0.0, "top_p": 0.5, "top_k": 20}, (0.0, 1.0, -1)),  # greedy ignores both
    ],
)
def test_eval_sampling_carries_top_p_and_top_k(rows, runtime, tmp_path, monkeypatch, kw, expected):
    seen = []
    original = eval_runner._run_episode

    async def recording(runner, job, sampling, attempt):
        seen.append((sampling.temperature, sampling.top_p, sampling.top_k))
        return await original(runner, job, sampling, attempt)

    monkeypatch.setattr(eval_runner, "_run_episode", recording)
    asyncio.run(run_eval(runtime, _config(limit_per_category=1, **kw), rows, tmp_path, show_progress=False))
    assert seen and set(seen) == {expected}


def test_episodes_start_one_by_one(rows, runtime, tmp_path, monkeypatch):
    """An episode whose first prompt is ready makes its first model call before the episodes started
    after it run their set-up: a new tool list's first prompt waits for an encode, and the eval's first
    model call would otherwise wait for every in-flight episode's set-up."""
    from t3rl_core.engines.reference import ReferenceEngine
    from t3rl_core.envs.bfcl.env import BFCLEnv

    events: list[str] = []
    reset, generate = BFCLEnv.reset, ReferenceEngine.generate

    async def logged_reset(self):
        events.append("reset")
        return await reset(self)

    async def logged_generate(self, *args, **kwargs):
        events.append("generate")
        return await generate(self, *args, **kwargs)

    monkeypatch.setattr(BFCLEnv, "reset", logged_reset)
    monkeypatch.setattr(ReferenceEngine, "generate", logged_generate)
    monkeypatch.setattr("t3rl_core.chat.offloop.INLINE_CHARS", 10**9)  # encodes on the loop: no thread timing
    asyncio.run(run_eval(runtime, _config(concurrency=len(rows)), rows, tmp_path, show_progress=False))
    assert events.count("reset") == len(rows) > 3
    assert events.index("generate") < len(rows) - 1  # before the last episode's reset


def test_the_git_state_is_read_while_the_episodes_run(rows, runtime, tmp_path, monkeypatch):
    """summary.json's git state comes from a worker started with the eval, not from git commands run
    after the last episode."""
    import threading

    from t3rl_core.engines.reference import ReferenceEngine

    events: list[str] = []
    generate = ReferenceEngine.generate

    async def logged_generate(self, *args, **kwargs):
        events.append("generate")
        return await generate(self, *args, **kwargs)

    def git_state(root):
        events.append(f"git in {threading.current_thread().name}")
        return {"sha": "abc", "dirty": False}

    monkeypatch.setattr(ReferenceEngine, "generate", logged_generate)
    monkeypatch.setattr(eval_runner, "git_state", git_state)
    config = EvalConfig.model_validate({"engine": {"name": "reference", "latency_s": 0.02}, "concurrency": 2})
    summary = asyncio.run(run_eval(runtime, config, rows, tmp_path, show_progress=False))
    assert summary["git"] == {"sha": "abc", "dirty": False}
    read = [event for event in events if event.startswith("git")]
    assert len(read) == 1 and read[0].startswith("git in t3rl-eval-git")
    assert events.index(read[0]) < len(events) - 1  # before the last model call
