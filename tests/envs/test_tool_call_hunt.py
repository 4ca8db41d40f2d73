"""Hostile tool calls mid-episode, for every tool each world declares to the model (tests/support/
tool_call_hunt.py derives the cases from the world's own schema, so a new tool or parameter is hunted
without an edit): the world never raises out of its step; it answers with a bounded text naming the
call; a call it refuses leaves its state as a fresh episode's (the same database, the same gold play
score); its scores stay finite and within their bounds; nothing is written outside tmp. Also: unknown
and near-miss tool names, arguments written as a JSON text, one call 50 times, and a step of an episode
that has ended, which every world refuses alike (envs.base.EpisodeEnded), its outcome unchanged."""

from __future__ import annotations

import asyncio
import copy
import datetime
import inspect
import json
import math
import tempfile
from collections.abc import Iterator
from pathlib import Path
from string import ascii_lowercase
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.config import ParsersConfig
from t3rl_core.envs.base import Env, EpisodeEnded
from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.env import BFCLEnv
from t3rl_core.envs.bfcl.env import make_factory as bfcl_factory
from t3rl_core.envs.bfcl.world import ERROR_PREFIX
from t3rl_core.envs.retool.config import ReToolEnvConfig
from t3rl_core.envs.retool.env import ReToolEnv
from t3rl_core.envs.tau2.config import Tau2EnvConfig
from t3rl_core.envs.tau2.data import rows as tau2_rows
from t3rl_core.envs.tau2.env import FORMAT_ERROR, Tau2Env
from t3rl_core.envs.tau2.env import make_factory as tau2_factory
from t3rl_core.envs.tau2.evaluation import domain_world
from t3rl_core.envs.toolrl.env import ToolRLEnv
from t3rl_core.parsers.tool_calls import ToolCallActionParser
from t3rl_core.registries import ACTION_PARSERS, REWARDS
from t3rl_core.rewards.base import RewardInput
from t3rl_core.sandbox.base import SandboxResult
from t3rl_core.types import (
    Action,
    AnswerAction,
    InvalidAction,
    Message,
    ToolCall,
    ToolCallAction,
    Transition,
)
from tests.support.inprocess_server import serving
from tests.support.tiny_stack import _all_bfcl_rows
from tests.support.tool_call_hunt import (
    DEPTH,
    Declared,
    declared,
    finite_numbers,
    hostile_arguments,
    hostile_calls,
    names_the_tool,
    nested,
    observation_problem,
    plain_arguments,
    writes_outside,
)

# Every n-th refused call is also followed by the whole gold play, whose score must be a fresh episode's.
GOLD_PLAY_EVERY = 40


def _run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def _act(*calls: ToolCall) -> ToolCallAction:
    return ToolCallAction(calls=calls, text=json.dumps([c.name for c in calls]))


