"""Comparable results, the hunt of docs/explanation/comparable-results.md: kinds no list named.

A ReTool world's sandbox was recorded by its name alone, so two evals whose code cells ran under a 1 s
or a 10 s limit, 64 MiB or 1 GiB, were one benchmark, though the model reads the timeout or the
MemoryError back and its score follows. Each sandbox field is now declared once
(`t3rl_core.eval.compared.SANDBOXES`): compared in the env part, or why not; the property below holds
the identity an eval records to every declaration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from t3rl_core.envs.retool.config import ReToolEnvConfig
from t3rl_core.eval.compared import NOT_COMPARED, SANDBOXES
from t3rl_core.eval.identity import differences
from t3rl_core.registries import SANDBOXES as SANDBOX_REGISTRY
from t3rl_core.sandbox.config import LocalSandboxConfig
from tests.eval.test_comparable_kinds_three import identity
from tests.support.eval_runs import bfcl_runtime

# Another valid value of each field of each shipped sandbox.
OTHER: dict[str, dict[str, Any]] = {
    "local": {
        "python": "python3",
        "timeout_s": 1.0,
        "cpu_time_s": 3,
        "memory_mb": 64,
        "cpu_cores": 2.0,
        "max_processes": 4,
        "max_open_files": 64,
        "max_file_size_mb": 1,
        "max_output_bytes": 100,
        "max_concurrency": 2,
        "isolation": "none",
        "require": ["user"],
        "cell_uid": 60000,
        "cell_gid": 60000,
        "cell_disk_mb": 8,
        "private_dirs": ["/tmp"],
        "preload": ["json"],
        "hidden_paths": ["~/.ssh"],
        "readable_paths": ["/opt"],
        "env_allowlist": ["PATH"],
        "env": {"OMP_NUM_THREADS": "2"},
    },
    "sandbox_fusion": {
        "url": "http://10.0.0.2:8080",
        "language": "cpp",
        "run_timeout_s": 3.0,
        "compile_timeout_s": 3.0,
        "request_timeout_s": 30.0,
        "max_concurrency": 4,
        "max_attempts": 2,
        "backoff_initial_s": 0.1,
        "backoff_max_s": 1.0,
    },
}


def _sandbox_class(name: str) -> Any:
    return SANDBOX_REGISTRY.config_class(name)


def test_every_field_of_a_shipped_sandbox_is_declared() -> None:
    """A field added to a sandbox fails here until compared.py says whether its results compare."""
    assert set(SANDBOXES) == set(SANDBOX_REGISTRY.entries)
    for name, declared in SANDBOXES.items():
        fields = set(_sandbox_class(name).model_fields)
        assert fields == set(declared), (name, sorted(fields ^ set(declared)))
        assert set(OTHER[name]) == fields - {"name"}, f"{name}: give the test another value of each field"
        for part in declared.values():
            assert part == "env" or part.startswith(f"{NOT_COMPARED}: "), (name, part)


def _env_of(sandbox: dict[str, Any]) -> ReToolEnvConfig:
    return ReToolEnvConfig.model_validate({"sandbox": sandbox})


def _found(a: ReToolEnvConfig, b: ReToolEnvConfig) -> set[str]:
    base = bfcl_runtime()
    ours, theirs = (identity(base.model_copy(update={"env": env})) for env in (a, b))
    return {part.split(":", 1)[0] for part in differences(ours, theirs)}


CASES = [(name, field) for name, fields in OTHER.items() for field in fields]


@pytest.mark.parametrize(("sandbox", "field"), CASES, ids=[f"{s}.{f}" for s, f in CASES])
def test_a_sandbox_declaration_holds_for_the_identity(sandbox: str, field: str) -> None:
    """Each field at another value changes the env part exactly when it is declared compared."""
    found = _found(_env_of({"name": sandbox}), _env_of({"name": sandbox, field: OTHER[sandbox][field]}))
    assert found == ({"env"} if SANDBOXES[sandbox][field] == "env" else set()), (sandbox, field, found)


def test_another_sandbox_is_another_benchmark() -> None:
    assert _found(_env_of({"name": "local"}), _env_of({"name": "sandbox_fusion"})) == {"env"}


def test_a_sandbox_nothing_declares_is_compared_by_every_field() -> None:
    """A plugin's sandbox: no declaration, so none of its fields is taken for where it runs."""

    class Mine(LocalSandboxConfig):
        name: str = "my_pkg.sandbox:Mine"  # type: ignore[assignment]

    def env(**fields: Any) -> ReToolEnvConfig:
        config = _env_of({"name": "local"})
        return config.model_copy(update={"sandbox": Mine(**fields)})

    assert _found(env(), env(max_concurrency=2)) == {"env"}
    assert _found(env(), env()) == set()


