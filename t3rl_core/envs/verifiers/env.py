"""A verifiers environment's episode inside t3rl's loop.

verifiers' own rollout (`Environment._run_rollout_state`: `rollout()`, then the rubric's
`score_rollout`, then its cleanup) runs as a task of the episode with an `EpisodeClient` as its model.
Its stop conditions, max turns, per-turn state and `env_response` (tool calls for a ToolEnv, any reply
for a custom MultiTurnEnv) are its own; t3rl renders, tokenizes and samples each model turn, and the
messages verifiers adds to the conversation between two turns are the episode's observations. The
outcome is the rubric's: its weighted reward and each function's score.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from verifiers.errors import InfraError
from verifiers.types import Messages
from verifiers.utils.message_utils import normalize_messages

from t3rl_core import outside_json
from t3rl_core.envs.base import Env, Mode
from t3rl_core.envs.unavailable import WorldUnavailable
from t3rl_core.envs.verifiers.boundary import EnvLoadError, collecting, loaded, raise_problems, scores
from t3rl_core.envs.verifiers.bridge import EpisodeClient, EpisodeEnded
from t3rl_core.envs.verifiers.config import VerifiersEnvConfig
from t3rl_core.envs.verifiers.convert import MODEL, to_chat, to_response
from t3rl_core.envs.verifiers.declared import installed_release
from t3rl_core.envs.verifiers.loader_args import module_name
from t3rl_core.types import Action, AnswerAction, Transition

# Row metadata key holding verifiers' own rollout input (prompt, example_id, answer, info, task).
INPUT_KEY = "verifiers"
# Row metadata key holding the installed environment's package and version the row was prepared from.
RELEASE_KEY = "verifiers_release"


class EnvHung(RuntimeError):
    """The environment did not answer within env.step_timeout_s of the model's turn: the episode fails."""


class EnvTooLong(RuntimeError):
    """The environment added a message longer than env.max_observation_chars: the episode fails."""


class EnvCrashed(RuntimeError):
    """The environment's rollout raised an exception verifiers did not record as its own error."""