@pytest.fixture
def no_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Run in tmp_path; the writes outside it (and the system temp dir) are collected for the test."""
    monkeypatch.chdir(tmp_path)
    with writes_outside(tmp_path, Path(tempfile.gettempdir())) as seen:
        yield seen


def _checked(call: ToolCall, transition: Transition) -> None:
    problem = observation_problem(call, transition.messages)
    assert problem is None, problem


async def _gold_play(env: Env, transition: Transition) -> Transition:
    while not transition.done:
        oracle = env.oracle()
        assert oracle is not None, "the gold play gave up before the episode ended"
        transition = await env.step(oracle)
    return transition


# ------------------------------------------------------------------------------------------------ BFCL


@pytest.fixture(scope="module")
def bfcl() -> Iterator[tuple[Any, list[tuple[dict[str, Any], list[Declared]]]]]:
    """For each bfcl-eval class, the first row involving it, with the tools it declares not declared by
    an earlier chosen row: every tool of the multi-turn categories, once."""
    chosen: dict[str, dict[str, Any]] = {}
    # The process's one build of BFCL's rows (other modules ask for it too); the chosen ones copied out.
    for row in _all_bfcl_rows():
        for name in row["metadata"]["bfcl_task"]["involved_classes"]:
            chosen.setdefault(name, row)
    seen: set[str] = set()
    plan = []
    for row in [copy.deepcopy(row) for row in {id(row): row for row in chosen.values()}.values()]:
        tools = [tool for tool in declared(row["metadata"]["tools"]) if tool.name not in seen]
        seen |= {tool.name for tool in tools}
        plan.append((row, tools))
    factory = bfcl_factory(BFCLEnvConfig())
    yield factory, plan
    _run(factory.aclose())


def _state(value: Any, seen: set[int] | None = None) -> Any:
    """A world's objects as comparable data (a NaN as its text; an object met before as its type; a
    time as its type: bfcl-eval stamps a file with the clock when it builds a world)."""
    seen = set() if seen is None else seen
    if isinstance(value, datetime.datetime):
        return "datetime"
    if isinstance(value, float):
        return repr(value) if math.isnan(value) else value
    if isinstance(value, str | int | bool | type(None)):
        return value
    if id(value) in seen:
        return ("seen", type(value).__name__)
    seen.add(id(value))
    if isinstance(value, dict):
        return {repr(k): _state(v, seen) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_state(v, seen) for v in (sorted(value, key=repr) if isinstance(value, set) else value)]
    if hasattr(value, "__dict__"):
        return (type(value).__name__, _state(vars(value), seen))
    return repr(value)


def _bfcl_state(env: BFCLEnv) -> Any:
    return _state(env._model_world("test").instances)


def _ran(env: BFCLEnv, call: ToolCall) -> bool:
    """Whether the call reached the API's code: a known method whose signature binds the arguments.
    bfcl-eval's methods may change their state before they raise (`set_navigation` stores a number as
    the destination, then fails to add it to a text), as they do in bfcl-eval's own evaluation."""
    method = env._model_world("test").methods.get(call.name)
    if method is None:
        return False
    try:
        inspect.signature(method).bind(**call.arguments)
    except TypeError:
        return False
    return True


def test_bfcl_every_declared_tool_answers_hostile_calls(bfcl: Any, no_writes: list[str]) -> None:
    factory, plan = bfcl

    async def hunt() -> int:
        refused = 0
        for row, tools in plan:
            fresh = factory(row, "train")
            await fresh.reset()
            pristine = _bfcl_state(fresh)
            gold = await _gold_play(fresh, Transition())
            for case, call in hostile_calls(tools):
                env = factory(row, "train")
                await env.reset()
                transition = await env.step(_act(call))
                _checked(call, transition)
                assert names_the_tool(call, transition.messages), (case, transition.messages)
                text = transition.messages[0]["content"]
                outcome = env.outcome()
                assert not finite_numbers(outcome), (case, finite_numbers(outcome))
                assert 0.0 <= outcome["progress"] <= 1.0, case
                if not text.startswith(ERROR_PREFIX) or _ran(env, call):
                    continue  # taken, or bfcl-eval's API ran and raised: its own state, kept for parity
                refused += 1
                assert _bfcl_state(env) == pristine, f"{case}: a refused call changed the world"
                if refused % GOLD_PLAY_EVERY == 0:
                    # The turn's gold calls, then the gold play (whose oracle answers a turn with calls).
                    first_turn = row["metadata"]["bfcl_task"]["ground_truth"][0]
                    calls = [env.parse_call(written) for written in first_turn]
                    end = await _gold_play(env, await env.step(_act(*calls)))
                    assert env.outcome()["progress"] == fresh.outcome()["progress"], case
                    assert end.done and gold.done
        return refused

    assert _run(hunt()) > 300
    assert no_writes == []


