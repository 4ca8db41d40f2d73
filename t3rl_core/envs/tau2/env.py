"""tau2-bench episodes: the domain's environment, a simulated customer and tau2's own evaluation.

The episode replays tau2's orchestrator (tau2.orchestrator.Orchestrator) step by step, with the model
as the agent:

- the conversation opens with tau2's fixed agent greeting, which only the user hears; `reset()`
  returns the user's reply to it, so a row's prompt is just the system message;
- each model turn must be exactly one tool call (the Tau2-RL-Pipeline protocol): `respond(content)`
  talks to the customer, `done()` ends the episode, any other name runs on the domain's tools. Plain
  text, unparsable output or several calls in one turn are not sent anywhere: the model gets a format
  error back and tries again. Unknown tools and bad arguments go to tau2, whose error result (and
  error count) the model sees, as tau2's own agent would;
- the user may call its own tools (telecom's device) before it answers; those results go only to it;
- the episode ends on `done` (agent_stop), on a user stop marker (user_stop), after `max_steps`
  orchestrator steps (max_steps) or `max_errors` tool errors (too_many_errors), counted as tau2 does;
- then tau2's evaluation (`evaluate_simulation`, reproduced without its per-episode rebuilds in
  t3rl_core.envs.tau2.evaluation) scores the trajectory without an LLM for these domains: the
  database after the agent's calls against the gold actions' database, env assertions, gold-action
  matches, and communicated info, multiplied over the task's reward basis.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Mapping
from copy import deepcopy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from t3rl_core.envs.base import Env, Mode
from t3rl_core.envs.bounded_calls import CallWorkers
from t3rl_core.envs.format_repair import FormatRepair
from t3rl_core.envs.tau2.config import Tau2EnvConfig
from t3rl_core.envs.tau2.domain import DONE, PROTOCOL_ARGUMENTS, RESPOND, DomainSpec, domain_spec, user_task
from t3rl_core.envs.tau2.evaluation import domain_world, evaluate_episode
from t3rl_core.envs.tau2.generic_calls import generic_workers, response
from t3rl_core.envs.tau2.oracle import call_text, gold_plan
from t3rl_core.envs.tau2.users import UserSession, UserSimulator, UserToolResult, UserTurn, unreadable_result
from t3rl_core.finite import MissingScore, scored, verdict_flag
from t3rl_core.registries import USER_SIMULATORS
from t3rl_core.types import Action, AnswerAction, InvalidAction, Message, ToolCall, ToolCallAction, Transition

if TYPE_CHECKING:
    from tau2.data_model.message import Message as Tau2Message  # lazy: tau2, only when a tau2 episode runs
    from tau2.data_model.message import ToolCall as Tau2ToolCall  # lazy: tau2, only when a tau2 episode runs
    from tau2.data_model.message import ToolMessage  # lazy: tau2, only when a tau2 episode runs
    from tau2.data_model.tasks import Task  # lazy: tau2, only when a tau2 episode runs
    from tau2.environment.environment import Environment  # lazy: tau2, only when a tau2 episode runs

FORMAT_ERROR = (
    "FORMAT ERROR: {problem} Every turn must be exactly one tool call: `respond` to write to the "
    "customer, `done` to end the conversation, or one of the other tools."
)
USER_STOP, AGENT_STOP = "user_stop", "agent_stop"
MAX_STEPS, TOO_MANY_ERRORS, USER_ERROR = "max_steps", "too_many_errors", "user_error"
# tau2's partial-score components, each present when its checks exist in the reward info.
COMPONENTS = ("action", "communicate", "env_assertion", "db")


@dataclass(frozen=True)
class Tau2Task:
    """What an episode needs from a dataset row."""

    domain: str
    task: Task
    index: int | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Tau2Task:
        from tau2.data_model.tasks import Task  # lazy: tau2, only when a tau2 episode runs

        metadata = row.get("metadata") or {}
        if not isinstance(metadata.get("task"), Mapping) or "domain" not in metadata:
            raise ValueError(
                "a tau2 row needs metadata.domain and metadata.task (see t3rl_core.envs.tau2.data)"
            )
        task = Task.model_validate(metadata["task"])
        if task.initial_state is not None and task.initial_state.message_history:
            raise ValueError(f"tau2 task {task.id}: tasks that start mid-conversation are not supported")
        return cls(domain=str(metadata["domain"]), task=task, index=metadata.get("index"))


class Tau2Env(Env):
    """One tau2 episode; see the module docstring."""

    def __init__(
        self,
        spec: Tau2Task,
        domain: DomainSpec,
        user: UserSession,
        config: Tau2EnvConfig,
        mode: Mode,
        workers: CallWorkers | None = None,
    ) -> None:
        self.spec, self.domain, self.user, self.config = spec, domain, user, config
        self._workers = workers
        repair = config.format_repair
        self.format_repair = FormatRepair.for_mode(repair, mode) if repair is not None else None
        self._env: Environment | None = None
        self._trajectory: list[Tau2Message] = []
        self._steps = self._errors = self._format_errors = self._user_turns = 0
        # The user's own calls that were no call (arguments no JSON object): its errors, not the agent's.
        self._user_call_errors = 0
        self._termination: str | None = None
        self._evaluation: dict[str, Any] | None = None
        self._reward = 0.0  # tau2's reward of the evaluation, once there is one
        self._actions: list[dict[str, Any]] = []
        self._calls = 0
        self._plan = gold_plan(spec.task, domain)
        self._plan_done = 0

    # ----------------------------------------------------------------------------------- episode

    async def reset(self) -> Transition:
        # lazy: tau2, only when a tau2 episode runs
        from tau2.orchestrator.orchestrator import DEFAULT_FIRST_AGENT_MESSAGE
        from tau2.utils.utils import get_now  # lazy: tau2, only when a tau2 episode runs

        self._env = await asyncio.to_thread(self._build_environment)
        self.user.seed = self.episode_seed  # the user's draws follow the episode's seed
        greeting = deepcopy(DEFAULT_FIRST_AGENT_MESSAGE)
        greeting.timestamp = get_now()
        self._trajectory = [greeting]
        return await self._hear_user(greeting.content or "")

    def unseeded_draws(self) -> str | None:
        return self.user.unseeded()

    def _build_environment(self) -> Environment:
        task = self.spec.task
        environment = domain_world(self.spec.domain).environment()
        state = task.initial_state
        environment.set_state(
            initialization_data=state.initialization_data if state else None,
            initialization_actions=state.initialization_actions if state else None,
            message_history=[],
        )
        return environment

    async def step(self, action: Action) -> Transition:
        if self._env is None:
            raise RuntimeError("Tau2Env.step() before reset()")
        if self._termination is not None:
            raise RuntimeError(f"tau2 task {self.spec.task.id}: step() after the episode ended")
        call, problem = _single_call(action)
        if call is None:
            return self._format_error(problem)
        unknown = _unknown_arguments(call)
        if unknown is not None:
            return self._format_error(unknown)
        if call.name == RESPOND:
            content = call.arguments.get("content")
            if not isinstance(content, str) or not content.strip():
                return self._format_error("`respond` needs a non-empty string `content`.")
            self._advance_plan(call)
            return await self._respond(content)
        self._advance_plan(call)
        if call.name == DONE:
            return await self._agent_stop()
        return await self._use_tool(call)

    def format_problem(self, action: Action) -> str | None:
        """Tau2-RL-Pipeline's strict action parse: exactly one tool call and no text around it."""
        call, problem = _single_call(action)
        if call is None:
            self._format_errors += 1
            return problem
        if isinstance(action, ToolCallAction) and action.content:
            self._format_errors += 1
            return "Text outside the tool call."
        return None

    def _format_error(self, problem: str) -> Transition:
        self._format_errors += 1
        return Transition(messages=[{"role": "user", "content": FORMAT_ERROR.format(problem=problem)}])

    async def _respond(self, content: str) -> Transition:
        from tau2.data_model.message import AssistantMessage  # lazy: tau2, only when a tau2 episode runs

        self._record(AssistantMessage(role="assistant", content=content))
        if self._limit_reached():
            return await self._finish(None)
        return await self._hear_user(content)

    async def _agent_stop(self) -> Transition:
        from tau2.data_model.message import AssistantMessage  # lazy: tau2, only when a tau2 episode runs
        from tau2.gym.gym_agent import GymAgent  # lazy: tau2, only when a tau2 episode runs

        # tau2's gym agent turns its `done` tool call into a message carrying the stop token.
        self._record(AssistantMessage(role="assistant", content=GymAgent.STOP_TOKEN))
        self._termination = AGENT_STOP
        self._limit_reached()
        return await self._finish(None)

    async def _use_tool(self, call: ToolCall) -> Transition:
        from tau2.data_model.message import AssistantMessage  # lazy: tau2, only when a tau2 episode runs

        # lazy: tau2, only when a tau2 episode runs
        from tau2.data_model.message import ToolCall as Tau2ToolCall

        assert self._env is not None
        self._calls += 1
        request = Tau2ToolCall(
            id=f"call_{self._calls}", name=call.name, arguments=dict(call.arguments), requestor="assistant"
        )
        self._record(AssistantMessage(role="assistant", tool_calls=[request]))
        result = await self._response(request)
        self._record(result)
        self._errors += int(result.error)
        self._actions.append({"name": call.name, "arguments": dict(call.arguments), "error": result.error})
        observation = self._tool_observation(call, result.content or "")
        if self._limit_reached():
            return await self._finish(observation)
        return Transition(messages=[observation])

    async def _response(self, request: Tau2ToolCall) -> ToolMessage:
        """tau2's result of a call; a generic tool's (`calculate`) in a worker stopped past its budget."""
        assert self._env is not None
        return await response(self._env, request, self._workers, self.config.GENERIC_CALL_BUDGET_S)

    def _tool_observation(self, call: ToolCall, content: str) -> Message:
        if self.config.tool_result_role == "tool":
            return {"role": "tool", "name": call.name, "content": content}
        shown = call_text(call.name, call.arguments)
        return {"role": "user", "content": f"Tool result for {shown}:\n{content}"}

    async def _hear_user(self, incoming: str) -> Transition:
        """The user's answer to the agent's text, after any calls of its own tools."""
        # lazy: tau2, only when a tau2 episode runs
        from tau2.data_model.message import ToolCall as Tau2ToolCall
        from tau2.data_model.message import UserMessage  # lazy: tau2, only when a tau2 episode runs

        assert self._env is not None
        turn: UserTurn = await self.user.reply(incoming)
        while turn.tool_calls:
            made = [c for c in turn.tool_calls if c.unreadable is None]
            requests = [
                Tau2ToolCall(id=c.id, name=c.name, arguments=dict(c.arguments), requestor="user")
                for c in made
            ]
            if requests:  # a call the user wrote that is no call is answered below, never made in tau2
                self._record(UserMessage(role="user", content=turn.text, tool_calls=requests))
            results = [await self._response(request) for request in requests]
            self._trajectory.extend(results)
            self._steps += 1  # tau2 counts one step for all results of a message (bounds a user's retries)
            self._errors += sum(result.error for result in results)
            self._user_call_errors += len(turn.tool_calls) - len(made)
            if self._limit_reached():
                return await self._finish(None)
            answers = {q.id: r.content or "" for q, r in zip(requests, results, strict=True)}
            turn = await self.user.reply(
                tuple(
                    UserToolResult(
                        c.id, c.name, answers[c.id] if c.unreadable is None else unreadable_result(c)
                    )
                    for c in turn.tool_calls
                )
            )
        if not turn.text or not turn.text.strip():
            # tau2 rejects an empty user message (UserError), which ends the simulation.
            self._termination = USER_ERROR
            return await self._finish(None)
        self._record(UserMessage(role="user", content=turn.text))
        self._user_turns += 1
        said: Message = {"role": "user", "content": turn.text}
        if turn.stops:
            self._termination = USER_STOP
            self._limit_reached()
            return await self._finish(said)
        if self._limit_reached():
            return await self._finish(said)
        return Transition(messages=[said])

    def _record(self, message: Tau2Message) -> None:
        self._trajectory.append(message)
        self._steps += 1

    def _limit_reached(self) -> bool:
        """tau2's orchestrator checks its limits after every step whose message is not for the
        environment, and a limit overrides a stop decided in that same step."""
        if self._steps >= self.config.max_steps:
            self._termination = MAX_STEPS
        elif self._errors >= self.config.max_errors:
            self._termination = TOO_MANY_ERRORS
        return self._termination is not None

    async def _finish(self, last: Message | None) -> Transition:
        evaluation = await asyncio.to_thread(self._evaluate)
        # Read before it is kept: an evaluation without a reward (None, NaN, no key) raises here, the
        # episode's failure naming its task, where `or 0.0` scored it as a wrong answer.
        self._reward = evaluation_reward(evaluation, self.spec.domain, self.spec.task.id)
        self._evaluation = evaluation
        info = {"task_reward": self._reward, "termination_reason": self._termination}
        return Transition(messages=[last] if last else [], done=True, info=info)

    def _evaluate(self) -> dict[str, Any]:
        assert self._termination is not None and self._env is not None
        world = domain_world(self.spec.domain)
        info = evaluate_episode(world, self.spec.task, self._termination, self._trajectory, self._env)
        return info.model_dump(mode="json")

    # ----------------------------------------------------------------------------------- results

    def outcome(self) -> dict[str, Any]:
        task = self.spec.task
        evaluation = self._evaluation or {}
        # An episode tau2's rules never ended (cut off by the loop's limits, aborted, failed: the loop's
        # status says which) has no evaluation and keeps `_reward`'s 0, as tau2 scores max_steps; an
        # evaluated one scores the reward `_finish` read.
        reward = self._reward
        return {
            "domain": self.spec.domain,
            "task_id": task.id,
            "index": self.spec.index,
            "task_reward": reward,
            "accuracy": reward,
            # None unless tau2's rules ended the episode (cut off by the rollout loop's limits, aborted or
            # failed: the loop's status says which); such an episode scores 0, as tau2 scores max_steps.
            "termination_reason": self._termination,
            "terminated": self._evaluation is not None,
            "partial_components": partial_components(evaluation, f"{self.spec.domain} task {task.id!r}"),
            "reward_basis": evaluation.get("reward_basis"),
            "actions": list(self._actions),
            "tool_calls": len(self._actions),
            "tool_errors": self._errors,
            "format_errors": self._format_errors,
            "user_turns": self._user_turns,
            "user_call_errors": self._user_call_errors,
            "reward_info": evaluation,
        }

    def conversation(self) -> list[dict[str, Any]]:
        """The conversation so far as tau2 writes it (JSON), greeting first: what `t3rl_core.score.tau2`
        takes."""
        return [message.model_dump(mode="json") for message in self._trajectory]

    def oracle(self) -> Action | None:
        """The next step of the task's gold plan (`t3rl_core.envs.tau2.oracle`); a step counts as taken
        once the agent made exactly that call, so after a deviation the same step is offered again."""
        if self._termination is not None or self._plan_done >= len(self._plan):
            return None
        call = self._plan[self._plan_done]
        text = json.dumps({"name": call.name, "arguments": call.arguments})
        return ToolCallAction(calls=(call,), text=text)

    def _advance_plan(self, call: ToolCall) -> None:
        if self._plan_done < len(self._plan) and self._plan[self._plan_done] == call:
            self._plan_done += 1