# --- A number that reads a setting the accuracy does not --------------------------------------------
# An env with its own verdict: success (and so accuracy, pass@k) does not read the reward's settings;
# the summary's `reward` numbers do. Two evals of reward=progress and reward=binary were one benchmark
# on `--metric overall.reward` too (`t3rl runs`, `runs diff`, a sweep's ranking, a search's objective).
VERDICT = [
    {
        "status": "finished",
        "category": "c",
        "task_id": "t",
        "reward_metrics": {"accuracy": 1.0},
        "outcome": {},
    }
]
METRICS_READING_REWARD = {
    "overall.accuracy": False,
    "overall.pass@1": False,
    "overall.progress": False,
    "categories.multi_turn_base.accuracy": False,
    "overall.reward": True,
    "categories.multi_turn_base.reward": True,
    "eval: overall.reward": True,  # as a sweep names its metric
}


def _rewarded(reward: dict[str, Any]) -> dict[str, Any]:
    from t3rl_core.config import RuntimeConfig
    from t3rl_core.eval.config import EvalConfig
    from t3rl_core.eval.identity import benchmark_identity
    from t3rl_core.eval.runner import apply_eval_limits

    dumped = bfcl_runtime().model_dump(mode="json") | {"reward": reward}
    runtime, config = (
        RuntimeConfig.model_validate(dumped),
        EvalConfig.model_validate({"engine": {"name": "reference"}}),
    )
    return benchmark_identity(apply_eval_limits(runtime, config), config, "a" * 64, VERDICT, complete=True)


def _holding(dotted: str, identity: dict[str, Any]) -> dict[str, Any]:
    """A summary of `identity` with a number at `dotted`: only those define the reference."""
    summary: dict[str, Any] = {"identity": identity}
    *parents, last = dotted.split(".")
    node = summary
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = 0.5
    return summary


@pytest.fixture(scope="module")
def rewarded() -> tuple[dict[str, Any], dict[str, Any]]:
    return _rewarded({"name": "progress"}), _rewarded({"name": "binary"})


@pytest.mark.parametrize(("metric", "reads"), METRICS_READING_REWARD.items())
def test_another_reward_is_another_benchmark_for_the_numbers_that_read_it(
    rewarded: tuple[dict[str, Any], dict[str, Any]], metric: str, reads: bool
) -> None:
    from launch.cli.results_compare import all_differences, reference_identity

    progress, binary = rewarded
    found = [part.split(":", 1)[0] for part in differences(progress, binary, metric)]
    assert found == (["reward"] if reads else []), (metric, found)
    # `t3rl runs` and `runs diff` read it the same way, and rank by the identity most share on it.
    assert [p.split(":", 1)[0] for p in all_differences(progress, binary, metric)] == found
    # `t3rl runs` hands it summaries holding the number (a sweep's "<stage>: " label names its stage).
    dotted = metric.rpartition(": ")[2]
    common = reference_identity(
        [_holding(dotted, binary), _holding(dotted, progress), _holding(dotted, progress)], dotted
    )
    # On a number that does not read it, all three are one benchmark: the first one's is the reference.
    assert common is (progress if reads else binary)