def test_bfcl_unknown_names_and_repeats(bfcl: Any, no_writes: list[str]) -> None:
    factory, plan = bfcl
    row, tools = plan[0]
    tool = tools[0]

    async def hunt() -> None:
        env = factory(row, "train")
        await env.reset()
        for call in (ToolCall("t3rl_no_such_tool", {}), ToolCall(tool.name.upper(), {})):
            answer = (await env.step(_act(call))).messages
            assert call.name in answer[0]["content"] and answer[0]["name"] == call.name
        _, hostile = hostile_arguments(tool)[0]
        many = await env.step(_act(*[ToolCall(tool.name, hostile)] * 50))
        assert len(many.messages) == 50 and len({m["content"] for m in many.messages}) == 1
        transition = many
        for _ in range(50):
            if transition.done:
                break
            transition = await env.step(_act(ToolCall(tool.name, hostile)))
            _checked(ToolCall(tool.name, hostile), transition)
        outcome = env.outcome()
        assert not finite_numbers(outcome) and 0.0 <= outcome["progress"] <= 1.0
        assert "multi_turn:force_terminated" in outcome["turn_errors"], outcome["turn_errors"]

    _run(hunt())
    assert no_writes == []


def _row_of(world: str, request: Any) -> tuple[Any, dict[str, Any]]:
    if world == "bfcl":
        factory, plan = request.getfixturevalue("bfcl")
        return factory, plan[0][0]
    factory, first = request.getfixturevalue("tau2")
    return factory, first["retail"]


@pytest.mark.parametrize("world", ["bfcl", "tau2"])
@pytest.mark.parametrize("written", ["arguments_as_json_text", "nested_200"])
def test_calls_the_parser_refuses_reach_the_world_as_a_bounded_format_error(
    world: str, written: str, request: Any, no_writes: list[str]
) -> None:
    """Arguments written as a JSON text (an object's JSON inside a string) and arguments nested 200
    deep: the parser names the tool or the limit, and the world answers that as a format error."""
    factory, row = _row_of(world, request)
    tool = next(t for t in declared(row["metadata"]["tools"]) if t.required)
    arguments: Any = json.dumps(plain_arguments(tool))
    if written == "nested_200":
        arguments = {tool.required[0]: nested(DEPTH)}
    body = json.dumps({"name": tool.name, "arguments": arguments})
    action = ToolCallActionParser(ParsersConfig(tool_call_parser="qwen25"), row["metadata"]["tools"]).parse(
        f"<tool_call>\n{body}\n</tool_call>"
    )
    assert isinstance(action, InvalidAction), action
    assert (tool.name if written != "nested_200" else "MAX_NESTING") in action.error

    async def hunt() -> Transition:
        env = factory(row, "train")
        await env.reset()
        return await env.step(action)

    transition = _run(hunt())
    [said] = transition.messages
    assert not transition.done and action.error.split(": ", 1)[1] in said["content"]
    assert len(said["content"]) < 2 * len(action.error) + 1024
    assert no_writes == []


# ------------------------------------------------------------------------------------------------ tau2


@pytest.fixture(scope="module")
def tau2() -> Iterator[tuple[Any, dict[str, dict[str, Any]]]]:
    """The first task of each domain of tau2's base split (in tau2's order)."""
    first: dict[str, dict[str, Any]] = {}
    for row in tau2_rows(Tau2EnvConfig(), "base"):
        first.setdefault(row["metadata"]["domain"], row)
    factory = tau2_factory(Tau2EnvConfig())
    yield factory, first
    _run(factory.aclose())


def _db(env: Tau2Env) -> tuple[str | None, str | None]:
    """tau2's hashes of the episode's agent and user databases (what its evaluator compares)."""
    assert env._env is not None
    return domain_world(env.spec.domain).database_hashes(env._env)


