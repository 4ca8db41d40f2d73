"""Kinds of what a third-party OpenEnv server can hand t3rl over its session, each answered by a server
written in the test (a bare WebSocket server speaking, or not, OpenEnv's protocol): an answer of
another protocol, a reward that is no finite number, `done` that is no boolean, an observation that is
no object, text that is no JSON, a session closed mid-episode, a step that never answers. Each fails
the episode naming the server, the request and what it answered; before, each was read as an empty
observation, summed into the score, or raised the library's own error. And rows prepared against
another release of the environment (same action schema, another published version) do not start.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import uvicorn
from websockets.asyncio.server import ServerConnection, serve

from t3rl_core.envs.openenv.config import OpenEnvEnvConfig
from t3rl_core.envs.unavailable import WorldUnavailable
from t3rl_core.envs.verifiers.config import VerifiersEnvConfig
from t3rl_core.eval.identity import env_record
from t3rl_core.types import AnswerAction, ToolCall, ToolCallAction

if TYPE_CHECKING:
    from openenv.core.env_server import Action, Environment, Observation

# openenv and verifiers (and t3rl's modules that import them: boundary, data, env) are imported in the tests
# that use them: ~4 s per process, and every xdist worker collects this module.

START = json.dumps(
    {"type": "observation", "data": {"observation": {"text": "start"}, "reward": None, "done": False}}
)


def answer(reward: Any = 1.0, done: Any = True, observation: Any = None) -> str:
    data = {"observation": {"text": "moved"} if observation is None else observation, "reward": reward}
    return json.dumps({"type": "observation", "data": data | {"done": done}})


# What the server answers to the episode's step (its reset answers START); a callable acts on the session.
Reply = str | Callable[[ServerConnection], Any]


def play(step_reply: Reply, reset_reply: Reply = START, timeout_s: float | None = None, **env: Any) -> Any:
    """One episode against a server answering reset and one step as given: the step's Transition and the
    outcome, or the exception the episode raised."""
    from t3rl_core.envs.openenv.env import OpenEnvEpisode

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
            episode = OpenEnvEpisode(url, OpenEnvEnvConfig(url=url, **env), {"seed": 0})
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
    from t3rl_core.envs.openenv.boundary import OpenEnvProtocolError

    failure = play(reply)
    assert isinstance(failure, OpenEnvProtocolError), failure
    assert "the OpenEnv server at http://127.0.0.1:" in str(failure)
    assert "the environment's failure, not the model's" in str(failure)
    assert re.search(expected, str(failure)), str(failure)


def test_a_huge_observation_fails_the_episode_before_it_is_tokenized() -> None:
    """An observation past env.max_observation_chars (a page, a screenshot as base64) is the
    environment's failure: its tokens would take minutes and overflow any context at the engine."""
    from t3rl_core.envs.openenv.boundary import OpenEnvProtocolError

    failure = play(answer(observation={"text": "x" * 5000}), max_observation_chars=4096)
    assert isinstance(failure, OpenEnvProtocolError), failure
    assert (
        "answered step with an observation of 5,000 characters, more than env.max_observation_chars=4,096"
        in str(failure)
    )
    step, _ = play(answer(observation={"text": "x" * 4096}), max_observation_chars=4096)
    assert step.messages[0]["content"] == "x" * 4096  # at the limit it is shown whole


def test_a_wrong_reset_answer_fails_before_the_model_acts() -> None:
    from t3rl_core.envs.openenv.boundary import OpenEnvProtocolError

    failure = play(answer(), reset_reply=answer(observation="start", done=False))
    assert isinstance(failure, OpenEnvProtocolError)
    assert "answered reset with observation str 'start'" in str(failure)


def test_a_step_that_never_answers_fails_the_episode_at_the_clients_timeout() -> None:
    """The server holds the session open and never answers: the client's message timeout (OpenEnv's 60 s,
    shortened here) ends the episode with the request named, not asyncio's bare TimeoutError."""
    from t3rl_core.envs.openenv.boundary import OpenEnvProtocolError

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


# The release the served environment publishes (its get_metadata), changed by the test as a redeploy would.
RELEASE = {"version": "1.0.0"}


