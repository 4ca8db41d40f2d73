"""tau2's end-of-episode evaluation without its per-episode rebuilds.

tau2's `evaluate_simulation` builds two more environments per episode (each a JSON parse and pydantic
validation of the domain database), replays the agent's calls into one and the gold actions into the
other, and hashes both databases. Here each domain database is parsed once per process; an episode's
database copies the records it reads, when it reads them (t3rl_core.envs.tau2.lazy_db), the gold
actions' database hashes are computed once per task, and the agent's side is the episode's own
environment, which already holds the state a replay of its calls rebuilds. A hash is tau2's own (the
sha256 of the database's sorted JSON text) made from each shared record's JSON text, serialised once
per process, and the texts of the records the episode changed. The garbage collector is kept off
that work (tree-shaped, no cycles) and off the shared, long-lived objects. Action and communication
checks are tau2's own evaluators; the combination follows `evaluate_simulation` (EvaluationType.ALL).
tests/envs/tau2/test_tau2_evaluation.py (a sample) and benchmarks/tau2_episode.py (the first episodes
of 40 tasks per domain) check the reward info equals tau2's (`env.evaluate_trajectory`, tau2's
evaluator as is); tests/envs/tau2/test_lazy_db.py checks the hashes.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

from t3rl_core.envs.tau2.db_copy import paused_gc
from t3rl_core.envs.tau2.domain import tau2_registry
from t3rl_core.envs.tau2.lazy_db import TableFragments, lazy_copy
from t3rl_core.gc_freeze import freeze_long_lived

if TYPE_CHECKING:
    # lazy: tau2, only when an episode is evaluated
    from tau2.data_model.message import Message as Tau2Message
    from tau2.data_model.simulation import RewardInfo  # lazy: tau2, only when an episode is evaluated
    from tau2.data_model.tasks import Task  # lazy: tau2, only when an episode is evaluated
    from tau2.environment.environment import Environment  # lazy: tau2, only when an episode is evaluated

# tau2's TerminationReason values whose episodes are scored (any other scores 0).
SCORED_TERMINATIONS = ("agent_stop", "user_stop")


class DomainWorld:
    """One domain's parsed databases (kept serialised) and its tasks' gold database hashes."""

    def __init__(self, domain: str) -> None:
        self.domain = domain
        self._constructor = tau2_registry().get_env_constructor(domain)
        environment = self._constructor(solo_mode=False)
        user_tools = environment.user_tools
        self._databases = (environment.tools.db, user_tools.db if user_tools is not None else None)
        self._gold: dict[str, tuple[str | None, str | None]] = {}
        self._fragments: list[TableFragments | None] | None = None
        # The shared, long-lived objects loaded so far (tau2's modules, tasks, this database) are
        # never garbage: keep the collector from walking them on every full collection.
        freeze_long_lived()

    def environment(self) -> Environment:
        """A fresh environment of the domain over a private copy of its databases (its records
        copied as the episode reads them: t3rl_core.envs.tau2.lazy_db)."""
        with paused_gc():
            db, user_db = (None if base is None else lazy_copy(base) for base in self._databases)
        databases = {"db": db} if user_db is None else {"db": db, "user_db": user_db}
        return self._constructor(solo_mode=False, **databases)

    def gold_hashes(self, task: Task) -> tuple[str | None, str | None]:
        """Agent and user database hashes after the task's initial state and gold actions (cached)."""
        if task.id not in self._gold:
            environment = self.environment()
            state = task.initial_state
            environment.set_state(
                initialization_data=state.initialization_data if state else None,
                initialization_actions=state.initialization_actions if state else None,
                message_history=(state.message_history if state else None) or [],
            )
            for action in (task.evaluation_criteria.actions if task.evaluation_criteria else None) or []:
                try:
                    environment.make_tool_call(
                        tool_name=action.name, requestor=action.requestor, **action.arguments
                    )
                except Exception:  # tau2 skips a failing gold action too (with a warning)
                    continue
            self._gold[task.id] = self.database_hashes(environment)
        return self._gold[task.id]

    def database_hashes(self, environment: Environment) -> tuple[str | None, str | None]:
        """tau2's hashes of an environment's agent and user databases (what its evaluator compares:
        `get_db_hash`, `get_user_db_hash`), from the shared records' JSON texts where unchanged."""
        with paused_gc():
            if self._fragments is None:
                self._fragments = [None if base is None else TableFragments(base) for base in self._databases]
                freeze_long_lived()  # the texts live as long as the process
            hashes: list[str | None] = []
            for toolkit, fragments in zip(
                (environment.tools, environment.user_tools), self._fragments, strict=True
            ):
                if toolkit is None:
                    hashes.append(None)
                elif fragments is None:
                    hashes.append(toolkit.get_db_hash())
                else:
                    hashes.append(fragments.hash(toolkit.db))
            return hashes[0], hashes[1]


