"""The scripted tau2 user acts on its device only on a request it can read, with the agent's own
arguments: naming a tool, forbidding it or writing a call it cannot parse makes it do nothing (in
training, a lenient user would hand the policy the gold action for any mention of a tool's name)."""

from __future__ import annotations

import asyncio

import pytest

from t3rl_core.envs.tau2.users import ScriptedUser, ScriptedUserConfig, UserTask, requested_calls


def _tool(name: str) -> dict:
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": {}}},
    }


TOOLS = {"set_network_mode_preference", "toggle_airplane_mode"}


@pytest.mark.parametrize(
    "text",
    [
        "Please do NOT touch set_network_mode_preference(mode='2g_only'), it is fine as it is.",
        "You should never run toggle_airplane_mode() while we talk.",
        "Don't call set_network_mode_preference(mode='4g_5g_preferred') yet.",
        "I will check whether set_network_mode_preference is the problem.",  # a name, no request
        "Run set_network_mode_preference(mode=4g_preferred) please.",  # not a literal: unreadable
        "Run set_network_mode_preference('4g_5g_preferred').",  # positional: whose argument?
        "Run set_network_mode_preference(mode='4g'",  # never closed
        "Run reboot_device() now.",  # not one of the user's tools
    ],
)
def test_no_readable_request_no_device_action(text):
    assert requested_calls(text, TOOLS) == []


def test_the_agents_arguments_are_used_in_order_and_a_forbidden_call_is_left_out():
    text = (
        "Please do this on your device: set_network_mode_preference(mode='3g_only'). "
        "Then toggle_airplane_mode(), but not set_network_mode_preference(mode='2g_only')."
    )
    assert requested_calls(text, TOOLS) == [
        ("set_network_mode_preference", {"mode": "3g_only"}),
        ("toggle_airplane_mode", {}),
    ]
    # Literal values of every kind, and parentheses inside a string argument.
    nested = "Run set_network_mode_preference(mode='a (b)', retries=2, force=True, bands=[1, 3])."
    assert requested_calls(nested, TOOLS) == [
        ("set_network_mode_preference", {"mode": "a (b)", "retries": 2, "force": True, "bands": [1, 3]})
    ]


def test_a_session_answers_a_forbidding_agent_in_words_and_a_requesting_one_with_its_calls():
    task = UserTask(
        system_prompt="",
        instructions={"reason_for_call": "You have no internet.", "known_info": ""},
        tools=[_tool(name) for name in sorted(TOOLS)],
    )
    user = ScriptedUser(ScriptedUserConfig()).session(task)

    async def conversation():
        await user.reply("Hi! How can I help?")
        forbidden = await user.reply("Do NOT touch set_network_mode_preference(mode='2g_only').")
        asked = await user.reply("Please run set_network_mode_preference(mode='2g_only') on your phone.")
        return forbidden, asked

    forbidden, asked = asyncio.run(conversation())
    assert not forbidden.tool_calls and forbidden.stops
    assert [(c.name, c.arguments) for c in asked.tool_calls] == [
        ("set_network_mode_preference", {"mode": "2g_only"})
    ]