def evaluate_trajectory(
    domain: str,
    task: Task,
    messages: list[Tau2Message],
    termination: str,
    *,
    started: str | None = None,
    duration: float = 0.0,
) -> dict[str, Any]:
    """tau2's `evaluate_simulation` of a finished conversation (tau2 messages, greeting included), as a
    JSON mapping with `reward`, `reward_basis` and each check's info."""
    # lazy: tau2, only when a tau2 episode runs
    from tau2.data_model.simulation import SimulationRun, TerminationReason

    # lazy: tau2, only when a tau2 episode runs
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
    from tau2.utils.utils import get_now  # lazy: tau2, only when a tau2 episode runs

    run = SimulationRun(
        id=str(uuid.uuid4()),
        task_id=task.id,
        start_time=started or get_now(),
        end_time=get_now(),
        duration=duration,
        termination_reason=TerminationReason(termination),
        messages=messages,
    )
    info = evaluate_simulation(
        simulation=run, task=task, evaluation_type=EvaluationType.ALL, solo_mode=False, domain=domain
    )
    return info.model_dump(mode="json")


def evaluation_reward(evaluation: Mapping[str, Any], domain: str, task_id: str) -> float:
    """tau2's reward in an evaluation of task `task_id` (a share); MissingScore naming the task when
    there is none (the key missing, None, NaN, a text) or it is no share."""
    return scored(evaluation, "reward", f"tau2's evaluation of {domain} task {task_id!r}")


