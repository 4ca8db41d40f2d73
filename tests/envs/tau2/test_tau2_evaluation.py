"""The episode's evaluation equals tau2's own `evaluate_simulation` of the same trajectory: gold plans,
plans that skip a write, and episodes cut short, on a sample of every domain's tasks (the benchmark
benchmarks/tau2_episode.py checks every shipped task)."""

from __future__ import annotations

import random

import pytest

from t3rl_core.envs.tau2.domain import domain_spec
from t3rl_core.envs.tau2.env import evaluate_trajectory
from t3rl_core.envs.tau2.evaluation import domain_world
from t3rl_core.types import ToolCallAction

SEED = 11


def _reference(env) -> dict:
    return evaluate_trajectory(env.spec.domain, env.spec.task, env._trajectory, env._termination)


def _skipping_writes(env):
    """The gold plan without its write calls (the database then differs from the gold one)."""
    writes = domain_spec(env.spec.domain).write_tools
    action = env.oracle()
    while action is not None and isinstance(action, ToolCallAction) and action.calls[0].name in writes:
        env._plan_done += 1
        action = env.oracle()
    return action


@pytest.mark.parametrize(
    ("domain", "count"),
    [
        ("retail", 1),
        pytest.param("retail", 4, marks=pytest.mark.slow),
        pytest.param("airline", 2, marks=pytest.mark.slow),
        ("telecom", 2),
    ],
)
def test_evaluation_equals_tau2s(base_rows, factory, play, domain, count):
    ids = sorted(base_rows[domain], key=lambda i: (len(i), i))
    for task_id in random.Random(SEED).sample(ids, count):
        for policy in (lambda env: env.oracle(), _skipping_writes):
            env = factory(base_rows[domain][task_id], "eval")
            play(env, policy)
            assert env.outcome()["reward_info"] == _reference(env), (domain, task_id)


def test_gold_hashes_are_computed_once_per_task(base_rows, factory, play, monkeypatch):
    world = domain_world("retail")
    row = next(iter(base_rows["retail"].values()))
    world._gold.pop(row["metadata"]["task_id"], None)  # an earlier test may have scored this task
    built = []
    make = world.environment
    monkeypatch.setattr(world, "environment", lambda: built.append(1) or make())
    for _ in range(2):
        play(factory(row, "eval"), lambda env: env.oracle())
    # one environment per episode, plus the gold replay of the task's first evaluation only
    assert len(built) == 3
