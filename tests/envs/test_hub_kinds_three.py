"""Kinds of what a third-party OpenEnv server can hand t3rl over its session, each answered by a server
written in the test (a bare WebSocket server speaking, or not, OpenEnv's protocol): an answer of
another protocol, a reward that is no finite number, `done` that is no boolean, an observation that is
no object, text that is no JSON, a session closed mid-episode, a step that never answers. Each fails
the episode naming the server, the request and what it answered; before, each was read as an empty
observation, summed into the score, or raised the library's own error.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

from t3rl_core.envs.openenv.boundary import OpenEnvProtocolError
from t3rl_core.envs.openenv.config import OpenEnvEnvConfig
from t3rl_core.envs.openenv.env import OpenEnvEpisode
from t3rl_core.types import ToolCall, ToolCallAction

START = json.dumps(
    {"type": "observation", "data": {"observation": {"text": "start"}, "reward": None, "done": False}}
)


def answer(reward: Any = 1.0, done: Any = True, observation: Any = None) -> str:
    data = {"observation": {"text": "moved"} if observation is None else observation, "reward": reward}
    return json.dumps({"type": "observation", "data": data | {"done": done}})


# What the server answers to the episode's step (its reset answers START); a callable acts on the session.
Reply = str | Callable[[ServerConnection], Any]


def play(step_reply: Reply, reset_reply: Reply = START, timeout_s: float | None = None) -> Any:
    """One episode against a server answering reset and one step as given: the step's Transition and the
    outcome, or the exception the episode raised."""

    async def handler(session: ServerConnection) -> None:
        async for raw in session:
            kind = json.loads(raw).get("type")
            reply = {"reset": reset_reply, "step": step_reply}.get(kind)
            if reply is None:
                continue
            if callable(reply):
                await reply(session)
                return
            await session.send(reply)

    async def go() -> Any:
        async with serve(handler, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            url = f"http://127.0.0.1:{port}"
            episode = OpenEnvEpisode(url, OpenEnvEnvConfig(url=url), {"seed": 0})
            try:
                await episode.reset()
                if timeout_s is not None:
                    assert episode.client is not None
                    episode.client._message_timeout = timeout_s
                step = await episode.step(ToolCallAction(calls=[ToolCall("step", {"kind": "x"})], text=""))
                return step, episode.outcome()
            except Exception as exc:  # the episode's failure, as the loop sees it
                return exc
            finally:
                await episode.aclose()

    return asyncio.run(go())


def test_a_well_formed_server_plays() -> None:
    """The bare server speaking OpenEnv's protocol is played as create_app's is (the cases below differ
    from it in one answer)."""
    step, outcome = play(answer(reward=1.0))
    assert step.done and outcome["reward"] == 1.0 and outcome["turn_rewards"] == [1.0]
    step, outcome = play(answer(reward=None, done=False))
    assert not step.done and outcome["reward"] == 0 and outcome["truncated"]


WRONG = {
    "NaN reward": (answer(reward=float("nan")), r"reward float nan: a reward is a finite number or null"),
    "infinite reward": (answer(reward=float("inf")), r"reward float inf"),
    "text reward": (answer(reward="0.5"), r"reward str '0.5'"),
    "list reward": (answer(reward=[1]), r"reward list \[1\]"),
    "done as text": (answer(done="false"), r"done str 'false', not true or false"),
    "done missing": (json.dumps({"type": "observation", "data": {"observation": {}}}), r"done NoneType"),
    "observation as text": (answer(observation="moved"), r"observation str 'moved', not an object"),
    "observation as list": (answer(observation=["a"]), r"observation list"),
    "another protocol": (json.dumps({"result": {"obs": "moved"}}), r"step with type NoneType None where"),
    "another message type": (json.dumps({"type": "obs", "data": {}}), r"step with type str 'obs' where"),
    "a list": (json.dumps([1, 2]), r"answered step with list \[1, 2\] where"),
    "data no object": (json.dumps({"type": "observation", "data": "moved"}), r"data str 'moved', no object"),
    "no JSON": ("<html>proxy</html>", r"answered step with no JSON"),
    "closed mid-episode": (lambda session: session.close(), r"closed the session during step"),
}


@pytest.mark.parametrize("kind", list(WRONG))
def test_an_answer_no_openenv_server_gives_fails_the_episode(kind: str) -> None:
    reply, expected = WRONG[kind]
    failure = play(reply)
    assert isinstance(failure, OpenEnvProtocolError), failure
    assert "the OpenEnv server at http://127.0.0.1:" in str(failure)
    assert "the environment's failure, not the model's" in str(failure)
    assert re.search(expected, str(failure)), str(failure)


def test_a_wrong_reset_answer_fails_before_the_model_acts() -> None:
    failure = play(answer(), reset_reply=answer(observation="start", done=False))
    assert isinstance(failure, OpenEnvProtocolError)
    assert "answered reset with observation str 'start'" in str(failure)


def test_a_step_that_never_answers_fails_the_episode_at_the_clients_timeout() -> None:
    """The server holds the session open and never answers: the client's message timeout (OpenEnv's 60 s,
    shortened here) ends the episode with the request named, not asyncio's bare TimeoutError."""

    async def hang(session: ServerConnection) -> None:
        await session.wait_closed()

    failure = play(hang, timeout_s=0.2)
    assert isinstance(failure, OpenEnvProtocolError), failure
    assert "did not answer step within 0.2 s (the environment hangs)" in str(failure)


def test_the_client_mode_of_the_machine_does_not_change_the_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    """OPENENV_CLIENT_MODE selects OpenEnv's MCP protocol for its clients; t3rl plays the Gym-style one, so
    a value of it (even one OpenEnv refuses) does not fail every episode."""
    monkeypatch.setenv("OPENENV_CLIENT_MODE", "mcp")
    _, outcome = play(answer(reward=0.5))
    assert outcome["reward"] == 0.5