class VerifiersEnv(Env):
    """One rollout of a loaded verifiers environment."""

    # Its steps are bounded by its own env.step_timeout_s, which may be set above the default.
    CALL_TIMEOUT_S = None

    def __init__(
        self,
        vf_env: Any,
        rollout_input: Mapping[str, Any],
        env_id: str,
        step_timeout_s: float | None = None,
        max_observation_chars: int | None = None,
    ) -> None:
        self.vf_env, self.input, self.env_id = vf_env, dict(rollout_input), env_id
        self.step_timeout_s, self.max_observation_chars = step_timeout_s, max_observation_chars
        self._rubric_problems: list[str] = []
        self.client = EpisodeClient()
        self._rollout: asyncio.Task[Any] | None = None
        self._prompt: list[dict[str, Any]] = []  # the conversation verifiers last sent to the model
        self._state: Any = None
        self._turns = 0

    async def reset(self) -> Transition:
        # The private entry point is verifiers' own rollout-and-score of one input (what its public
        # run_rollout calls), without converting the State to a dict: the outcome reads its trajectory.
        self._rubric_problems = collecting()
        self._rollout = asyncio.create_task(
            self.vf_env._run_rollout_state(self.input, self.client, MODEL, {})
        )
        row_prompt = [_dump(m) for m in normalize_messages(self.input["prompt"])]
        request = await self._next_request()
        if request is None:
            return self._final(row_prompt)
        self._check_prefix(request, row_prompt, assistant_turn=False)
        return Transition(messages=self._observed(request[len(row_prompt) :]))

    async def step(self, action: Action) -> Transition:
        if self._rollout is None or self._state is not None:
            raise RuntimeError("step() outside a running verifiers rollout")
        self._turns += 1
        self.client.answer(to_response(action, self._turns))
        request = await self._next_request()
        if request is None:
            return self._final(self._prompt, after_assistant=True)
        new_from = len(self._prompt) + 1  # after the model's own turn
        self._check_prefix(request, self._prompt, assistant_turn=True)
        return Transition(messages=self._observed(request[new_from:]))

    async def finish(self) -> None:
        """t3rl ended the episode while verifiers waited for a turn: verifiers ends and scores it."""
        if self._rollout is not None and self._state is None:
            self.client.answer(EpisodeEnded("t3rl ended the episode (a step or token limit)"))
            # Its scoring is bounded as its steps are (CALL_TIMEOUT_S is None: this world bounds its own
            # calls): a rubric awaiting a judge that never answers held the episode for good.
            done, _ = await asyncio.wait({self._rollout}, timeout=self.step_timeout_s)
            if not done:
                self._rollout.cancel()
                raise EnvHung(
                    f"environment '{self.env_id}' did not finish within {self.step_timeout_s:g} s of the "
                    "episode's end (its rubric hangs): the environment's failure, not the model's (raise "
                    "env.step_timeout_s if it takes that long on purpose)"
                )
            self._state = self._ended(self._rollout)

    def outcome(self) -> dict[str, Any]:
        state = self._state
        if state is None:
            raise RuntimeError("the verifiers rollout did not finish")
        raise_problems(self.env_id, self._rubric_problems)
        trajectory = state.get("trajectory") or []
        error = state.get("error")
        if isinstance(error, InfraError):
            raise RuntimeError(
                f"environment '{self.env_id}' failed: {type(error).__name__}: {error} (verifiers' "
                "infrastructure error: the environment's, not the model's; the rollout is not scored)"
            )
        return {
            **scores(state, f"environment '{self.env_id}'"),
            "stop_condition": state.get("stop_condition"),
            "truncated": _cut(state),
            "error": None if error is None else f"{type(error).__name__}: {error}",
            "turn_rewards": [step.get("reward") for step in trajectory],
            "turn_steps": [1] * len(trajectory),
        }

    def oracle(self) -> Action | None:
        """The dataset's answer, where the environment has one (verifiers keeps no gold actions)."""
        answer = self.input.get("answer")
        return AnswerAction(text=str(answer)) if answer else None

    async def aclose(self) -> None:
        if self._rollout is not None and not self._rollout.done():
            self._rollout.cancel()

    async def _next_request(self) -> Messages | None:
        """verifiers' next prompt to the model, or None when its rollout (and scoring) has finished."""
        assert self._rollout is not None
        waiting = asyncio.ensure_future(self.client.requests.get())
        done, _ = await asyncio.wait(
            {waiting, self._rollout}, timeout=self.step_timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        if not done:  # its env_response, a tool or its rubric hangs: the episode fails, the rollout ends
            waiting.cancel()
            self._rollout.cancel()
            raise EnvHung(
                f"environment '{self.env_id}' did not answer within {self.step_timeout_s:g} s of the model's "
                "turn (its env_response, a tool or its rubric hangs): the environment's failure, not the "
                "model's (raise env.step_timeout_s if it takes that long on purpose)"
            )
        if waiting in done:
            return waiting.result()
        waiting.cancel()
        self._state = self._ended(self._rollout)
        return None

    def _ended(self, rollout: asyncio.Task[Any]) -> Any:
        """The finished rollout's state; an exception verifiers let through (its own errors it records in
        the state) is the environment's failure, named as such rather than as a bare KeyError."""
        try:
            return rollout.result()
        except Exception as exc:
            raise EnvCrashed(
                f"environment '{self.env_id}' raised {type(exc).__name__}: {exc} in its rollout (its "
                "env_response, setup_state, a tool or a stop condition; e.g. a reply that is no list of chat "
                "messages): the environment's failure, not the model's (the episode is not scored)"
            ) from exc

    def _check_prefix(self, request: Messages, before: list[dict[str, Any]], *, assistant_turn: bool) -> None:
        """t3rl trains on one growing conversation: verifiers must extend the last prompt (with the
        model's turn) rather than rewrite it."""
        dumped = [_dump(m) for m in request]
        extends = dumped[: len(before)] == before
        if assistant_turn:
            extends = extends and len(dumped) > len(before) and dumped[len(before)]["role"] == "assistant"
        if not extends:
            raise RuntimeError(
                "the environment's next prompt does not extend the conversation (a get_prompt_messages "
                "that rewrites history): t3rl trains token-in/token-out on one growing conversation"
            )
        self._prompt = dumped

    def _final(self, before: list[dict[str, Any]], after_assistant: bool = False) -> Transition:
        """The messages verifiers added after the last model turn (a final env response), and the end."""
        state = self._state
        conversation = [*normalize_messages(state.get("prompt") or []), *(state.get("completion") or [])]
        new = conversation[len(before) + after_assistant :]
        return Transition(messages=self._observed(new), done=True, truncated=_cut(state))

    def _observed(self, messages: Any) -> list[Any]:
        """The messages the environment added, as chat messages; one past env.max_observation_chars fails
        the episode as the environment's (tokenizing megabytes takes minutes, no context holds them)."""
        chats = [to_chat(m) for m in messages]
        limit = self.max_observation_chars
        # Only text is measured: any other content is refused where the episode takes the message.
        longest = max((len(c["content"]) for c in chats if isinstance(c["content"], str)), default=0)
        if limit is not None and longest > limit:
            raise EnvTooLong(
                f"environment '{self.env_id}' added a message of {longest:,} characters, more than "
                f"env.max_observation_chars={limit:,}: the environment's failure, not the model's (the "
                "episode is not scored; raise the limit if it is meant to be that long)"
            )
        return chats


def _cut(state: Any) -> bool:
    """The rollout was cut by a limit, not ended by the environment: a prompt that no longer fits, or
    the environment's own `timeout_seconds` (wall-clock, the model's generation included)."""
    return bool(state.get("is_truncated") or state.get("timed_out"))


def _dump(message: Any) -> dict[str, Any]:
    return message.model_dump(exclude_none=True) if hasattr(message, "model_dump") else dict(message)


def rollout_input(task: Mapping[str, Any]) -> dict[str, Any]:
    """verifiers' RolloutInput of a prepared row (kept in metadata.verifiers by prepare)."""
    stored = (task.get("metadata") or {}).get(INPUT_KEY)
    if not isinstance(stored, Mapping):
        raise ValueError(f"a verifiers row needs metadata.{INPUT_KEY}: prepare it with the verifiers env")
    data = dict(stored)
    if isinstance(data.get("info"), str):
        data["info"] = outside_json.loads(data["info"], "a row's info")
    return data


class VerifiersEnvFactory:
    """Loads the environment once with verifiers' loader; every episode runs one rollout of it."""

    def __init__(self, config: VerifiersEnvConfig) -> None:
        self.config = config
        self.vf_env = load(config)
        self.release = installed_release(module_name(config.id))

    def __call__(self, task: Mapping[str, Any], mode: Mode) -> VerifiersEnv:
        prepared = (task.get("metadata") or {}).get(RELEASE_KEY) or {}
        if prepared and not self.release:
            # Installed now without a version (from source, editable): nothing tells it is that release.
            raise WorldUnavailable(
                f"environment '{self.config.id}': the rows were prepared from {_shown(prepared)} and the "
                "installed module has no release now (no dist-info with a version beside it: installed from "
                "source or editable), so nothing tells its dataset, prompts and rubric are that release's: "
                "install that release (`prime env install`), or prepare the data again (the data stage)"
            )
        if prepared and prepared != self.release:
            raise WorldUnavailable(
                f"environment '{self.config.id}': the rows were prepared from {_shown(prepared)} and "
                f"{_shown(self.release)} is installed now (its dataset, prompts or rubric may differ; a "
                "result on these rows would not compare with one on rows of this release): prepare the data "
                f"again (the data stage), or `prime env install` the release the data came from"
            )
        config = self.config
        return VerifiersEnv(
            self.vf_env, rollout_input(task), config.id, config.step_timeout_s, config.max_observation_chars
        )

    async def aclose(self) -> None:
        """The environment lives as long as the process (verifiers tears it down at exit)."""


def _shown(release: Mapping[str, Any]) -> str:
    return f"{release.get('package')} {release.get('version')}"


def load(config: VerifiersEnvConfig) -> Any:
    """The environment of `id` as verifiers loads it, refusing rubrics one episode cannot be scored by."""
    vf_env = loaded(config.id, config.args)
    if vf_env.requires_group_rollouts:
        raise EnvLoadError(
            f"environment '{config.id}' has group reward functions (its rubric scores rollouts of a prompt "
            "together); t3rl scores each episode alone"
        )
    return vf_env


def make_factory(config: VerifiersEnvConfig) -> VerifiersEnvFactory:
    return VerifiersEnvFactory(config)