def _tau2_score_problem(env: Tau2Env) -> str | None:
    outcome = env.outcome()
    scores = [outcome["task_reward"], *outcome["partial_components"].values()]
    if not all(isinstance(s, float) and 0.0 <= s <= 1.0 for s in scores):
        return f"scores out of [0, 1]: {scores}"
    return None


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom"])
def test_tau2_every_declared_tool_answers_hostile_calls(domain: str, tau2: Any, no_writes: list[str]) -> None:
    factory, first = tau2
    row = first[domain]

    async def hunt() -> int:
        fresh = factory(row, "train")
        opening = await fresh.reset()
        pristine = _db(fresh)
        await _gold_play(fresh, opening)
        refused = 0
        for case, call in hostile_calls(declared(row["metadata"]["tools"])):
            env = factory(row, "train")
            before = await env.reset()
            transition = await env.step(_act(call))
            _checked(call, transition)
            assert _tau2_score_problem(env) is None, case
            outcome = env.outcome()
            if transition.done:  # `done` itself: ended by the agent, scored
                assert outcome["termination_reason"] == "agent_stop", case
                continue
            failed = outcome["actions"] and outcome["actions"][-1]["error"]
            if not failed and not outcome["format_errors"]:
                continue  # a call tau2 took (a lookup of an unknown id is an error, a reply is not)
            refused += 1
            assert names_the_tool(call, transition.messages), (case, transition.messages)
            assert _db(env) == pristine, f"{case}: a refused call changed the database"
            if refused % GOLD_PLAY_EVERY == 0:
                await _gold_play(env, Transition(messages=before.messages))
                assert env.outcome()["task_reward"] == fresh.outcome()["task_reward"], case
        return refused

    assert _run(hunt()) > 100
    assert no_writes == []


@pytest.mark.parametrize("tool", ["respond", "done"])
def test_tau2_protocol_tools_refuse_arguments_they_do_not_declare(tool: str, tau2: Any) -> None:
    """`done(reason=…)` ended the episode and `respond(content, to=…)` spoke, where a domain tool's
    unknown argument is tau2's error naming it: now a format error naming the tool and the argument."""
    factory, first = tau2
    env = factory(first["retail"], "train")
    arguments = {"content": "Hello"} if tool == "respond" else {}
    call = ToolCall(tool, {**arguments, "t3rl_unknown_argument": 1})

    async def hunt() -> tuple[Transition, int]:
        await env.reset()
        transition = await env.step(_act(call))
        return transition, env.outcome()["user_turns"]

    transition, user_turns = _run(hunt())
    assert not transition.done and user_turns == 1  # the opening reply only
    [said] = transition.messages
    assert said["content"].startswith(FORMAT_ERROR.split("{")[0])
    assert f"`{tool}`" in said["content"] and "'t3rl_unknown_argument'" in said["content"]


def test_tau2_repeated_refused_calls_end_on_tau2s_error_limit(tau2: Any, no_writes: list[str]) -> None:
    factory, first = tau2
    row = first["retail"]
    tool = next(t for t in declared(row["metadata"]["tools"]) if t.required)
    call = ToolCall(tool.name, {})

    async def hunt() -> Tau2Env:
        env = factory(row, "train")
        transition = await env.reset()
        for _ in range(50):
            if transition.done:
                break
            transition = await env.step(_act(call))
            _checked(call, transition)
        assert transition.done
        return env

    env = _run(hunt())
    outcome = env.outcome()
    assert outcome["termination_reason"] == "too_many_errors" and outcome["task_reward"] == 0.0
    assert outcome["tool_errors"] == Tau2EnvConfig().max_errors
    assert no_writes == []


# ---------------------------------------------------------------------------------------------- ToolRL

TOOLRL_PARQUET = Path(__file__).resolve().parents[1] / "fixtures" / "toolrl" / "rlla_4k_test.parquet"


