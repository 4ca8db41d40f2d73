"""The resource ledger: every pair of holders of one port, GPU set, Ray head or listed directory at once
is refused on the key set last, with a value nothing else holds; holders apart in time are not."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import pytest
from run_configs import make_run, t3rl_stages

from launch.checks.ledger import THIS_MACHINE, Claim, claims_of, ledger_problems, sweep_problems
from launch.plan.build import build_plan
from launch.plan.context import PlanContext

CTX = PlanContext(Path("/RUN"), Path("/BASE"), "/T3RL", "/venv/bin/python", "ledger", {})


def _last(*keys: str) -> str:
    return keys[-1]


def _port(holder: str, key: str, port: int, window: str | None, default: int | None = None) -> Claim:
    return Claim("port", THIS_MACHINE, port, holder, key, window, default=default)


HOLDERS = [
    _port("the local Ray head (GCS)", "executor.ray_port", 6379, None, 6379),
    _port("the local Ray head (dashboard)", "executor.dashboard_port", 8265, None, 8265),
    _port("the SGLang server of eval stage eval", "eval.server.port", 30000, "eval", 30000),
    _port("service user_sim", "services.user_sim.port", 30001, "eval", 30001),
    _port("service judge", "services.judge.port", 30002, "eval", 30001),
]


@pytest.mark.parametrize(("a", "b"), list(combinations(range(len(HOLDERS)), 2)))
def test_every_pair_of_port_holders_collided_is_refused_with_a_free_port(a: int, b: int) -> None:
    claims = list(HOLDERS)
    claims[b] = claims[b]._replace(item=claims[a].item)
    problems = ledger_problems(claims, _last)
    assert len(problems) == 1, problems
    problem = problems[0]
    assert problem.key in (claims[a].key, claims[b].key)
    assert claims[a].holder in problem.message and claims[b].holder in problem.message
    # The fix's port is held by nobody: applying it leaves no collision.
    port = int(problem.fix.split("=")[1].split()[0])
    moved = [c._replace(item=port) if c.key == problem.key else c for c in claims]
    assert ledger_problems(moved, _last) == []


def test_holders_in_different_stages_do_not_collide() -> None:
    claims = [
        _port("service user_sim", "services.user_sim.port", 30000, "train"),
        _port("the SGLang server of eval stage eval", "eval.server.port", 30000, "eval"),
    ]
    assert ledger_problems(claims, _last) == []


def test_a_run_wide_holder_collides_with_every_stage() -> None:
    claims = [
        _port("the local Ray head (dashboard)", "executor.dashboard_port", 30000, None),
        _port("the SGLang server of eval stage eval", "eval.server.port", 30000, "eval", 30000),
    ]
    (problem,) = ledger_problems(claims, _last)
    assert problem.key == "eval.server.port" and "set eval.server.port=30001" in problem.fix


@pytest.mark.parametrize(
    ("runs", "other", "key"),
    [
        ("/x/runs", "/x/runs", "paths.plans_dir"),
        ("/x/runs", "/x/runs/cache", "paths.cache_dir"),
        ("/x/runs/inner", "/x", "paths.checkpoints_dir"),
    ],
)
def test_a_directory_inside_a_listed_tree_is_refused(runs: str, other: str, key: str) -> None:
    claims = [
        Claim("tree", "", runs, "the runs t3rl lists", "paths.runs_dir"),
        Claim("tree", "", other, "another tree", key),
    ]
    (problem,) = ledger_problems(claims, _last)
    assert problem.key == key
    fixed = problem.fix.split("=", 1)[1]
    moved = [claims[0], Claim("tree", "", fixed, "another tree", key)]
    assert ledger_problems(moved, _last) == []


def test_stores_may_share_a_directory() -> None:
    claims = [
        Claim("tree", "", "/x/store", "the conversion cache", "paths.checkpoints_dir"),
        Claim("tree", "", "/x/store", "the HF models", "paths.models_dir"),
    ]
    assert ledger_problems(claims, _last) == []


def test_the_local_ray_head_is_held_only_by_plans_with_train_stages() -> None:
    with_train = build_plan(make_run(stages=t3rl_stages()), CTX)
    claims = claims_of(make_run(stages=t3rl_stages()), with_train)
    assert {"executor.ray_port", "executor.dashboard_port", "executor"} <= {c.key for c in claims}
    data_only = make_run(stages={"data": {"kind": "prepare_data"}})
    kinds = {c.kind for c in claims_of(data_only, build_plan(data_only, CTX))}
    assert "ray_head" not in kinds and "gpus" not in kinds


def test_sweep_points_sharing_this_machine_at_once_are_refused() -> None:
    run = make_run(stages=t3rl_stages())
    plan = build_plan(run, CTX)
    points = [("p00", run, plan), ("p01", run, plan)]
    (problem,) = sweep_problems(points, None)
    assert problem.key == "executor.max_parallel" and "p00 and p01" in problem.message
    assert "the GPUs of this machine" in problem.message and "port 6379" in problem.message
    assert sweep_problems(points, 1) == []


def test_sweep_points_without_gpus_or_ports_run_at_once() -> None:
    run = make_run(stages={"data": {"kind": "prepare_data"}})
    plan = build_plan(run, CTX)
    assert sweep_problems([("p00", run, plan), ("p01", run, plan)], None) == []


def test_slurm_points_hold_their_own_nodes() -> None:
    run = make_run(stages=t3rl_stages(), executor={"kind": "slurm"})
    plan = build_plan(run, CTX)
    assert sweep_problems([("p00", run, plan), ("p01", run, plan)], None) == []
