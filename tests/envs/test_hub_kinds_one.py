"""Hub environments that break the contract in ways no issue named: each is refused where it crosses into
t3rl, with a message naming what is wrong. The environments are written in the test, in verifiers' or
OpenEnv's own terms, as a hub would publish them."""

from __future__ import annotations

import asyncio
import http.server
import json
import socket
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from launch.cli.app import app
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RuntimeConfig
from t3rl_core.envs.openenv.config import OpenEnvEnvConfig
from t3rl_core.envs.openenv.server import EnvServerError
from t3rl_core.envs.unavailable import WorldUnavailable
from t3rl_core.envs.verifiers.config import VerifiersEnvConfig
from t3rl_core.types import AnswerAction, ToolCall, ToolCallAction
from tests.support.inprocess_server import serving

if TYPE_CHECKING:
    from openenv.core.env_server import Action, Environment, Observation

# verifiers and openenv (and what t3rl imports of them: its data, env and rescore modules) are imported in
# the tests that use them: ~4 s per process, and every xdist worker collects this module.

# A SingleTurnEnv whose one reward function returns what `kind` names (or raises).
SCORED = """
import verifiers as vf
from datasets import Dataset

def load_environment(kind: str = "one", rows: int = 2):
    def score(completion) -> float:
        if kind == "raise":
            raise ZeroDivisionError("division by zero")
        return {"one": 1.0, "nan": float("nan"), "inf": float("inf"), "none": None, "text": "high"}[kind]
    data = Dataset.from_list([{"question": "q", "answer": "a"}] * rows)
    return vf.SingleTurnEnv(dataset=data, rubric=vf.Rubric(funcs=[score]))
"""


def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> str:
    """Install `source` as the environment module `name` (an installed hub env imports by name)."""
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)  # imported again from this test's file
    return name


