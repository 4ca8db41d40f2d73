"""An OpenEnv environment's episode inside t3rl's loop, through OpenEnv's own client.

Each episode opens its own session (OpenEnv's `GenericEnvClient`, its answers checked by
`boundary.CheckedClient`: reset/step over the server's WebSocket) and
resets with its task's arguments; the first observation follows the task's system message. The model
acts by calling one tool whose parameters are the environment's action schema (or, with `text_field`,
by answering in text); each call is one `step()`, its observation the tool's result, its reward the
environment's. The episode ends when the environment says done, or when the model stops acting.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from t3rl_core.envs.base import Env, Mode
from t3rl_core.envs.openenv.boundary import CheckedClient, OpenEnvProtocolError
from t3rl_core.envs.openenv.config import OpenEnvEnvConfig
from t3rl_core.envs.openenv.server import EnvServer
from t3rl_core.envs.openenv.tool import action_tool
from t3rl_core.envs.unavailable import WorldUnavailable
from t3rl_core.parsers.nesting import result_nesting_problem
from t3rl_core.secret import mask_url
from t3rl_core.types import Action, AnswerAction, InvalidAction, Message, ToolCallAction, Transition

# Row metadata key holding the task's reset arguments.
RESET_KEY = "openenv_reset"
# Row metadata key holding the environment's name and version its server published when the rows were
# prepared (`EnvServer.release`).
RELEASE_KEY = "openenv_release"
# The error code of OpenEnv's server for an action that fails the action schema: the model's mistake,
# told to it. Every other code (EXECUTION_ERROR: the environment raised; SESSION_ERROR, CAPACITY_REACHED,
# …) is the environment's failure, which fails the episode rather than being trained on.
_REFUSED_ACTION = "VALIDATION_ERROR"
# OpenEnv's client raises a server's error as RuntimeError("Server error: <message> (code: <CODE>)").
_CODE = re.compile(r"\(code: (\w+)\)$")
# Observation fields every OpenEnv observation has, reported apart from what the model reads.
_BOOKKEEPING = ("reward", "done", "metadata")


def observation_text(observation: Mapping[str, Any]) -> str:
    """What the model reads of an observation: its one text field as it is, else its fields as JSON."""
    shown = {key: value for key, value in observation.items() if key not in _BOOKKEEPING}
    texts = [value for value in shown.values() if isinstance(value, str)]
    if len(shown) == 1 and texts:
        return texts[0]
    # json.dumps stops at Python's recursion limit: a server's observation nested deeper failed the
    # episode with Python's words; t3rl's limit is named instead (the environment's failure).
    problem = result_nesting_problem(shown, "the OpenEnv server's observation")
    if problem is not None:
        raise OpenEnvProtocolError(f"{problem}: the environment's failure, not the model's")
    return json.dumps(shown, ensure_ascii=False, sort_keys=True)


def _unsendable(payload: Any) -> str | None:
    """Why `payload` cannot travel to the server as UTF-8 JSON: a text holding a lone surrogate (a JSON
    escape such as "\\ud800" in the model's call decodes to one). OpenEnv's server failed writing its
    own refusal of it (SESSION_ERROR), and the episode failed as the environment's."""
    if isinstance(payload, str):
        try:
            payload.encode("utf-8")
        except UnicodeEncodeError:
            return "a text holds a lone surrogate (\\ud800-\\udfff), which is no character: write characters"
        return None
    if isinstance(payload, Mapping):
        for key, value in payload.items():
            problem = _unsendable(key) or _unsendable(value)
            if problem is not None:
                return f"argument {str(key)[:64].encode('utf-8', 'replace').decode()!r}: {problem}"
        return None
    if isinstance(payload, list | tuple):
        return next((p for p in map(_unsendable, payload) if p is not None), None)
    return None


def _error_code(error: RuntimeError) -> str | None:
    found = _CODE.search(str(error))
    return found.group(1) if found else None


class OpenEnvEpisode(Env):
    """One session of an OpenEnv server."""

    def __init__(self, url: str, config: OpenEnvEnvConfig, reset_args: Mapping[str, Any]) -> None:
        self.url, self.config, self.reset_args = url, config, dict(reset_args)
        self.client: CheckedClient | None = None
        self.rewards: list[float | None] = []  # per model turn: its steps' rewards summed
        self.done = self.stopped = False
        self.error: str | None = None

    async def reset(self) -> Transition:
        self.client = CheckedClient(self.url)
        result = await self.client.reset(**self.reset_args)
        self.done = bool(result.done)
        first = {"role": "user", "content": self._shown(result.observation, "reset")}
        return Transition(messages=[first], done=self.done)

    async def step(self, action: Action) -> Transition:
        assert self.client is not None
        payloads = self._payloads(action)
        if payloads is None:  # the model answered without acting
            self.stopped = True
            self.rewards.append(None)
            return Transition(done=True)
        if isinstance(payloads, str):  # a malformed turn: the parser's reason, no step
            self.rewards.append(None)
            return Transition(messages=[{"role": "user", "content": payloads}])
        messages: list[Message] = []
        rewards: list[float] = []
        role = "tool" if isinstance(action, ToolCallAction) else "user"
        # Which call each payload is: the model reads which call and which arguments were refused.
        named: dict[str, str] = {"name": self.config.tool_name} if role == "tool" else {}
        for payload in payloads:
            unsent = _unsendable(payload)
            if unsent is not None:  # OpenEnv's server fails writing its refusal: the model's mistake
                messages.append({"role": role, **named, "content": f"{self._call(payload)}: {unsent}"})
                continue
            try:
                result = await self.client.step(payload)
            except RuntimeError as exc:
                if _error_code(exc) != _REFUSED_ACTION:
                    raise  # the environment failed, not the model: the episode fails, naming it
                # The action fails the schema; the server's words name neither the call nor its fields.
                refused = f"{self._call(payload)} was refused by the environment: {exc}"
                messages.append({"role": role, **named, "content": refused})
                continue
            rewards.append(float(result.reward or 0.0))
            content = self._shown(result.observation, "step")
            messages.append({"role": role, **named, "content": content})
            if result.done:
                self.done = True
                break
        self.rewards.append(sum(rewards) if rewards else None)
        return Transition(messages=messages, done=self.done)

    def _call(self, payload: Mapping[str, Any]) -> str:
        """The refused action in the model's words: the call and its argument names (their values may
        be anything the model wrote)."""
        keys = ", ".join(repr(key[:64]) for key in list(payload)[:8]) + (", …" if len(payload) > 8 else "")
        if self.config.text_field is not None and list(payload) == [self.config.text_field]:
            return "the answer"
        return f"the call of {self.config.tool_name!r} with arguments [{keys}]"

    def _shown(self, observation: Mapping[str, Any], request: str) -> str:
        """The observation's text, refused past env.max_observation_chars: tokenizing megabytes takes
        minutes, and a context they overflow fails at the engine, blamed on the model's server."""
        text = observation_text(observation)
        limit = self.config.max_observation_chars
        if len(text) > limit:
            raise OpenEnvProtocolError(
                f"the OpenEnv server at {mask_url(self.url)} answered {request} with an observation of "
                f"{len(text):,} characters, more than env.max_observation_chars={limit:,}: the environment's "
                "failure, not the model's (the episode is not scored; raise the limit if it is meant to be "
                "that long)"
            )
        return text

    def _payloads(self, action: Action) -> list[dict[str, Any]] | str | None:
        match action:
            case ToolCallAction(calls=calls) if calls:
                wrong = [call.name for call in calls if call.name != self.config.tool_name]
                if wrong:
                    return f"Unknown tool {wrong[0]!r}: call {self.config.tool_name!r}."
                return [dict(call.arguments) for call in calls]
            case AnswerAction(text=text) | ToolCallAction(text=text) if self.config.text_field is not None:
                return [{self.config.text_field: text}]
            case InvalidAction(error=error):
                return error
        return None

    def outcome(self) -> dict[str, Any]:
        total = sum(r for r in self.rewards if r is not None)
        return {
            "reward": total,
            "metrics": {
                "steps": float(sum(1 for r in self.rewards if r is not None)),
                "done": float(self.done),
            },
            "truncated": not (self.done or self.stopped),
            "error": self.error,
            "turn_rewards": list(self.rewards),
            "turn_steps": [1] * len(self.rewards),
        }

    async def aclose(self) -> None:
        if self.client is not None:
            await self.client.close()


class OpenEnvFactory:
    """The run's server (connected, started or pulled once); every episode opens its own session."""

    def __init__(self, config: OpenEnvEnvConfig) -> None:
        self.config = config
        self.server = EnvServer(config)
        try:
            self.tool = action_tool(config, self.server.schema()["action"])
            self.release = self.server.release()
        except BaseException:
            self.server.close()
            raise

    def __call__(self, task: Mapping[str, Any], mode: Mode) -> OpenEnvEpisode:
        metadata = task.get("metadata") or {}
        problem = stale_tool_problem(self.tool, metadata.get("tools") or []) or other_release_problem(
            self.release, metadata.get(RELEASE_KEY) or {}
        )
        if problem is not None:
            raise WorldUnavailable(problem)
        return OpenEnvEpisode(self.server.url, self.config, metadata.get(RESET_KEY) or {})

    async def aclose(self) -> None:
        self.server.close()


def stale_tool_problem(server_tool: dict[str, Any], row_tools: list[dict[str, Any]]) -> str | None:
    """Why a row's action tool is not the running server's (None = it is): rows prepared against
    another version of the environment, or another environment."""
    name = server_tool["function"]["name"]
    mine = next((t for t in row_tools if (t.get("function") or {}).get("name") == name), None)
    if mine is None:
        return (
            f"the row offers no tool {name!r} (the action tool env.tool_name names): prepare the data again"
        )
    theirs, ours = server_tool["function"]["parameters"], mine["function"].get("parameters") or {}
    if theirs == ours:
        return None
    fields = set(theirs.get("properties") or {}), set(ours.get("properties") or {})
    return (
        f"the server's action schema is not the one the data was prepared with (fields the server takes: "
        f"{sorted(fields[0])}; the rows' tool: {sorted(fields[1])}; the environment changed since): "
        "prepare the data again against this server (the data stage), or point env.url at the server "
        "the data came from"
    )


def other_release_problem(server: dict[str, Any], rows: dict[str, Any]) -> str | None:
    """Why the rows were prepared against another release of the environment than the server runs now
    (None = the same, or the rows pin none: rows of an older t3rl, or of a server without /metadata).
    Rows pinning a release need the server to publish it: one publishing none now (its /metadata gone,
    or not answering in time) was taken for the same environment, and a result on it compared with
    those of the pinned one on the same rows."""
    if not rows or server == rows:
        return None
    if not server:
        return (
            f"the rows were prepared against {_release(rows)} and the server publishes no release now (its "
            "/metadata did not answer with a name and version): nothing tells it is that environment: point "
            "env.url at the server the data came from, or prepare the data again against this server (the "
            "data stage)"
        )
    return (
        f"the rows were prepared against {_release(rows)} and the server now runs {_release(server)}: the "
        "environment changed since (its rewards and dynamics may have too; a result on these rows would not "
        "compare with one on rows of this release): prepare the data again against this server (the data "
        "stage), or point env.url at the server the data came from"
    )


def _release(release: dict[str, Any]) -> str:
    return f"{release.get('name') or 'an unnamed environment'} {release.get('version') or '(no version)'}"


def make_factory(config: OpenEnvEnvConfig) -> OpenEnvFactory:
    return OpenEnvFactory(config)