def partial_components(evaluation: Mapping[str, Any], task: str = "the task") -> dict[str, float]:
    """Tau2-RL-Pipeline's partial-score components of a reward info: the fraction of gold actions
    matched, of required information communicated, of env assertions met (each present when its list
    is non-empty) and the database match (present when a database check ran). A check whose verdict
    is not a bool (missing, None, NaN) is MissingScore naming `task`: bool() counted it met or not."""
    components: dict[str, float] = {}
    for name, key, flag in (
        ("action", "action_checks", "action_match"),
        ("communicate", "communicate_checks", "met"),
        ("env_assertion", "env_assertions", "met"),
    ):
        checks = evaluation.get(key)
        if checks is None:
            continue
        if not isinstance(checks, list) or not all(isinstance(check, Mapping) for check in checks):
            raise MissingScore(f"tau2's evaluation of {task}: {key!r} is no list of checks")
        if checks:
            met = sum(verdict_flag(check, flag, f"tau2's evaluation of {task}: {key}") for check in checks)
            components[name] = met / len(checks)
    db = evaluation.get("db_check")
    if isinstance(db, Mapping) and "db_match" in db:
        components["db"] = (
            1.0 if verdict_flag(db, "db_match", f"tau2's evaluation of {task}: db_check") else 0.0
        )
    return components