def test_toolrl_hostile_calls_score_within_the_rewards_range(tmp_path: Path, no_writes: list[str]) -> None:
    """ToolRL runs nothing: the answer's text is the reward's. Each hostile call to a tool the row
    declares, written as the model writes it, scores a finite reward within the configured range."""
    from t3rl_core.envs.toolrl.config import ToolRLEnvConfig
    from t3rl_core.registries import DATASETS

    config = ToolRLEnvConfig(data={"splits": {"toolrl_test": str(TOOLRL_PARQUET)}, "tools_in_metadata": True})
    written = DATASETS.factory("toolrl_single_turn")(config, tmp_path)["toolrl_test"]
    rows = [json.loads(line) for line in written.read_text(encoding="utf-8").splitlines()]
    row = next(r for r in rows if len(r["metadata"]["tools"]) >= 3)
    parser = ACTION_PARSERS.factory("toolrl")(None, [])
    reward = REWARDS.build(REWARDS.validate({"name": "toolrl"}))
    low = reward.config.format_min + reward.config.correctness_min
    high = reward.config.format_max + reward.config.correctness_max

    async def hunt() -> int:
        count = 0
        for case, call in hostile_calls(declared(row["metadata"]["tools"])):
            body = json.dumps({"name": call.name, "parameters": call.arguments})
            text = f"<think> t </think>\n<tool_call>\n{body}\n</tool_call>"
            env = ToolRLEnv(row)
            transition = await env.step(parser.parse(text))
            assert transition.done and env.outcome()["response"] == text, case
            value = reward(RewardInput(outcome=env.outcome())).value
            assert math.isfinite(value) and low <= value <= high, (case, value)
            count += 1
        return count

    assert _run(hunt()) > 50
    assert no_writes == []


# --------------------------------------------------------------------------------------------- OpenEnv


@pytest.fixture(scope="module")
def counter_server() -> Iterator[str]:
    """t3rl's example OpenEnv environment (env=openenv's default) served by uvicorn in this process."""
    from t3rl_core.envs.openenv.counter_example import app

    with serving(app) as url:
        yield url


def test_openenv_every_declared_tool_answers_hostile_calls(
    counter_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_writes: list[str]
) -> None:
    """The server's refusal ("Invalid message (code: VALIDATION_ERROR)") named neither the call nor its
    arguments; a text holding a lone surrogate failed the episode as the environment's (the server
    could not write its refusal: SESSION_ERROR)."""
    from t3rl_core.envs.openenv.config import OpenEnvEnvConfig
    from t3rl_core.envs.openenv.env import OpenEnvEpisode
    from t3rl_core.registries import DATASETS

    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    config = OpenEnvEnvConfig(url=counter_server, data={"train_episodes": 1, "eval_episodes": 1})
    written = DATASETS.factory("openenv")(config, tmp_path)["openenv_train"]
    row = json.loads(written.read_text().splitlines()[0])

    async def hunt() -> int:
        refused = 0
        for case, call in hostile_calls(declared(row["metadata"]["tools"])):
            episode = OpenEnvEpisode(counter_server, config, row["metadata"]["openenv_reset"])
            try:
                await episode.reset()
                transition = await episode.step(_act(call))
            finally:
                await episode.aclose()
            _checked(call, transition)
            outcome = episode.outcome()
            assert not finite_numbers(outcome) and -1.0 <= outcome["reward"] <= 1.0, (case, outcome)
            if outcome["turn_rewards"] == [None]:  # no step was taken: the model's mistake, named
                refused += 1
                assert names_the_tool(call, transition.messages), (case, transition.messages)
                if call.arguments and call.name == config.tool_name:  # else the name is what is wrong
                    assert any(repr(k[:64]) in transition.messages[0]["content"] for k in call.arguments)
        return refused

    assert _run(hunt()) >= 10
    assert no_writes == []


