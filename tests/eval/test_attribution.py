"""Whose fault a failed episode is: each rule on a scripted transcript of its kind, and the counts and the
accuracy without user-simulator failures in a summary."""

from __future__ import annotations

import pytest

from t3rl_core.eval.attribution import AGENT, INFRASTRUCTURE, USER_SIMULATOR, attribute
from t3rl_core.eval.metrics import EpisodeScore, summarize

SYSTEM = {"role": "system", "content": "You are a customer service agent ..."}
TASK = {
    "id": "7",
    "user_scenario": {
        "instructions": {
            "reason_for_call": "Your phone has no mobile data.",
            "known_info": "You are John Doe, user id john_doe_1234, email john.doe@example.com, "
            "zip code 12345.",
            "task_instructions": "Do what the agent asks on your device.",
        }
    },
    "evaluation_criteria": {
        "actions": [
            {"name": "toggle_airplane_mode", "arguments": {}, "requestor": "user"},
            {"name": "get_customer_by_id", "arguments": {"customer_id": "C1"}, "requestor": "assistant"},
        ]
    },
}
ROW = {"metadata": {"domain": "telecom", "task": TASK}}


def _tau2(*messages: dict, termination: str = "agent_stop", status: str = "completed", **record) -> dict:
    return {
        "success": False,
        "status": status,
        "reward": 0.0,
        "messages": [SYSTEM, *messages],
        "outcome": {"termination_reason": termination, "task_reward": 0.0, "format_errors": 0},
        **record,
    }


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def agent(text: str) -> dict:
    return {"role": "assistant", "content": text}


CASES = [
    pytest.param(
        _tau2(user("Hi. ###STOP###"), termination="user_stop"),
        (USER_SIMULATOR, "ended_early", "Hi. ###STOP###"),
        id="ended before the task was stated",
    ),
    pytest.param(
        _tau2(
            user("My phone has no mobile data."),
            agent(
                '<tool_call>{"name": "respond", "arguments": {"content": "Please turn airplane mode off."}}'
            ),
            user("Could you turn off the airplane mode for me? I am busy."),
            termination="user_stop",
        ),
        (USER_SIMULATOR, "asked_agent_to_act", "toggle_airplane_mode"),
        id="asked the agent to act for it",
    ),
    pytest.param(
        _tau2(
            user("My phone has no mobile data."),
            agent("Can I have your user id?"),
            user("Sure, it is jane_roe_9876."),
        ),
        (USER_SIMULATOR, "contradicted_scenario", "user id jane_roe_9876, its scenario says john_doe_1234"),
        id="contradicted the scenario",
    ),
    pytest.param(
        _tau2(user("My phone has no mobile data."), agent("..."), termination="user_error"),
        (USER_SIMULATOR, "own_error", "empty message"),
        id="hit its own error (empty message)",
    ),
    pytest.param(
        _tau2(status="failed", error="BadRequestError: context length exceeded"),
        (USER_SIMULATOR, "own_error", "refused the request"),
        id="its model refused the request",
    ),
    pytest.param(
        _tau2(status="failed", error="APIConnectionError: Connection refused"),
        (INFRASTRUCTURE, "crashed", "Connection refused"),
        id="user model server down",
    ),
    pytest.param(
        _tau2(status="aborted", error="the engine gave up after 3 attempts"),
        (INFRASTRUCTURE, "engine_failure", "3 attempts"),
        id="engine failure",
    ),
    pytest.param(
        _tau2(
            user("My phone has no mobile data. My user id is john_doe_1234."),
            agent("I have reset your line."),
            user("Thanks! ###STOP###"),
            termination="user_stop",
        ),
        (AGENT, "wrong", "termination_reason user_stop"),
        id="agent: a well-behaved user, the checker failed the agent",
    ),
    pytest.param(
        _tau2(user("My phone has no mobile data."), status="parse_error", error="the format repair failed"),
        (AGENT, "parse", "format repair"),
        id="agent: unreadable output",
    ),
]


@pytest.mark.parametrize(("record", "expected"), CASES)
def test_each_kind_of_failure_is_attributed_with_its_evidence(record: dict, expected: tuple) -> None:
    party, kind, evidence = expected
    found = attribute(record, ROW)
    assert (found["party"], found["kind"]) == (party, kind), found
    assert evidence in found["evidence"]


def test_a_user_repeating_what_the_agent_said_contradicts_nothing() -> None:
    record = _tau2(
        user("My phone has no mobile data."),
        agent("I found the account of jane_roe_9876, is that you?"),
        user("Yes, jane_roe_9876 is me."),
    )
    assert attribute(record, ROW)["party"] == AGENT


def test_reporting_an_own_action_politely_is_no_request() -> None:
    record = _tau2(user("My phone has no mobile data."), user("Please wait, I turned airplane mode off."))
    assert attribute(record, ROW)["party"] == AGENT


def test_asking_the_agent_for_its_own_actions_is_no_fault() -> None:
    record = _tau2(user("My phone has no mobile data. Can you check my customer record please?"))
    assert attribute(record, ROW)["party"] == AGENT


def test_successes_get_no_attribution_and_other_envs_no_user_rules() -> None:
    assert attribute({"success": True, "status": "completed"}) is None
    bfcl = {"success": False, "status": "completed", "outcome": {"format_errors": 2, "failure": "x"}}
    assert attribute(bfcl)["kind"] == "parse"
    retool = {"success": False, "status": "completed", "outcome": {"sandbox_errors": 1}, "reward_metrics": {}}
    assert attribute(retool)["party"] == INFRASTRUCTURE
    toolrl = {"success": False, "status": "completed", "outcome": {}, "reward_metrics": {"format": 0.0}}
    assert attribute(toolrl)["kind"] == "parse"


def test_the_summary_counts_failures_by_party_and_drops_user_simulator_failures() -> None:
    def score(
        task: str, success: bool, party: str | None = None, kind: str | None = None, status="completed"
    ):
        return EpisodeScore(task, "tau2_airline", success, float(success), None, status, party, kind)

    scores = [
        score("a", True),
        score("b", False, AGENT, "wrong"),
        score("c", False, USER_SIMULATOR, "ended_early"),
        score("d", False, AGENT, "parse"),
        score("e", False, INFRASTRUCTURE, "engine_failure", status="aborted"),
    ]
    block = summarize(scores, [1])["overall"]
    assert block["failures"] == {"agent": 1, "parse": 1, "user_simulator": 1, "infrastructure": 1}
    assert block["accuracy"] == pytest.approx(1 / 4)  # the aborted episode is not scored
    assert block["accuracy_without_user_simulator"] == pytest.approx(1 / 3)