def test_a_summary_without_the_reward_part_is_named_on_a_reward_number_only(
    rewarded: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    progress = rewarded[0]
    older = {part: value for part, value in progress.items() if part != "reward"}
    assert differences(older, progress) == []
    assert differences(older, progress, "overall.reward") == [
        "reward: not recorded in one of the summaries (written before t3rl recorded it)"
    ]


def test_runs_diff_and_a_search_refuse_another_reward_on_its_number(
    rewarded: tuple[dict[str, Any], dict[str, Any]], tmp_path: Path
) -> None:
    import json
    import os

    import yaml
    from typer.testing import CliRunner

    from launch.cli.app import app
    from launch.run.sweep_compare import objective_identity_differences

    runs = []
    progress, binary = rewarded
    for name, ident in (("progress", progress), ("progress_again", progress), ("binary", binary)):
        path = tmp_path / "runs" / name / "20260101-000000"
        (path / "stages" / "eval").mkdir(parents=True)
        (path / "config.yaml").write_text(
            yaml.safe_dump({"name": name, "stages": {"eval": {"kind": "eval"}}})
        )
        summary = {
            "complete": True,
            "identity": ident,
            "overall": {"tasks": 4, "accuracy": 1.0, "reward": 0.5},
        }
        (path / "stages" / "eval" / "summary.json").write_text(json.dumps(summary))
        # Listed newest first, and a tie goes to the first listed: binary's must lose by count alone.
        os.utime(path / "config.yaml", (1e9 + 10 * len(runs),) * 2)
        runs.append(str(path))
    runner = CliRunner()
    pair = runs[1:]  # progress, binary
    on_reward = runner.invoke(
        app, ["runs", "diff", *pair, "--metric", "overall.reward"], env={"COLUMNS": "300"}
    )
    assert on_reward.exit_code == 1 and "reward: config_sha256" in " ".join(on_reward.output.split())
    assert runner.invoke(app, ["runs", "diff", *pair], env={"COLUMNS": "300"}).exit_code == 0
    listed = runner.invoke(
        app,
        ["runs", "--runs-dir", str(tmp_path / "runs"), "--metric", "overall.reward"],
        env={"COLUMNS": "300"},
    )
    # The two of reward=progress are the reference; binary's result is the one held back, and counted.
    rows = {
        line.split("/")[0]: line
        for line in listed.output.splitlines()
        if line.startswith(("progress", "binary"))
    }
    assert "eval not ranked: reward:" in rows["binary"], listed.output
    assert "not ranked" not in rows["progress"] + rows["progress_again"], listed.output
    assert "1 result(s) measured another benchmark" in " ".join(listed.output.split())
    assert "not ranked" not in runner.invoke(app, ["runs", "--runs-dir", str(tmp_path / "runs")]).output
    # A search ranking by the reward: the first trial's identity is the study's.
    study = tmp_path / "study"
    study.mkdir()
    first, second = ({"identity": ident} for ident in rewarded)
    assert objective_identity_differences(study, first, "eval: overall.reward") == []
    assert [
        p.split(":")[0] for p in objective_identity_differences(study, second, "eval: overall.reward")
    ] == ["reward"]
    assert objective_identity_differences(study, second, "eval: overall.accuracy") == []


# --- A world that failed episodes, scored as wrong answers ---------------------------------------------
# An episode whose world raised is `failed` and attributed to the infrastructure, and it is scored: a
# wrong answer. An eval whose world crashed in some episodes (a plugin's step raising, a sandbox or user
# model unreachable) was the same benchmark as a clean one, its lower score ranked beside it.


def test_an_eval_whose_world_failed_episodes_is_told_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from t3rl_core.envs.bfcl.env import BFCLEnv
    from tests.eval.test_comparable_kinds import evaluate

    # One task (multi_turn_base's): an eval of the four categories costs ~6 s of CPU each.
    clean = evaluate(tmp_path / "clean", categories=["multi_turn_base"])
    original, calls = BFCLEnv.step, []

    async def step(self: BFCLEnv, action: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:  # one step of one episode: the world's own KeyError
            raise KeyError("boom")
        return await original(self, action)

    monkeypatch.setattr(BFCLEnv, "step", step)
    crashed = evaluate(tmp_path / "crashed", categories=["multi_turn_base"])
    assert crashed["overall"]["failures"]["infrastructure"] == 1
    assert clean["identity"]["coverage"] == {"complete": True, "unscored": 0}
    assert crashed["identity"]["coverage"]["infrastructure_failed"] == 1
    found = differences(clean["identity"], crashed["identity"])
    assert found == ["coverage: infrastructure_failed null vs 1"], found
    assert differences(crashed["identity"], crashed["identity"]) == []


def test_an_eval_whose_world_failed_every_episode_is_incomplete_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A world whose step always raises (a plugin's bug) gave a complete eval of accuracy 0.000, exit 0;
    --resume kept its episodes, so fixing the world changed nothing."""
    import asyncio

    from t3rl_core.envs.bfcl.env import BFCLEnv
    from t3rl_core.eval.runner import run_eval
    from tests.eval.test_comparable_kinds import evaluate, rows
    from tests.support.eval_runs import reference_config

    async def step(self: BFCLEnv, action: Any) -> Any:
        raise KeyError("boom")

    with monkeypatch.context() as patched:
        patched.setattr(BFCLEnv, "step", step)
        broken = evaluate(tmp_path, categories=["multi_turn_base"])
    assert broken["complete"] is False
    assert broken["reason"].startswith(
        "every episode failed in the infrastructure, not the model (env bfcl_multi_turn): "
        "environment error: KeyError: 'boom'"
    )
    config = reference_config(concurrency=1, categories=["multi_turn_base"])
    fixed = asyncio.run(run_eval(bfcl_runtime(), config, rows(), tmp_path, resume=True, show_progress=False))
    assert fixed["complete"] is True and fixed["overall"]["accuracy"] == 1.0
    assert fixed["attempts"]["rerun"] == {"infrastructure_failed": broken["overall"]["episodes"]}


@pytest.mark.parametrize("world", ["hangs", "raises-its-own-timeout"])
def test_a_world_call_that_never_returns_fails_its_episode(
    world: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin world's step that never returned hung `t3rl eval` (and a training rollout) for good: no
    world's call was bounded. Each is now bounded by its class's CALL_TIMEOUT_S; a TimeoutError the
    world raises itself stays its own error."""
    import asyncio

    from t3rl_core.envs.bfcl.env import BFCLEnv
    from tests.eval.test_comparable_kinds import evaluate

    async def step(self: BFCLEnv, action: Any) -> Any:
        if world == "hangs":
            await asyncio.Event().wait()
        raise TimeoutError("the world's own")

    monkeypatch.setattr(BFCLEnv, "step", step)
    monkeypatch.setattr(BFCLEnv, "CALL_TIMEOUT_S", 0.05)
    summary = evaluate(tmp_path, categories=["multi_turn_base"])
    assert summary["complete"] is False
    if world == "hangs":
        assert "BFCLEnv.step() did not return within 0.05 s (BFCLEnv.CALL_TIMEOUT_S;" in summary["reason"]
    else:
        assert (
            "TimeoutError: the world's own" in summary["reason"] and "did not return" not in summary["reason"]
        )
