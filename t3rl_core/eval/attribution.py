"""Whose fault a failed episode is: the agent's, the user simulator's (tau2), or the infrastructure's.

Every failed episode gets `{"party", "kind", "evidence"}` in its record; rules in order, first match:

infrastructure
    engine_failure    the engine never answered (status `aborted`)
    crashed           the episode raised (an env, scorer or network error: status `failed`), unless the
                      user model refused the request itself (below)
    sandbox           ReTool's code sandbox failed to run the code (outcome.sandbox_errors)
    unplayed          cut before the policy's first call (status `truncated`, no model call: a prompt
                      over rollout.max_context_len, a world cut at reset): the model never played
    not_graded        the reward could not grade an answer the protocol read (its metric `graded` is 0:
                      ReTool's math-verify raised or ran past its CPU budget): not a wrong answer
user_simulator (tau2)
    own_error         it sent an empty message (tau2's UserError ends the episode: `user_error`), or its
                      model refused the request (a 4xx from its API, e.g. the conversation outgrew it)
    ended_early       it ended the conversation in its opening message, before the agent could act
    asked_agent_to_act  it asked the agent to perform one of its own gold actions (telecom's device
                      actions are the user's to do, the agent cannot)
    contradicted_scenario  it gave an identifier (user id, email, zip code, phone) of a kind its scenario
                      states, with another value that neither the scenario nor the agent mentioned
agent
    parse             output the protocol could not read (status `parse_error`, format errors in the
                      outcome, or a failed format check of the reward)
    wrong             anything else the checker failed (the evidence says what it saw)

The rules read only the episode record (its status, error, outcome and messages) and its dataset row
(tau2: the task's scenario and gold actions), so they can be rerun on any trajectories file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from t3rl_core.rollout.failures import ENV_ERROR

AGENT, USER_SIMULATOR, INFRASTRUCTURE = "agent", "user_simulator", "infrastructure"
PARTIES = (AGENT, USER_SIMULATOR, INFRASTRUCTURE)
# tau2's stop markers (t3rl_core.envs.tau2.users.STOP_MARKERS; not imported: that module loads tau2's
# protocol types, and attribution runs on any machine that has the trajectories).
STOP_MARKERS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")
# User-role messages the user simulator did not write: tool results (tool_result_role=user) and the
# format error / repair notices (t3rl_core.envs.tau2.env, t3rl_core.envs.format_repair).
NOT_THE_USER = ("Tool result for ", "FORMAT ERROR")
# Errors of the user model's API client that mean the model refused the request (openai's 4xx errors);
# connection errors, timeouts and 5xx are the infrastructure's.
USER_MODEL_REFUSALS = (
    *("BadRequestError", "UnprocessableEntityError", "ContentFilterFinishReasonError"),
    "NoUserReply",  # t3rl_core.envs.tau2.users: its server answered no choice
)
# A request that the agent do something (a bare "please" is not: users say it reporting what they did).
ASKS = re.compile(r"\b(can|could|would|will) you\b|\bfor me\b|\byourself\b|\bon your end\b", re.I)
IDENTIFIERS = {
    "email": re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    "user id": re.compile(r"\b[a-z]+_[a-z]+_\d{3,}\b"),
    "zip code": re.compile(r"(?<=zip code )\d{5}\b|(?<=zip )\d{5}\b", re.I),
    "phone": re.compile(r"\b\d{3}-\d{3}-\d{4}\b"),
}


def attribute(record: Mapping[str, Any], row: Mapping[str, Any] | None = None) -> dict[str, str] | None:
    """The attribution of a failed episode (None for a successful one)."""
    if record.get("success"):
        return None
    found = _infrastructure(record) or _user_simulator(record, row or {}) or _agent(record)
    party, kind, evidence = found
    return {"party": party, "kind": kind, "evidence": _clip(evidence)}


def _infrastructure(record: Mapping[str, Any]) -> tuple[str, str, str] | None:
    status, error = record.get("status"), str(record.get("error") or "")
    if status == "aborted":
        return INFRASTRUCTURE, "engine_failure", error or "the engine gave no answer"
    if status == "failed":
        # The exception's type, after the loop's prefix: read whole, the prefix was the "type" and no
        # user model's refusal was ever told apart from a crash.
        if error.removeprefix(ENV_ERROR).split(":", 1)[0] in USER_MODEL_REFUSALS:
            return USER_SIMULATOR, "own_error", f"its model refused the request: {error}"
        return INFRASTRUCTURE, "crashed", error or "the episode raised"
    if status == "truncated" and record.get("num_model_calls") == 0:
        return INFRASTRUCTURE, "unplayed", error or "the episode was cut before the policy's first call"
    sandbox = (record.get("outcome") or {}).get("sandbox_errors")
    if sandbox:
        return INFRASTRUCTURE, "sandbox", f"{sandbox} code run(s) failed in the sandbox itself"
    return None


def _user_simulator(record: Mapping[str, Any], row: Mapping[str, Any]) -> tuple[str, str, str] | None:
    outcome = record.get("outcome") or {}
    if "termination_reason" not in outcome:
        return None  # not a tau2 episode: there is no user simulator
    if outcome.get("termination_reason") == "user_error":
        return (
            USER_SIMULATOR,
            "own_error",
            "it sent an empty message (tau2 UserError, termination user_error)",
        )
    said = user_messages(record.get("messages") or [])
    if (
        said
        and outcome.get("termination_reason") == "user_stop"
        and _stops(said[0])
        and not _agent_spoke(record)
    ):
        return USER_SIMULATOR, "ended_early", f"its opening message ended the conversation: {said[0]!r}"
    task = _mapping((row.get("metadata") or {}).get("task"))
    for text in said:
        action = _asked_to_act(text, own_actions(task))
        if action is not None:
            return (
                USER_SIMULATOR,
                "asked_agent_to_act",
                f"asked the agent to do its own action {action}: {text!r}",
            )
    return _contradiction(said, record.get("messages") or [], scenario_text(task))


def _agent(record: Mapping[str, Any]) -> tuple[str, str, str]:
    """The agent's fault, or the reward's when it graded no answer the protocol read."""
    outcome = record.get("outcome") or {}
    metrics = record.get("reward_metrics") or {}
    if record.get("status") == "parse_error":
        return AGENT, "parse", str(record.get("error") or "the format repair could not fix a turn")
    if outcome.get("format_errors"):
        return AGENT, "parse", f"{outcome['format_errors']} turn(s) the protocol could not read"
    if "format" in metrics and not metrics["format"]:
        return AGENT, "parse", "the reward's format check failed"
    if metrics.get("graded") == 0:  # read after the agent's parse faults, which no grade would change
        return (
            INFRASTRUCTURE,
            "not_graded",
            f"the reward could not grade the answer (reward {record.get('reward')})",
        )
    seen = [
        f"{key} {outcome[key]}"
        for key in ("failure", "termination_reason", "task_reward", "turns_correct", "turns_total")
        if outcome.get(key) is not None
    ]
    if record.get("status") == "truncated":
        seen.insert(0, "cut off by the episode's step or token budget")
    return AGENT, "wrong", "; ".join(seen) or f"reward {record.get('reward')}"


def user_messages(messages: Iterable[Mapping[str, Any]]) -> list[str]:
    """What the user simulator said, in order (user-role messages that are not tool results or notices)."""
    said = []
    for message in messages:
        content = message.get("content")
        if (
            message.get("role") == "user"
            and isinstance(content, str)
            and not content.startswith(NOT_THE_USER)
        ):
            said.append(content)
    return said


def _stops(text: str) -> bool:
    return any(marker in text for marker in STOP_MARKERS)


def _agent_spoke(record: Mapping[str, Any]) -> bool:
    return any(m.get("role") == "assistant" for m in record.get("messages") or [])


def _mapping(value: Any) -> Mapping[str, Any]:
    """`value` when it is a mapping, else an empty one: the attribution reads a row's task as tau2's
    (mappings of mappings) or not at all. A world reporting a `termination_reason` beside a row whose
    `task` is a text (a verifiers dataset's column) raised AttributeError out of the eval's record: the
    whole eval stopped for one episode."""
    return value if isinstance(value, Mapping) else {}


def own_actions(task: Mapping[str, Any]) -> list[str]:
    """Names of the gold actions the task gives the user to perform (requestor `user`)."""
    actions = _mapping(_mapping(task).get("evaluation_criteria")).get("actions")
    return [
        str(action.get("name", ""))
        for action in (actions if isinstance(actions, list) else [])
        if isinstance(action, Mapping) and action.get("requestor") == "user"
    ]


def _asked_to_act(text: str, actions: list[str]) -> str | None:
    """The user action `text` asks the agent to perform, if it does: a request that names the action
    by the words of its tool name beyond the verb (toggle_airplane_mode → "airplane mode")."""
    if not ASKS.search(text):
        return None
    lowered = text.lower()
    for action in actions:
        words = action.split("_")[1:] or action.split("_")
        if " ".join(words).lower() in lowered:
            return action
    return None


def scenario_text(task: Mapping[str, Any]) -> str:
    """Everything the task tells the user about itself."""
    scenario = _mapping(_mapping(task).get("user_scenario")).get("instructions")
    if isinstance(scenario, Mapping):
        return " ".join(str(value) for value in scenario.values() if value)
    return str(scenario or "")


def _contradiction(
    said: list[str], messages: list[Mapping[str, Any]], scenario: str
) -> tuple[str, str, str] | None:
    if not scenario:
        return None
    others = " ".join(
        str(m.get("content") or "")
        for m in messages
        if m.get("role") != "user" or m.get("content") not in said
    )
    for kind, pattern in IDENTIFIERS.items():
        stated = set(pattern.findall(scenario))
        if not stated:
            continue
        for text in said:
            for value in pattern.findall(text):
                if value not in stated and value not in others:
                    return (
                        USER_SIMULATOR,
                        "contradicted_scenario",
                        f"gave {kind} {value}, its scenario says {', '.join(sorted(stated))}: {text!r}",
                    )
    return None


def _clip(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
