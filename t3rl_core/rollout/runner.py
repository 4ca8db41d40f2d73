"""Everything one run needs to play episodes, built once from the runtime config.

The slime generate hook and the standalone eval both call `EpisodeRunner.run`: one task row in, the
episode's tokens, masks and log-probs plus its reward out.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeGuard

from t3rl_core.chat.format import ChatFormat, tools_cache_key
from t3rl_core.chat.keys import json_key
from t3rl_core.chat.message_form import normal_message
from t3rl_core.contracts import unawaited
from t3rl_core.engines.base import SamplingParams
from t3rl_core.registries import ACTION_PARSERS, ENVS, REWARDS
from t3rl_core.rewards.base import Reward, RewardInput, RewardResult, episode_reward, within_bounds
from t3rl_core.rollout.episode import ActionParser, EpisodeResult, release_world, run_episode
from t3rl_core.rollout.failures import Failure, components_failure, describe
from t3rl_core.rollout.heap import freeze_startup_heap

if TYPE_CHECKING:
    from t3rl_core.config import RuntimeConfig
    from t3rl_core.engines.base import Engine
    from t3rl_core.envs.base import Env, EnvFactory, Mode

# Parsers are cached per tool list: the n samples of a prompt (and repeated epochs) share one.
_PARSER_CACHE_SIZE = 512

logger = logging.getLogger(__name__)


class InvalidTask(ValueError):
    """A dataset row that is no chat task: its prompt is no list of messages, its metadata no
    mapping, or its tools no list of named tool schemas."""


def _is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """isinstance(value, Mapping), a plain dict (every row's tools and messages) answered without the
    ABC's check: two per tool of a ~28-tool list at every episode."""
    return type(value) is dict or isinstance(value, Mapping)


def task_parts(task: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[dict[str, Any]]]:
    """A row's metadata and tool list, once its prompt is known to be chat messages (each with a text
    role and a text content, or none beside its tool calls: the chat formats render text only, a list
    of content parts failed in the template); raises InvalidTask naming what is not."""
    prompt = task.get("prompt")
    if isinstance(prompt, str):
        raise InvalidTask(
            "the row's prompt is text, not chat messages: t3rl renders each message with the chat "
            "template itself (run slime without --apply-chat-template; a dataset of plain questions "
            "holds each as [{'role': 'user', 'content': ...}])"
        )
    if not isinstance(prompt, list | tuple):
        raise InvalidTask(f"the row's prompt is {type(prompt).__name__}, not a list of chat messages")
    for i, message in enumerate(prompt):
        if _is_mapping(message):
            message, problem = normal_message(message, f"the row's prompt message {i}")
            if problem is not None:
                raise InvalidTask(problem + " when the data is prepared")
        if not (
            _is_mapping(message)
            and isinstance(message.get("role"), str)
            and (
                isinstance(message.get("content"), str)
                or (message.get("content") is None and bool(message.get("tool_calls")))
            )
        ):
            raise InvalidTask(
                f"the row's prompt message {i} is no chat message with a text role and content: "
                f"{str(message)[:200]}"
            )
    metadata = task.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise InvalidTask(f"the row's metadata is {type(metadata).__name__}, not a mapping")
    tools = metadata.get("tools") or []
    if not isinstance(tools, list | tuple):
        raise InvalidTask(
            f"the row's metadata.tools is {type(tools).__name__}, not a list of tool schemas "
            "(JSON text must be loaded when the data is prepared)"
        )
    schemas: dict[str, Mapping[str, Any]] = {}
    for i, tool in enumerate(tools):
        function = tool.get("function", tool) if _is_mapping(tool) else None
        if not _is_mapping(function) or not isinstance(function.get("name"), str):
            raise InvalidTask(
                f"the row's metadata.tools[{i}] is no tool schema with a text name: {str(tool)[:200]}"
            )
        # The rest of the schema in the shape every template and SGLang's Tool read: parameters stored
        # as JSON text were shown to the model as one escaped string (no template reads them), and a
        # description that is no text raised SGLang's ValidationError naming no row or tool.
        for key, kind, shape in (
            ("parameters", Mapping, "a JSON Schema object"),
            ("description", str, "text"),
        ):
            value = function.get(key)
            if value is not None and not isinstance(value, kind):
                raise InvalidTask(
                    f"the row's metadata.tools[{i}] ({function['name']!r}) has a {key} of type "
                    f"{type(value).__name__}, not {shape}"
                    + (
                        " (JSON text must be loaded when the data is prepared)"
                        if isinstance(value, str)
                        else ""
                    )
                )
        # Two schemas of one name: the model reads both, a call names the tool only and the world runs
        # its one function, so a call written to the other schema is judged against one it did not follow.
        seen = schemas.setdefault(function["name"], function)
        if seen is not function and seen != function:
            raise InvalidTask(
                f"the row's metadata.tools name {function['name']!r} twice, with different schemas "
                "(a call to it could follow either): keep one schema per name when the data is prepared"
            )
    _names_told_apart(schemas)
    return metadata, list(tools)


def _names_told_apart(schemas: Mapping[str, Any]) -> None:
    """Raises InvalidTask when two offered names are one name as a reader sees it: the same after
    Unicode's compatibility normalization, without invisible format characters (`café` composed and
    decomposed, `add` and `ad\\u200bd`). The model reads two tools it cannot tell apart and writes
    either spelling by chance; the call then ran the other tool, or the parser's hint for a misspelt
    name ('differs only in Unicode normalization') named either. Case tells names apart and is kept."""
    if all(name.isascii() for name in schemas):
        return  # ASCII is its own normal form and holds no format character: distinct names stay so
    from t3rl_core.parsers.tool_calls import reader_form  # lazy: the parsers' one reading of a name

    seen: dict[str, str] = {}
    for name in schemas:
        other = seen.setdefault(reader_form(name), name)
        if other != name:
            raise InvalidTask(
                f"the row's metadata.tools name {other!r} and {name!r}, one name as a reader sees it "
                f"({other!a} and {name!a}: the same after Unicode normalization and without "
                "invisible characters), so no call can tell which is meant: rename one when the data "
                "is prepared"
            )


def _fresh(env: Env) -> Env:
    """`env`, marked as this episode's; RuntimeError when the factory returned it for an earlier episode.
    Env instances are never reused: one handed to two episodes (a factory keeping a single Env) mixed
    their state, and the second was refused as 'step() after the episode ended', the driver's bug."""
    from t3rl_core.envs.base import Env  # lazy: the runtime's Env, imported once a world is built

    if not isinstance(env, Env):
        # What Env declares is what the loop calls (reset, step, stop, outcome, aclose): any other
        # object failed as "'coroutine' object has no attribute 'stop'", then again at its release.
        raise TypeError(
            unawaited(env, "the world's factory", "an Env")
            or f"the world's factory returned {type(env).__name__}, not an Env: return an instance of a "
            "t3rl_core.envs.base.Env subclass from each call"
        )
    state = getattr(env, "__dict__", None)
    if state is not None and state.get("_t3rl_episode"):
        raise RuntimeError(
            f"the world's factory returned a {type(env).__name__} it had returned for an earlier episode, "
            "whose state would carry over: return a new Env from each call (what episodes share on "
            "purpose, such as a client or a pool, belongs to the factory)"
        )
    if state is not None:
        state["_t3rl_episode"] = True
    return env


def _check_stop(env: Env) -> None:
    """`env.stop` is what Env declares, a tuple of stop strings; raises ValueError saying what it is.
    A world writing `stop = "</code>"` (text, not a tuple) had each character made a stop string: every
    call ended at its first "<" or "c", and the episode went on with those cut turns, unsaid."""
    stop = env.stop
    if isinstance(stop, list | tuple) and all(isinstance(text, str) and text for text in stop):
        return
    world = type(env).__name__
    if isinstance(stop, str):
        raise ValueError(
            f"{world}.stop is the text {stop[:80]!r}, not a tuple of stop strings: write ({stop[:80]!r},)"
        )
    raise ValueError(f"{world}.stop must be a tuple of non-empty stop strings, not {str(stop)[:120]}")


class EpisodeRunner:
    """Env factory, chat format, action parsers, reward and engine of one run."""

    def __init__(
        self,
        runtime: RuntimeConfig,
        engine: Engine,
        *,
        env_factory: EnvFactory,
        chat: ChatFormat,
        reward: Reward,
    ) -> None:
        self.runtime, self.engine, self.env_factory, self.chat, self.reward = (
            runtime,
            engine,
            env_factory,
            chat,
            reward,
        )
        self._parsers: OrderedDict[tuple[str, str, str], ActionParser] = OrderedDict()

    @classmethod
    def from_runtime(
        cls, runtime: RuntimeConfig, engine: Engine, *, chat: ChatFormat | None = None
    ) -> EpisodeRunner:
        """Build the env factory, chat format and reward from the registries; `chat` reuses a loaded one.
        The process's start-up heap is frozen out of the collector's way here, once (rollout/heap.py)."""
        runner = cls(
            runtime,
            engine,
            env_factory=ENVS.build(runtime.env),
            chat=chat or ChatFormat.from_config(runtime.chat, runtime.parsers),
            reward=REWARDS.build(runtime.reward),
        )
        freeze_startup_heap()
        return runner

    def default_sampling(self) -> SamplingParams:
        rollout = self.runtime.rollout
        return SamplingParams(
            temperature=rollout.temperature, top_p=rollout.top_p, max_new_tokens=rollout.max_new_tokens
        )

    def parser(
        self,
        action_format: str,
        tools: list[dict[str, Any]],
        late_tools: list[dict[str, Any]] | None = None,
        *,
        tools_key: str | None = None,
    ) -> ActionParser:
        """The action parser of an env's format for one tool list (cached). `late_tools` (a row's
        `metadata.late_tools`: functions an env offers after the prompt) reach the factory as a keyword
        only when the row has some. `tools_key` is `tools_cache_key(tools)` when the caller has it."""
        key = (
            action_format,
            tools_cache_key(tools) if tools_key is None else tools_key,
            json_key(late_tools) if late_tools else "",
        )
        parser = self._parsers.get(key)
        if parser is None:
            factory = ACTION_PARSERS.factory(action_format)
            extra = {"late_tools": late_tools} if late_tools else {}
            parser = factory(self.runtime.parsers, tools, **extra)
            self._parsers[key] = parser
            if len(self._parsers) > _PARSER_CACHE_SIZE:
                self._parsers.popitem(last=False)
        else:
            self._parsers.move_to_end(key)
        return parser

    async def run(
        self,
        task: Mapping[str, Any],
        mode: Mode = "train",
        sampling: SamplingParams | None = None,
        step: int = 0,
    ) -> tuple[EpisodeResult, RewardResult]:
        """Play one episode of a dataset row and score it. Never raises for env, model or data problems."""
        try:
            metadata, tools = task_parts(task)
        except InvalidTask as exc:
            return self._unplayable(task, [], Failure.from_exception("env", exc, str(exc)))
        tools_key = tools_cache_key(tools)
        env: Env | None = None
        try:
            env = _fresh(self.env_factory(task, mode))
            env.episode_seed = (sampling or self.default_sampling()).seed
            _check_stop(env)
            late_tools = list(metadata.get("late_tools") or [])
            parser = self.parser(env.action_format, tools, late_tools, tools_key=tools_key)
        except BaseException as exc:
            if not components_failure(exc):
                raise
            if env is not None:  # built, then its parser failed: its resources are still released
                await release_world(env)
            error = f"cannot start the episode: {describe(exc)}"
            return self._unplayable(task, tools, Failure.from_exception("env", exc, error))
        result = await run_episode(
            task,
            env=env,
            engine=self.engine,
            chat=self.chat,
            parser=parser,
            sampling=sampling or self.default_sampling(),
            limits=self.runtime.rollout,
            tools_key=tools_key,
        )
        if result.status == "aborted":
            # The engine did not finish it: no score measures it (the eval leaves it out of every score,
            # slime out of training), and a reward reading the world's unfinished outcome failed in its
            # own words (tau2's "no 'task_reward'"), appended to the engine's error as a second fault.
            return result, RewardResult(value=0.0)
        return result, await self._score(result, task, step)

    async def _score(self, result: EpisodeResult, task: Mapping[str, Any], step: int) -> RewardResult:
        inputs = RewardInput(
            outcome=result.outcome,
            response=result.response_text,
            label=task.get("label"),
            metadata=task.get("metadata") or {},
            step=step,
        )
        try:
            return within_bounds(self.reward, inputs, await episode_reward(self.reward, inputs))
        except BaseException as exc:
            if not components_failure(exc):
                raise
            message = f"reward failed: {describe(exc)}"
            result.error = f"{result.error}; {message}" if result.error else message
            result.failure = result.failure or Failure.from_exception("reward", exc, message)
            return RewardResult(value=0.0)

    def refused(self, task: Mapping[str, Any], reason: str) -> tuple[EpisodeResult, RewardResult]:
        """The FAILED result of a row its caller refuses before any episode (InvalidTask: `reason`)."""
        return self._unplayable(task, [], Failure("env", InvalidTask.__name__, reason))

    def _unplayable(
        self, task: Mapping[str, Any], tools: list[dict[str, Any]], failure: Failure
    ) -> tuple[EpisodeResult, RewardResult]:
        """A FAILED result for a row no env accepts: the prompt alone (none when it is no list of
        messages), so the batch keeps its shape."""
        messages = [] if failure.error_type == InvalidTask.__name__ else [dict(m) for m in task["prompt"]]
        try:
            prompt_ids = self.chat.prompt_ids(messages, tools) if messages else []
        except Exception:
            prompt_ids = []
        result = EpisodeResult(
            prompt_ids=prompt_ids,
            response_ids=[],
            loss_mask=[],
            log_probs=[],
            messages=messages,
            response_text="",
            status="failed",
            outcome={},
            num_model_calls=0,
            error=failure.message,
            failure=failure,
        )
        return result, RewardResult(value=0.0)

    async def aclose(self) -> None:
        """Release the world's factory, the engine and the reward, each even when one before it failed
        to: a factory whose `aclose` raised left the engine open and an eval's summary.json unwritten
        (the raise escaped its `finally`), every episode's record kept but no result. A component
        failing to release is logged, as an episode's world is (`release_world`), never the run's
        failure: the episodes it served have ended."""
        reward = self.reward if isinstance(self.reward, Reward) else None
        roles = (("env factory", self.env_factory), ("engine", self.engine), ("reward", reward))
        for role, component in roles:
            if component is None:
                continue
            try:
                await component.aclose()
            except BaseException as exc:
                if not components_failure(exc):
                    raise
                logger.warning(
                    "the %s %s failed to release (its aclose() raised %s): fix its aclose",
                    role,
                    type(component).__name__,
                    describe(exc),
                )