def _unknown_arguments(call: ToolCall) -> str | None:
    """Why a protocol tool's call (`respond`, `done`) has arguments its declaration does not: `done`
    with a `reason` ended the episode and `respond` with an extra key spoke, where a domain tool's
    unknown argument is tau2's error naming it."""
    declared = PROTOCOL_ARGUMENTS.get(call.name)
    extra = sorted(set(call.arguments) - declared) if declared is not None else []
    if not extra:
        return None
    shown = ", ".join(repr(name[:64]) for name in extra[:5]) + (", …" if len(extra) > 5 else "")
    takes = ", ".join(f"`{name}`" for name in sorted(declared or ())) or "no arguments"
    return f"`{call.name}` takes {takes}; it has no argument {shown}."


def _single_call(action: Action) -> tuple[ToolCall | None, str]:
    if isinstance(action, InvalidAction):
        return None, f"The output could not be parsed ({action.error})."
    if isinstance(action, AnswerAction) or not action.calls:
        return None, "Plain text reaches nobody."
    if len(action.calls) > 1:
        return None, f"{len(action.calls)} tool calls in one turn."
    return action.calls[0], ""


class Tau2EnvFactory:
    """Makes one `Tau2Env` per row; the user simulator (and its client) and the generic tools' workers
    are shared by all episodes."""

    def __init__(self, config: Tau2EnvConfig) -> None:
        self.config = config
        self.user: UserSimulator = USER_SIMULATORS.build(config.user)
        self.workers = generic_workers()  # no process before the first generic call

    def __call__(self, task: Mapping[str, Any], mode: Mode) -> Tau2Env:
        if mode not in ("train", "eval"):
            raise ValueError(f"mode must be 'train' or 'eval', got {mode!r}")
        spec = Tau2Task.from_row(task)
        domain = domain_spec(spec.domain)
        session = self.user.session(user_task(spec.task, domain))
        return Tau2Env(spec, domain, session, self.config, mode, self.workers)

    async def aclose(self) -> None:
        self.workers.close()
        await self.user.aclose()


def make_factory(config: Tau2EnvConfig) -> Tau2EnvFactory:
    """Registry factory of `tau2` (t3rl_core.registries.ENVS)."""
    return Tau2EnvFactory(config)
