"""tau2-bench: one finished conversation → tau2's own evaluation (database, actions, communicated info).

The messages are tau2's (as its simulations write them, or `Tau2Env.conversation()`): dicts with
`role` (assistant, user, tool), `content`, and `tool_calls` [{id, name, arguments, requestor}]; the
agent's calls are replayed against the task's database by tau2's evaluator, so tool results in the
messages are not trusted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from t3rl_core.counts import counted
from t3rl_core.envs.tau2.domain import tau2_registry
from t3rl_core.envs.tau2.env import evaluate_trajectory, evaluation_reward, partial_components
from t3rl_core.score.verdict import Verdict, run_sync

if TYPE_CHECKING:
    from tau2.data_model.tasks import Task  # lazy: tau2, only when trajectories are scored

# tau2's termination reasons a finished conversation can have.
TERMINATIONS = ("agent_stop", "user_stop", "max_steps", "too_many_errors")


def tau2_task(domain: str, task_id: str) -> Task:
    """One task of a domain by id, from the data shipped in the tau2 package (every split)."""
    tasks = _tasks(domain)
    if task_id not in tasks:
        raise ValueError(f"tau2 domain {domain} has no task {task_id!r} ({counted(len(tasks), 'task')})")
    return tasks[task_id]


@lru_cache(maxsize=8)
def _tasks(domain: str) -> dict[str, Task]:
    registry = tau2_registry()
    if domain not in registry.get_domains():
        raise ValueError(f"unknown tau2 domain {domain!r}; known: {', '.join(registry.get_domains())}")
    found: dict[str, Task] = {}
    for split in registry.get_task_splits_loader(domain)():
        for task in registry.get_tasks_loader(domain)(split):
            found.setdefault(task.id, task)
    return found


async def atau2(
    messages: Sequence[Mapping[str, Any]],
    *,
    domain: str,
    task_id: str | None = None,
    task: Task | Mapping[str, Any] | None = None,
    termination_reason: str = "agent_stop",
) -> Verdict:
    """Score a finished conversation on `task_id` of `domain` (or a given tau2 `task`)."""
    from tau2.data_model.message import Message  # lazy: tau2, only when trajectories are scored
    from tau2.data_model.tasks import Task as Tau2Task  # lazy: tau2, only when trajectories are scored

    if termination_reason not in TERMINATIONS:
        raise ValueError(f"termination_reason {termination_reason!r}; use one of {', '.join(TERMINATIONS)}")
    if task is None:
        if task_id is None:
            raise ValueError("give task_id or task")
        task = tau2_task(domain, task_id)
    elif isinstance(task, Mapping):
        task = Tau2Task.model_validate(dict(task))
    parsed = TypeAdapter(list[Message]).validate_python([dict(m) for m in messages])
    evaluation = await asyncio.to_thread(evaluate_trajectory, domain, task, parsed, termination_reason)
    reward = evaluation_reward(evaluation, domain, task.id)
    details = {
        "domain": domain,
        "termination_reason": termination_reason,
        "reward_basis": evaluation.get("reward_basis"),
        "partial_components": partial_components(evaluation, f"{domain} task {task.id!r}"),
        "reward_info": evaluation,
    }
    return Verdict("tau2", task.id, reward, reward == 1.0, details)


def tau2(
    messages: Sequence[Mapping[str, Any]],
    *,
    domain: str,
    task_id: str | None = None,
    task: Task | Mapping[str, Any] | None = None,
    termination_reason: str = "agent_stop",
) -> Verdict:
    """`atau2` from sync code (also inside a running event loop)."""
    return run_sync(
        atau2(messages, domain=domain, task_id=task_id, task=task, termination_reason=termination_reason)
    )
