"""`t3rl_core.score.tau2` agrees with the env's episode path: episodes played through the env (gold plan,
and the gold plan without its last database write), then their conversation scored by task id."""

from __future__ import annotations

import asyncio

import pytest

from t3rl_core import score
from t3rl_core.envs.tau2.domain import DONE, domain_spec
from t3rl_core.types import ToolCall, ToolCallAction

TASKS = {"airline": 1, "retail": 1}


def _skipping_last_write(domain):
    writes = domain_spec(domain).write_tools

    def policy(env):
        action = env.oracle()
        remaining = env._plan[env._plan_done :]
        if action is None or (
            action.calls[0].name in writes and not any(c.name in writes for c in remaining[1:])
        ):
            return ToolCallAction(calls=(ToolCall(DONE, {}),), text="")
        return action

    return policy


@pytest.mark.slow
@pytest.mark.parametrize("domain", sorted(TASKS))
def test_scoring_a_conversation_gives_the_episode_reward(base_rows, factory, play, domain):
    with_writes = [
        task_id
        for task_id, row in sorted(base_rows[domain].items(), key=lambda item: (len(item[0]), item[0]))
        if any(
            a["name"] in domain_spec(domain).write_tools
            for a in row["metadata"]["task"]["evaluation_criteria"]["actions"] or []
        )
    ][: TASKS[domain]]
    rewards = set()
    for task_id in with_writes:
        for policy in (
            lambda env: env.oracle() or ToolCallAction(calls=(ToolCall(DONE, {}),), text=""),
            _skipping_last_write(domain),
        ):
            env = factory(base_rows[domain][task_id], "eval")
            play(env, policy)
            outcome = env.outcome()
            verdict = score.tau2(
                env.conversation(),
                domain=domain,
                task_id=task_id,
                termination_reason=outcome["termination_reason"],
            )
            assert verdict.reward == outcome["task_reward"], (domain, task_id)
            assert verdict.details["partial_components"] == outcome["partial_components"]
            assert verdict.details["reward_basis"] == outcome["reward_basis"]
            rewards.add(verdict.reward)
    assert rewards == {0.0, 1.0}


def test_task_lookup_by_id_and_bad_input():
    assert score.tau2_task("airline", "0").id == "0"
    with pytest.raises(ValueError, match="has no task"):
        score.tau2_task("airline", "no-such-task")
    with pytest.raises(ValueError, match="unknown tau2 domain"):
        score.tau2_task("airlines", "0")
    with pytest.raises(ValueError, match="termination_reason"):
        asyncio.run(score.atau2([], domain="airline", task_id="0", termination_reason="bored"))