def test_openenv_a_lone_surrogate_is_the_models_mistake(
    counter_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`{"delta": "\\ud800"}` (a JSON escape the parser decodes to a lone surrogate): the server failed
    writing its refusal (SESSION_ERROR) and the episode failed as the environment's; now the model reads
    which argument holds it, and the episode goes on."""
    from t3rl_core.envs.openenv.config import OpenEnvEnvConfig
    from t3rl_core.envs.openenv.env import OpenEnvEpisode

    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    episode = OpenEnvEpisode(counter_server, OpenEnvEnvConfig(url=counter_server), {"seed": 0})

    async def play() -> tuple[Transition, Transition]:
        try:
            await episode.reset()
            refused = await episode.step(_act(ToolCall("step", {"delta": {"d\ud800": ["\udfff"]}})))
            return refused, await episode.step(_act(ToolCall("step", {"delta": 1})))
        finally:
            await episode.aclose()

    refused, moved = _run(play())
    [said] = refused.messages
    assert said["name"] == "step" and "argument 'delta'" in said["content"] and "surrogate" in said["content"]
    said["content"].encode("utf-8")  # the refusal itself is text
    assert moved.messages[0]["content"] == '{"message": "Now at 1.", "target": 3, "value": 1}'


# ------------------------------------------------------------------------------------------- verifiers

# The calculator example's rubric: correct_answer (0 or 1) weighted 1.0, used_tool (0 or 1) weighted 0.5.
CALCULATOR_REWARD = (0.0, 1.5)


def test_verifiers_every_declared_tool_answers_hostile_calls(tmp_path: Path, no_writes: list[str]) -> None:
    """The hub adapter relays verifiers' own tool texts unchanged (its trajectory is what verifiers
    scores), so only the adapter's part is checked: no raise, a bounded text, a finite reward within the
    rubric's range, nothing written outside tmp."""
    from t3rl_core.envs.verifiers.config import VerifiersEnvConfig
    from t3rl_core.envs.verifiers.data import prepare
    from t3rl_core.envs.verifiers.env import VerifiersEnvFactory

    config = VerifiersEnvConfig(id="t3rl_core.envs.verifiers.calculator_example")
    row = json.loads(prepare(config, tmp_path)["verifiers_eval"].read_text().splitlines()[0])
    factory = VerifiersEnvFactory(config)
    low, high = CALCULATOR_REWARD

    async def hunt() -> int:
        count = 0
        for case, call in hostile_calls(declared(row["metadata"]["tools"])):
            env = factory(row, "eval")
            try:
                await env.reset()
                transition = await env.step(_act(call))
                _checked(call, transition)
                await env.finish()
                reward = env.outcome()["reward"]
            finally:
                await env.aclose()
            assert math.isfinite(reward) and low <= reward <= high, (case, reward)
            count += 1
        return count

    assert _run(hunt()) > 20
    assert no_writes == []


# ------------------------------------------------------------------------------ a step after the end


class _Sandbox:
    """Runs nothing; counts the cells it was given."""

    def __init__(self) -> None:
        self.cells: list[str] = []

    async def run(self, code: str) -> SandboxResult:
        self.cells.append(code)
        return SandboxResult(status="ok", stdout="1\n", stderr="", exit_code=0, duration_s=0.0)

    async def aclose(self) -> None:
        return None


def _ended_retool() -> tuple[Env, Action]:
    env = ReToolEnv({"label": "1"}, _Sandbox(), ReToolEnvConfig())  # type: ignore[arg-type]
    _run(env.step(AnswerAction(text="<answer>\\boxed{1}</answer>")))
    return env, _act(ToolCall("python", {"code": "print(1)"}))


def _ended_toolrl() -> tuple[Env, Action]:
    env = ToolRLEnv({"label": "<response> hi </response>"})
    _run(env.step(AnswerAction(text="<response> hi </response>")))
    return env, AnswerAction(text="<response> other </response>")


class _Plain(Env):
    """A world with no check of its own: the refusal is the base class's."""

    steps = 0

    async def step(self, action: Action) -> Transition:
        self.steps += 1
        return Transition(done=True)

    def outcome(self) -> dict[str, Any]:
        return {"steps": self.steps}


def _ended_plain() -> tuple[Env, Action]:
    env = _Plain()
    _run(env.step(AnswerAction(text="bye")))
    return env, AnswerAction(text="again")


def _ended_bfcl(bfcl: Any) -> tuple[Env, Action]:
    factory, plan = bfcl
    row, tools = plan[0]
    env = factory(row, "train")
    _run(_gold_play(env, _run(env.reset())))
    return env, _act(ToolCall(tools[0].name, plain_arguments(tools[0])))


def _ended_tau2(tau2: Any) -> tuple[Env, Action]:
    factory, first = tau2
    env = factory(first["airline"], "train")
    _run(env.reset())
    assert _run(env.step(_act(ToolCall("done", {})))).done
    return env, _act(ToolCall("respond", {"content": "one more thing"}))