@cache
def domain_world(domain: str) -> DomainWorld:
    return DomainWorld(domain)


def evaluate_episode(
    world: DomainWorld,
    task: Task,
    termination: str,
    trajectory: Sequence[Tau2Message],
    environment: Environment,
) -> RewardInfo:
    """tau2's reward info (EvaluationType.ALL) of an episode whose calls ran on `environment`."""
    from tau2.data_model.simulation import RewardInfo  # lazy: tau2, only when an episode is evaluated
    from tau2.data_model.tasks import RewardType  # lazy: tau2, only when an episode is evaluated

    # lazy: tau2, only when an episode is evaluated
    from tau2.evaluator.evaluator_action import ActionEvaluator

    # lazy: tau2, only when an episode is evaluated
    from tau2.evaluator.evaluator_communicate import CommunicateEvaluator

    if termination not in SCORED_TERMINATIONS:
        note = f"Simulation terminated prematurely. Termination reason: {termination}"
        return RewardInfo(reward=0.0, reward_basis=None, info={"note": note})
    criteria = task.evaluation_criteria
    if criteria is None:
        return RewardInfo(reward=1.0, reward_basis=None, info={"note": "No evaluation criteria"})
    messages = list(trajectory)
    parts = {
        "env": _environment_reward(world, task, environment),
        "action": ActionEvaluator.calculate_reward(task=task, full_trajectory=messages),
        "communicate": CommunicateEvaluator.calculate_reward(task=task, full_trajectory=messages),
    }
    basis = set(criteria.reward_basis)
    if RewardType.NL_ASSERTION in basis:
        raise ValueError("NL assertions are part of the reward basis, but they are not being evaluated.")
    reward, breakdown = 1.0, {}
    for part, bases in (
        ("env", {RewardType.DB, RewardType.ENV_ASSERTION}),
        ("action", {RewardType.ACTION}),
        ("communicate", {RewardType.COMMUNICATE}),
    ):
        if basis & bases:
            breakdown.update(parts[part].reward_breakdown or {})
            reward *= parts[part].reward
    return RewardInfo(
        reward=reward,
        db_check=parts["env"].db_check,
        env_assertions=parts["env"].env_assertions,
        action_checks=parts["action"].action_checks,
        nl_assertions=None,
        communicate_checks=parts["communicate"].communicate_checks,
        reward_basis=criteria.reward_basis,
        reward_breakdown=breakdown,
        info={
            "env": parts["env"].info,
            "nl": None,
            "communicate": parts["communicate"].info,
            "action": parts["action"].info,
        },
    )


def _environment_reward(world: DomainWorld, task: Task, environment: Environment) -> RewardInfo:
    """tau2's EnvironmentEvaluator: database match against the gold actions' state, env assertions."""
    # lazy: tau2, only when an episode is evaluated
    from tau2.data_model.simulation import DBCheck, EnvAssertionCheck, RewardInfo
    from tau2.data_model.tasks import RewardType  # lazy: tau2, only when an episode is evaluated

    criteria = task.evaluation_criteria
    assert criteria is not None
    if criteria.actions is None and criteria.env_assertions is None:
        note = "No expected actions or env assertions"
        return RewardInfo(reward=1.0, db_check=DBCheck(db_match=True, db_reward=1.0), info={"note": note})
    matches = world.gold_hashes(task) == world.database_hashes(environment)
    db_reward = 1.0 if matches else 0.0
    checks = []
    for assertion in criteria.env_assertions or []:
        met = environment.run_env_assertion(assertion, raise_assertion_error=False)
        checks.append(EnvAssertionCheck(env_assertion=assertion, met=met, reward=1.0 if met else 0.0))
    assertion_reward = 1.0
    for check in checks:
        assertion_reward *= check.reward
    reward, breakdown = 1.0, {}
    if RewardType.DB in criteria.reward_basis:
        breakdown[RewardType.DB] = db_reward
        reward *= db_reward
    if RewardType.ENV_ASSERTION in criteria.reward_basis:
        breakdown[RewardType.ENV_ASSERTION] = assertion_reward
        reward *= assertion_reward
    return RewardInfo(
        reward=reward,
        db_check=DBCheck(db_match=matches, db_reward=db_reward),
        env_assertions=checks,
        reward_basis=criteria.reward_basis,
        reward_breakdown=breakdown,
    )