def _released_env() -> tuple[type[Environment], type[Action], type[Observation]]:
    """An environment whose published version is RELEASE's, with its action and observation (classes of
    openenv's, made when the server starts)."""
    from openenv.core.env_server import Action, Environment, Observation, State
    from openenv.core.env_server.types import EnvironmentMetadata

    class Act(Action):
        kind: str

    class Seen(Observation):
        text: str

    class Released(Environment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Seen:
            return Seen(text="start", done=False)

        def step(self, action: Act, timeout_s: float | None = None, **kwargs: Any) -> Seen:
            return Seen(text="moved", done=True, reward=1.0)

        @property
        def state(self) -> State:
            return State(episode_id="e", step_count=0)

        def get_metadata(self) -> EnvironmentMetadata:
            return EnvironmentMetadata(name="released", description="d", version=RELEASE["version"])

    return Released, Act, Seen


@pytest.fixture
def released_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The environment served by uvicorn in this process, as create_app serves it."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    from openenv.core.env_server import create_app

    monkeypatch.setitem(RELEASE, "version", "1.0.0")
    app = create_app(*_released_env(), env_name="released", max_concurrent_envs=4)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not (server.started and server.servers) and thread.is_alive():
        time.sleep(0.05)
    yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    server.should_exit = True
    thread.join()


def test_rows_of_another_release_of_the_environment_do_not_start(
    released_server: str, tmp_path: Path
) -> None:
    """The environment was redeployed with the same action schema since the data was prepared: its
    rewards and dynamics may differ, so the rows (and a result on them) are of another environment."""
    from t3rl_core.envs.openenv.data import prepare as openenv_prepare
    from t3rl_core.envs.openenv.env import OpenEnvEpisode, OpenEnvFactory

    config = OpenEnvEnvConfig(url=released_server)
    rows = openenv_prepare(config, tmp_path)["openenv_eval"].read_text().splitlines()
    row = json.loads(rows[0])
    assert row["metadata"]["openenv_release"] == {"name": "released", "version": "1.0.0"}
    assert isinstance(OpenEnvFactory(config)(row, "eval"), OpenEnvEpisode)
    RELEASE["version"] = "1.1.0"
    with pytest.raises(
        WorldUnavailable, match=r"prepared against released 1\.0\.0 and the server now runs released 1\.1\.0"
    ):
        OpenEnvFactory(config)(row, "eval")
    again = json.loads(
        openenv_prepare(config, tmp_path / "again")["openenv_eval"].read_text().splitlines()[0]
    )
    assert again != row  # another split file: an eval on it is another benchmark (its data part)
    assert isinstance(OpenEnvFactory(config)(again, "eval"), OpenEnvEpisode)
    del row["metadata"]["openenv_release"]  # rows of an older t3rl: nothing to compare
    assert isinstance(OpenEnvFactory(config)(row, "eval"), OpenEnvEpisode)


def first_episode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, **config: Any) -> Any:
    """The episode of the first eval row of a verifiers environment installed from `source` as module
    `config["id"]`."""
    from t3rl_core.envs.verifiers.data import prepare as verifiers_prepare
    from t3rl_core.envs.verifiers.env import VerifiersEnvFactory

    (tmp_path / f"{config['id']}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    env_config = VerifiersEnvConfig(**config)
    rows = verifiers_prepare(env_config, tmp_path / "out")["verifiers_eval"].read_text().splitlines()
    return VerifiersEnvFactory(env_config)(json.loads(rows[0]), "eval")


# A MultiTurnEnv whose env_response never answers (a remote call without a timeout).
HANGING = """
import asyncio
import verifiers as vf
from datasets import Dataset

class Hanging(vf.MultiTurnEnv):
    async def env_response(self, messages, state, **kwargs):
        await asyncio.Event().wait()

def load_environment():
    return Hanging(dataset=Dataset.from_list([{"question": "q", "answer": "a"}]), max_turns=3,
                   rubric=vf.Rubric(funcs=[lambda completion: 1.0]))
"""


def test_a_verifiers_environment_that_hangs_fails_the_episode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verifiers bounds nothing unless the environment sets timeout_seconds: the episode (and the eval)
    waited forever. env.step_timeout_s ends it as the environment's failure, its rollout cancelled."""
    from t3rl_core.envs.verifiers.env import EnvHung

    env = first_episode(tmp_path, monkeypatch, HANGING, id="vf_hanging_env", step_timeout_s=0.2)

    async def go() -> Any:
        await env.reset()
        try:
            await env.step(AnswerAction(text="a"))
        except EnvHung as exc:
            assert env._rollout is not None
            await asyncio.sleep(0)  # the cancelled rollout task ends
            return exc, env._rollout.cancelled()
        finally:
            await env.aclose()

    failure, cancelled = asyncio.run(go())
    assert "environment 'vf_hanging_env' did not answer within 0.2 s of the model's turn" in str(failure)
    assert "raise env.step_timeout_s" in str(failure) and cancelled


def test_how_long_t3rl_waits_is_not_what_the_environment_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """env.step_timeout_s is left out of an eval's identity (an episode it cuts fails, unscored)."""
    (tmp_path / "vf_waited_env.py").write_text(HANGING)
    monkeypatch.syspath_prepend(str(tmp_path))
    first, second = (VerifiersEnvConfig(id="vf_waited_env", step_timeout_s=s) for s in (60, 600))
    assert env_record(first) == env_record(second)
    other_rows = VerifiersEnvConfig(id="vf_waited_env", data={"eval_split": "mine"})
    assert env_record(first) == env_record(other_rows)  # its data is the data part's
    (tmp_path / "vf_waited_other.py").write_text(HANGING)
    assert env_record(first) != env_record(VerifiersEnvConfig(id="vf_waited_other"))


# A MultiTurnEnv whose env_response returns what `reply` names: no list of chat messages.
ODD_REPLY = """
import verifiers as vf
from datasets import Dataset

class Odd(vf.MultiTurnEnv):
    async def env_response(self, messages, state, **kwargs):
        return self.reply

def load_environment(reply: str = "int"):
    env = Odd(dataset=Dataset.from_list([{"question": "q", "answer": "a"}]), max_turns=3,
              rubric=vf.Rubric(funcs=[lambda completion: 1.0]))
    env.reply = {"int": 5, "none": None, "no role": [{"content": "x"}]}[reply]
    return env
"""


@pytest.mark.parametrize(("reply", "raised"), [("int", "TypeError"), ("no role", "KeyError: 'role'")])
def test_a_verifiers_reply_that_is_no_message_fails_the_episode_named(
    reply: str, raised: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verifiers lets the exception through its rollout: the episode failed with a bare KeyError or
    TypeError from verifiers' internals, naming neither the environment nor whose failure it is."""
    from t3rl_core.envs.verifiers.env import EnvCrashed

    env = first_episode(tmp_path, monkeypatch, ODD_REPLY, id="vf_odd_reply", args={"reply": reply})

    async def go() -> Exception:
        await env.reset()
        try:
            await env.step(AnswerAction(text="a"))
        except Exception as exc:
            return exc
        finally:
            await env.aclose()
        raise AssertionError("the step did not fail")

    failure = asyncio.run(go())
    assert isinstance(failure, EnvCrashed), repr(failure)
    assert f"environment 'vf_odd_reply' raised {raised}" in str(failure)
    assert "the environment's failure, not the model's" in str(failure)


SCORED_ENV = """
import verifiers as vf
from datasets import Dataset

def load_environment():
    rows = Dataset.from_list([{"question": "q", "answer": "a"}])
    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[lambda completion: 1.0]))
"""


def _release(root: Path, monkeypatch: pytest.MonkeyPatch, version: str) -> VerifiersEnvConfig:
    """Module vf_released_env installed under `root` as pip installs release `version` of its package."""
    site = root / "site"
    (site / f"vf_released_env-{version}.dist-info").mkdir(parents=True)
    (site / "vf_released_env.py").write_text(SCORED_ENV)
    metadata = f"Metadata-Version: 2.1\nName: vf_released_env\nVersion: {version}\n"
    (site / f"vf_released_env-{version}.dist-info" / "METADATA").write_text(metadata)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "vf_released_env", raising=False)
    importlib.invalidate_caches()
    return VerifiersEnvConfig(id="vf_released_env")


def test_rows_of_another_release_of_a_verifiers_environment_do_not_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The environment was upgraded since the data was prepared: its rubric (and what the rows hold)
    may differ, so the rows are of another environment; they played as if nothing had changed."""
    from t3rl_core.envs.verifiers.data import prepare as verifiers_prepare
    from t3rl_core.envs.verifiers.env import VerifiersEnvFactory

    config = _release(tmp_path / "a", monkeypatch, "0.1.2")
    row = json.loads(
        verifiers_prepare(config, tmp_path / "out")["verifiers_eval"].read_text().splitlines()[0]
    )
    assert row["metadata"]["verifiers_release"] == {"package": "vf_released_env", "version": "0.1.2"}
    assert VerifiersEnvFactory(config)(row, "eval") is not None
    monkeypatch.undo()
    config = _release(tmp_path / "b", monkeypatch, "0.1.3")
    with pytest.raises(
        WorldUnavailable,
        match=r"prepared from vf_released_env 0\.1\.2 and vf_released_env 0\.1\.3 is installed",
    ):
        VerifiersEnvFactory(config)(row, "eval")
    del row["metadata"]["verifiers_release"]  # rows of an older t3rl: nothing to compare
    assert VerifiersEnvFactory(config)(row, "eval") is not None