def play(config: VerifiersEnvConfig, out: Path) -> dict[str, Any]:
    """One episode of the first eval row, answered with the dataset's answer; the env's outcome."""
    from t3rl_core.envs.verifiers.data import prepare
    from t3rl_core.envs.verifiers.env import VerifiersEnvFactory

    row = json.loads(prepare(config, out)["verifiers_eval"].read_text().splitlines()[0])
    factory = VerifiersEnvFactory(config)

    async def go() -> dict[str, Any]:
        env = factory(row, "eval")
        await env.reset()
        await env.step(AnswerAction(text="a"))
        await env.finish()
        return env.outcome()

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("nan", r"reward function 'score' returned nan"),
        ("inf", r"reward function 'score' returned inf"),
        ("none", r"reward function 'score' returned NoneType None, not a number"),
        ("text", r"reward function 'score' returned str 'high', not a number"),
        ("raise", r"reward function 'score' raised ZeroDivisionError: division by zero"),
    ],
)
def test_a_rubric_that_scores_no_number_fails_the_episode(
    kind: str, words: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verifiers scores a raising or None-returning function 0.0 with a log line: trained on as a zero."""
    name = module(tmp_path, monkeypatch, f"vf_scored_{kind}", SCORED)
    config = VerifiersEnvConfig(id=name, args={"kind": kind})
    with pytest.raises(ValueError, match=f"environment '{name}'.*{words}"):
        play(config, tmp_path / "out")


# A MultiTurnEnv whose env_response raises one of verifiers' errors (verifiers records it, ends the rollout
# and lets the rubric score it).
RAISING = """
import verifiers as vf
from datasets import Dataset

class Raising(vf.MultiTurnEnv):
    async def env_response(self, messages, state, **kwargs):
        raise getattr(vf.errors, self.error)("the sandbox went away")

def load_environment(error: str = "SandboxError"):
    env = Raising(dataset=Dataset.from_list([{"question": "q", "answer": "a"}]), max_turns=3,
                  rubric=vf.Rubric(funcs=[lambda completion: 0.0]))
    env.error = error
    return env
"""


def test_an_infrastructure_error_of_the_environment_is_not_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sandbox that died is not the model's failure: its 0.0 would be trained on."""
    name = module(tmp_path, monkeypatch, "vf_infra_error", RAISING)
    with pytest.raises(RuntimeError, match=r"environment 'vf_infra_error' failed: SandboxError: the sandbox"):
        play(VerifiersEnvConfig(id=name), tmp_path / "out")
    # The model's own bad tool call (a ToolCallError) is still the rubric's to score.
    outcome = play(VerifiersEnvConfig(id=name, args={"error": "ToolCallError"}), tmp_path / "out2")
    assert outcome["reward"] == 0.0 and outcome["error"].startswith("ToolCallError")


def test_a_rollout_cut_by_the_environments_timeout_is_truncated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """timeout_seconds=0: verifiers' wall-clock limit ends the rollout before the model's first turn."""
    from t3rl_core.envs.verifiers.data import prepare
    from t3rl_core.envs.verifiers.env import VerifiersEnvFactory

    source = SCORED.replace(
        "rubric=vf.Rubric(funcs=[score]))", "rubric=vf.Rubric(funcs=[score]), timeout_seconds=0)"
    )
    name = module(tmp_path, monkeypatch, "vf_timed_out", source)
    config = VerifiersEnvConfig(id=name)
    row = json.loads(prepare(config, tmp_path / "out")["verifiers_eval"].read_text().splitlines()[0])

    async def go() -> tuple[Any, dict[str, Any]]:
        env = VerifiersEnvFactory(config)(row, "eval")
        first = await env.reset()
        await env.finish()
        return first, env.outcome()

    first, outcome = asyncio.run(go())
    assert first.done and first.truncated
    assert outcome["truncated"] and outcome["stop_condition"] == "timeout_reached"


def test_a_rubric_that_scores_a_number_still_scores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = module(tmp_path, monkeypatch, "vf_scored_ok", SCORED)
    outcome = play(VerifiersEnvConfig(id=name), tmp_path / "out")
    assert outcome["reward"] == 1.0 and outcome["metrics"]["score"] == 1.0


LOADERS = {
    "vf_returns_dict": "def load_environment():\n    return {'dataset': []}\n",
    "vf_loader_needs_key": "import os\ndef load_environment():\n    return os.environ['VF_TEST_KEY']\n",
    "vf_empty_eval": SCORED.replace("dataset=data,", "dataset=data, eval_dataset=data.select([]),"),
    "vf_prompt_text": SCORED.replace(
        '{"question": "q", "answer": "a"}', '{"prompt": "What is 2+2?", "answer": "4"}'
    ),
    "vf_tool_unschemable": (
        "import verifiers as vf\nfrom datasets import Dataset\nclass Point:\n    pass\n"
        "def move(p: Point) -> int:\n    return 1\n"
        "def load_environment():\n"
        "    data = Dataset.from_list([{'question': 'q', 'answer': 'a'}])\n"
        "    return vf.ToolEnv(dataset=data, tools=[move])\n"
    ),
}


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("vf_returns_dict", r"returned dict, not a verifiers Environment"),
        ("vf_loader_needs_key", r"load_environment\(\*\*\{\}\) raised KeyError: 'VF_TEST_KEY'"),
        ("vf_empty_eval", r"its verifiers_eval dataset is empty"),
        (
            "vf_prompt_text",
            r"row 0 of its verifiers_train dataset has a prompt of str 'What is 2\+2\?', not a list",
        ),
        ("vf_tool_unschemable", r"raised PydanticSchemaGenerationError: .*vf_tool_unschemable\.Point"),
    ],
)
def test_a_loader_that_gives_no_playable_environment_is_refused(
    name: str, words: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from t3rl_core.envs.verifiers.data import prepare

    monkeypatch.delenv("VF_TEST_KEY", raising=False)
    module(tmp_path, monkeypatch, name, LOADERS[name])
    with pytest.raises(WorldUnavailable, match=f"environment '{name}'.*{words}"):
        prepare(VerifiersEnvConfig(id=name), tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing half-written


TYPED = """
from typing import Literal, Optional

def load_environment(
    num_examples: int = 3, split: Literal["train", "test"] = "train", temperature: float = 1.0,
    words: "list[str] | None" = None, system_prompt: Optional[str] = None, seed: int = None, extra=None,
):
    raise AssertionError("validation imports nothing")
"""


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"num_examples": "100"}, r"takes num_examples: int, got str '100'"),
        ({"num_examples": True}, r"takes num_examples: int, got bool True"),
        ({"split": "validation"}, r"takes split: Literal\['train', 'test'\], got str 'validation'"),
        ({"temperature": "hot"}, r"takes temperature: float, got str 'hot'"),
        ({"words": "a,b"}, r"takes words: list\[str\] \| None, got str 'a,b'"),
        ({"system_prompt": 3}, r"takes system_prompt: Optional\[str\], got int 3"),
    ],
)
def test_env_args_of_the_wrong_type_are_refused_at_validation(
    args: dict, words: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = module(tmp_path, monkeypatch, "vf_typed_loader", TYPED)
    with pytest.raises(ValidationError, match=words + r".*set env\.args\."):
        VerifiersEnvConfig(id=name, args=args)


def test_an_async_loader_is_refused_at_validation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = module(tmp_path, monkeypatch, "vf_async_loader", "async def load_environment():\n    pass\n")
    with pytest.raises(ValidationError, match=r"defines `async def load_environment`: verifiers calls"):
        VerifiersEnvConfig(id=name)


def test_env_args_of_the_right_type_validate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = module(tmp_path, monkeypatch, "vf_typed_loader_ok", TYPED)
    good = {"num_examples": 5, "split": "test", "temperature": 1, "words": ["a"], "seed": None, "extra": "x"}
    assert VerifiersEnvConfig(id=name, args=good).args == good


def test_an_environment_for_another_verifiers_is_refused_at_validation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its package's metadata declares the verifiers it was written for; t3rl's lock installs another."""
    name = module(tmp_path, monkeypatch, "vf_old_api", "def load_environment():\n    pass\n")
    info = tmp_path / "vf_old_api-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: vf-old-api\nVersion: 0.1.0\n"
        "Requires-Dist: verifiers<0.1.4,>=0.1.3\nRequires-Dist: datasets\n"
    )
    with pytest.raises(ValidationError, match=r"requires verifiers<0\.1\.4,>=0\.1\.3, but verifiers 0\.2"):
        VerifiersEnvConfig(id=name)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vf-old-api\nRequires-Dist: verifiers>=0.2\n")
    assert VerifiersEnvConfig(id=name).id == name
    # A version pinned in the id, as `prime env install owner/name@version` takes it, is the installed one.
    assert VerifiersEnvConfig(id=f"owner/{name}@0.1.0").id == f"owner/{name}@0.1.0"
    with pytest.raises(ValidationError, match=r"asks for version 0\.2\.0 .* installed as vf_old_api-0\.1\.0"):
        VerifiersEnvConfig(id=f"owner/{name}@0.2.0")


class _Answers(http.server.BaseHTTPRequestHandler):
    """A server at env.url that is not a working OpenEnv server: `answer` is what /schema gets."""

    answer: tuple[int, bytes] = (200, b"{}")

    def do_GET(self) -> None:
        code, body = self.answer
        self.send_response(code)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def not_openenv(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_Answers]]:
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    handler = type("Answers", (_Answers,), {})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    handler.port = server.server_port  # type: ignore[attr-defined]
    yield handler
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ((500, b"Internal Server Error"), r"answered /schema with HTTP 500"),
        ((200, b"<html>sign in</html>"), r"answered /schema with no JSON \('<html>sign in</html>'…\)"),
        ((200, b'{"observation": {}}'), r"publishes no action schema .*got \['observation'\]"),
        ((200, b"[]"), r"publishes no action schema .*got list"),
    ],
)
def test_a_server_that_is_no_openenv_server_is_named(
    answer: tuple[int, bytes], words: str, not_openenv: type[_Answers], tmp_path: Path
) -> None:
    from t3rl_core.envs.openenv.data import prepare as openenv_prepare

    not_openenv.answer = answer
    url = f"http://127.0.0.1:{not_openenv.port}"  # type: ignore[attr-defined]
    with pytest.raises(EnvServerError, match=rf"the OpenEnv server at {url} {words}"):
        openenv_prepare(OpenEnvEnvConfig(url=url), tmp_path)


def test_an_unreachable_server_is_named_with_its_password_masked(tmp_path: Path) -> None:
    from t3rl_core.envs.openenv.data import prepare as openenv_prepare

    with socket.socket() as held:  # a port nothing listens on: bound, never listening
        held.bind(("127.0.0.1", 0))
        url = f"http://user:pa55word@127.0.0.1:{held.getsockname()[1]}"
        with pytest.raises(EnvServerError, match=r"cannot be reached .*start it \(env\.command") as raised:
            openenv_prepare(OpenEnvEnvConfig(url=url), tmp_path)
    assert "pa55word" not in str(raised.value) and "user:***@127.0.0.1" in str(raised.value)


def test_t3rl_eval_of_an_environment_that_does_not_load_is_a_failed_eval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not "t3rl failed unexpectedly … a bug in t3rl": the environment's own problem, said as such."""
    monkeypatch.delenv("VF_TEST_KEY", raising=False)
    name = module(tmp_path, monkeypatch, "vf_eval_needs_key", LOADERS["vf_loader_needs_key"])
    runtime = RuntimeConfig.model_validate(
        {
            "env": {"name": "verifiers", "id": name},
            "reward": {"name": "env_score"},
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen3")), "chat_template": "qwen3"},
            "parsers": {"tool_call_parser": "qwen25"},
        }
    )
    (tmp_path / "runtime.yaml").write_text(runtime.to_yaml())
    argv = ["eval", "--runtime-config", str(tmp_path / "runtime.yaml"), "--engine", "reference"]
    result = CliRunner().invoke(app, [*argv, "--split", "verifiers_eval", "--out", str(tmp_path / "eval")])
    assert result.exit_code == 1 and not isinstance(result.exception, WorldUnavailable), result.output
    assert "eval failed: environment 'vf_eval_needs_key'" in result.output
    assert "raised KeyError: 'VF_TEST_KEY'" in result.output


def _crashing_env() -> tuple[type[Environment], type[Action], type[Observation]]:
    """An OpenEnv environment whose step raises on `kind: crash` (its server answers EXECUTION_ERROR), with
    its action and observation (classes of openenv's, made when the server starts)."""
    from openenv.core.env_server import Action, Environment, Observation, State

    class Act(Action):
        kind: str

    class Seen(Observation):
        text: str

    class Crashing(Environment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self._state = State(episode_id="e", step_count=0)

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Seen:
            return Seen(text="start", done=False)

        def step(self, action: Act, timeout_s: float | None = None, **kwargs: Any) -> Seen:
            if action.kind == "crash":
                raise RuntimeError("the environment's own bug")
            return Seen(text="moved", done=True, reward=1.0)

        @property
        def state(self) -> State:
            return self._state

    return Crashing, Act, Seen


@pytest.fixture(scope="module")
def crashing_server() -> Iterator[str]:
    """The environment served by uvicorn in this process (its own thread), as create_app serves it."""
    from openenv.core.env_server import create_app

    app = create_app(*_crashing_env(), env_name="crashing", max_concurrent_envs=4)
    with serving(app) as url:
        yield url


def test_an_openenv_step_that_crashes_fails_the_episode(crashing_server: str, monkeypatch) -> None:
    """The environment's exception is not shown to the model as if its action were wrong; an action that
    fails the schema still is."""
    from t3rl_core.envs.openenv.env import OpenEnvEpisode

    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    config = OpenEnvEnvConfig(url=crashing_server)

    async def play() -> tuple[str, str]:
        episode = OpenEnvEpisode(crashing_server, config, {"seed": 0})
        try:
            await episode.reset()
            refused = await episode.step(ToolCallAction(calls=[ToolCall("step", {"kin": "x"})], text=""))
            with pytest.raises(RuntimeError, match=r"the environment's own bug \(code: EXECUTION_ERROR\)"):
                await episode.step(ToolCallAction(calls=[ToolCall("step", {"kind": "crash"})], text=""))
            return refused.messages[0]["role"], refused.messages[0]["content"]
        finally:
            await episode.aclose()

    role, content = asyncio.run(play())
    assert role == "tool" and "VALIDATION_ERROR" in content


def test_rows_prepared_against_another_schema_do_not_start(
    crashing_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The environment's server changed (or env.url points at another one) since the data was prepared:
    every episode would offer the model an action the server refuses."""
    from t3rl_core.envs.openenv.data import prepare as openenv_prepare
    from t3rl_core.envs.openenv.env import OpenEnvEpisode, OpenEnvFactory

    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    config = OpenEnvEnvConfig(url=crashing_server)
    rows = openenv_prepare(config, tmp_path)["openenv_eval"].read_text().splitlines()
    row = json.loads(rows[0])
    factory = OpenEnvFactory(config)
    assert isinstance(factory(row, "eval"), OpenEnvEpisode)
    (tool,) = row["metadata"]["tools"]
    tool["function"]["parameters"]["properties"] = {"delta": {"type": "integer"}}
    with pytest.raises(WorldUnavailable, match=r"server takes: \['kind'\]; the rows' tool: \['delta'\]"):
        factory(row, "eval")
    row["metadata"]["tools"] = []
    with pytest.raises(WorldUnavailable, match=r"the row offers no tool 'step'"):
        factory(row, "eval")


def test_rescoring_with_a_rubric_that_scores_no_number_fails_the_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`t3rl score verifiers`: the same check as an episode, not a 0.0 verdict."""
    from t3rl_core.envs.verifiers.boundary import RubricProblem
    from t3rl_core.envs.verifiers.rescore import rescore

    name = module(tmp_path, monkeypatch, "vf_rescored_none", SCORED)
    item = {
        "prompt": [{"role": "user", "content": "q"}],
        "completion": [{"role": "assistant", "content": "a"}],
    }
    with pytest.raises(RubricProblem, match=r"reward function 'score' returned NoneType None"):
        rescore(item, VerifiersEnvConfig(id=name, args={"kind": "none"}))
    assert rescore(item, VerifiersEnvConfig(id=name)).reward == 1.0


def test_a_text_field_the_action_lacks_is_refused(
    crashing_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every plain-text answer would fill a field the server's schema refuses."""
    from t3rl_core.envs.openenv.env import OpenEnvFactory

    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with pytest.raises(WorldUnavailable, match=r"env.text_field='message' is no field .*\['kind'\]"):
        OpenEnvFactory(OpenEnvEnvConfig(url=crashing_server, text_field="message"))
    assert OpenEnvFactory(OpenEnvEnvConfig(url=crashing_server, text_field="kind")).tool