@pytest.mark.parametrize("world", ["retool", "toolrl", "plain", "bfcl", "tau2"])
def test_a_step_after_the_end_is_refused_and_changes_nothing(world: str, request: Any) -> None:
    """ReTool ran the cell of a step after its end and added it to the scored response; every world now
    refuses it alike, whatever it checks itself."""
    maker = {"retool": _ended_retool, "toolrl": _ended_toolrl, "plain": _ended_plain}.get(world)
    env, action = (
        maker()
        if maker
        else {"bfcl": _ended_bfcl, "tau2": _ended_tau2}[world](request.getfixturevalue(world))
    )
    before = json.dumps(env.outcome(), sort_keys=True, default=str)
    with pytest.raises(EpisodeEnded, match=r"\.step\(\) after the episode ended"):
        _run(env.step(action))
    assert json.dumps(env.outcome(), sort_keys=True, default=str) == before
    if isinstance(env, ReToolEnv):
        assert env.sandbox.cells == []  # type: ignore[attr-defined]


def test_observations_name_what_they_answer() -> None:
    """The checks themselves: an answer that names neither the tool nor carries its name fails them,
    and an answer past the bound fails them."""
    call = ToolCall("cd", {"folder": 1})
    silent: list[Message] = [{"role": "user", "content": "Error: 'int' object has no attribute 'x'"}]
    assert not names_the_tool(call, silent)
    assert names_the_tool(call, [{"role": "tool", "name": "cd", "content": "Error"}])
    assert observation_problem(call, [{"role": "tool", "content": "x" * 10**6}]) is not None
    assert observation_problem(call, [{"role": "tool", "content": None}]) is not None
    assert finite_numbers({"a": [1.0, math.nan]}) == ["outcome['a'][1]"]


_TYPES = ["string", "integer", "number", "boolean", "array", "object", "int", "dict", None]
# [a-z][a-z_]{0,11} drawn from its alphabets: st.from_regex first maps the whole of Unicode through a
# codec, ~2 s of CPU in each process that builds one.
_NAMES = st.tuples(st.sampled_from(ascii_lowercase), st.text(ascii_lowercase + "_", max_size=11)).map("".join)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    tools=st.lists(
        st.tuples(
            _NAMES,
            st.dictionaries(
                st.text(ascii_lowercase, min_size=1, max_size=8), st.sampled_from(_TYPES), max_size=4
            ),
            st.data(),
        ),
        min_size=1,
        max_size=3,
        unique_by=lambda tool: tool[0],
    )
)
def test_every_declared_parameter_gets_every_case(tools: list[tuple[str, dict[str, Any], Any]]) -> None:
    """The hunt reads the declaration: a tool or parameter added to a world is hunted with no edit here."""
    schemas = []
    for name, params, data in tools:
        required = data.draw(st.lists(st.sampled_from(sorted(params)), unique=True)) if params else []
        properties = {p: {} if kind is None else {"type": kind} for p, kind in params.items()}
        parameters = {"type": "object", "properties": properties, "required": required}
        schemas.append({"type": "function", "function": {"name": name, "parameters": parameters}})
    cases = dict(hostile_calls(declared(schemas)))
    for name, params, _ in tools:
        tool = next(t for t in declared(schemas) if t.name == name)
        assert f"{name}/extra:t3rl_unknown_argument" in cases and f"{name}/near_miss_name" in cases
        assert cases[f"{name}/near_miss_name"].name != name
        for required in tool.required:
            assert required not in cases[f"{name}/missing:{required}"].arguments
        for param in params:
            kinds = {case.split("/", 1)[1].split(":")[0] for case in cases if case.endswith(f":{param}")}
            assert {"null", "empty_string", "long_string", "nan", "inf", "huge", "minus_zero"} <= kinds
            assert {"nested_deepest", "control_chars"} <= kinds and len(kinds) >= 12
    assert "t3rl_no_such_tool" in cases
