"""User simulators: the scripted user's rules, and the LLM user speaking OpenAI's chat API to a local
HTTP server (which plays a telecom customer who first checks their phone)."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web

from t3rl_core.envs.tau2.config import Tau2EnvConfig
from t3rl_core.envs.tau2.env import make_factory
from t3rl_core.envs.tau2.users import (
    LLMUser,
    LLMUserConfig,
    ScriptedUser,
    ScriptedUserConfig,
    UserTask,
    UserToolResult,
    first_person,
)
from t3rl_core.secret import SecretResolutionError
from t3rl_core.types import ToolCall, ToolCallAction


def test_first_person_turns_the_scenario_into_the_customers_words():
    assert first_person("You are Emma Kim. Your user id is emma_kim_9957.") == (
        "I am Emma Kim. My user id is emma_kim_9957."
    )
    assert first_person("It is ok because you were away, and you want a refund for yourself.") == (
        "It is ok because I was away, and I want a refund for myself."
    )
    assert first_person("If the agent asks you, say yes.") == "If the agent asks me, say yes."


DEVICE_TOOL = {"type": "function", "function": {"name": "toggle_airplane_mode", "parameters": {}}}


def test_scripted_user_rules_in_order():
    task = UserTask(
        system_prompt="",
        instructions={
            "reason_for_call": "You want to fix your phone.",
            "known_info": "You are Ann. Your id is 7.",
        },
        tools=[DEVICE_TOOL],
    )
    user = ScriptedUser(ScriptedUserConfig()).session(task)

    async def conversation():
        opening = await user.reply("Hi! How can I help you today?")
        details = await user.reply("Who am I speaking with?")
        confirm = await user.reply("Shall I proceed with the refund?")
        device = await user.reply("Please run toggle_airplane_mode() on your phone.")
        result = await user.reply(
            (UserToolResult("user_call_1", "toggle_airplane_mode", "Airplane mode off"),)
        )
        again = await user.reply("Please run toggle_airplane_mode() again.")  # whatever the gold plan says
        done = await user.reply("Is there anything else?")
        return opening, details, confirm, device, result, again, done

    opening, details, confirm, device, result, again, done = asyncio.run(conversation())
    assert opening.text == "I want to fix my phone."
    assert details.text == "I am Ann. My id is 7."  # all known info at once
    assert confirm.text == "Yes, please go ahead."
    assert device.text is None and [(c.name, c.arguments) for c in device.tool_calls] == [
        ("toggle_airplane_mode", {})
    ]
    assert result.text == "toggle_airplane_mode: Airplane mode off"
    assert [c.id for c in again.tool_calls] == ["user_call_2"]
    assert done.stops and done.text.endswith("###STOP###")


def test_llm_user_config_takes_a_key_reference_never_a_key(monkeypatch):
    with pytest.raises(ValueError, match="reference to a credential") as rejected:
        LLMUserConfig(base_url="http://x/v1", model="m", api_key="sk-live-1234")
    assert "sk-live-1234" not in str(rejected.value)
    monkeypatch.delenv("T3RL_TEST_USER_KEY", raising=False)
    with pytest.raises(SecretResolutionError, match="T3RL_TEST_USER_KEY is not set"):
        LLMUser(LLMUserConfig(base_url="http://x/v1", model="m", api_key="env:T3RL_TEST_USER_KEY"))


class FakeChatServer:
    """POST /v1/chat/completions: replays canned assistant messages and records each request."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests = []

    async def handle(self, request):
        body = await request.json()
        self.requests.append({"body": body, "authorization": request.headers.get("Authorization")})
        message = self.replies.pop(0)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return web.json_response(
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )


@pytest.mark.slow
def test_llm_user_drives_a_telecom_episode_through_an_openai_compatible_server(base_rows, monkeypatch):
    monkeypatch.setenv("T3RL_TEST_USER_KEY", "local-secret")
    status_call = {
        "id": "call_u1",
        "type": "function",
        "function": {"name": "check_status_bar", "arguments": "{}"},
    }
    server = FakeChatServer(
        [
            {"content": "My phone has no internet.", "tool_calls": None},
            {"content": None, "tool_calls": [status_call]},
            {"content": "The status bar shows no data icon.", "tool_calls": None},
        ]
    )
    row = next(iter(base_rows["telecom"].values()))

    async def episode():
        app = web.Application()
        app.router.add_post("/v1/chat/completions", server.handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        user = {
            "name": "llm",
            "base_url": f"http://127.0.0.1:{port}/v1",
            "model": "user-sim",
            "temperature": 0.7,
            "api_key": "env:T3RL_TEST_USER_KEY",
            "extra_body": {"chat_template_kwargs": {"enable_thinking": False}},
        }
        factory = make_factory(Tau2EnvConfig.model_validate({"user": user}))
        try:
            env = factory(row, "train")
            opening = await env.reset()
            reply = await env.step(
                ToolCallAction(calls=(ToolCall("respond", {"content": "What do you see?"}),), text="")
            )
            end = await env.step(ToolCallAction(calls=(ToolCall("done", {}),), text=""))
            return env, opening, reply, end
        finally:
            await factory.aclose()
            await runner.cleanup()

    env, opening, reply, end = asyncio.run(episode())
    assert opening.messages == [{"role": "user", "content": "My phone has no internet."}]
    # The user's own tool call ran on tau2's device, and only the user saw its result.
    assert reply.messages == [{"role": "user", "content": "The status bar shows no data icon."}]
    assert end.done and env.outcome()["termination_reason"] == "agent_stop"

    first, second, third = (r["body"] for r in server.requests)
    assert all(r["authorization"] == "Bearer local-secret" for r in server.requests)
    assert first["model"] == "user-sim" and first["temperature"] == 0.7
    assert first["chat_template_kwargs"] == {"enable_thinking": False}  # extra_body is merged in
    assert {t["function"]["name"] for t in first["tools"]} >= {"check_status_bar", "toggle_airplane_mode"}
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert "<scenario>" in first["messages"][0]["content"]
    assert first["messages"][1]["content"] == "Hi! How can I help you today?"
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    assert second["messages"][3]["content"] == "What do you see?"
    tool_turn = third["messages"][-1]
    assert tool_turn["role"] == "tool" and tool_turn["tool_call_id"] == "call_u1"
    assert tool_turn["content"].startswith("Status Bar:")  # the device's status, as tau2 returned it
    assert third["messages"][-2]["tool_calls"][0]["function"]["name"] == "check_status_bar"
