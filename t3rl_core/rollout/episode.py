"""The one episode loop of training and evaluation: token ids in, token ids out (TITO).

Each model call reads the accumulated token ids (text is never re-tokenized); its tokens and log-probs
join the trajectory with loss mask 1; the rest of the turn, the environment's observations and the
next generation prompt join as chat-template deltas with loss mask 0. Nothing the model or the
environment does escapes as an exception: it ends the episode with a status and an error.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from t3rl_core.chat.message_form import normal_message
from t3rl_core.chat.scalar_text import scalar_message, scalar_text
from t3rl_core.counts import counted
from t3rl_core.credit import TURN_FIELDS, turn_fields_problem
from t3rl_core.engines.answers import BadGeneration, length_problem, plain_generation
from t3rl_core.engines.base import Generation, GenerationContext, SamplingParams
from t3rl_core.finite import shown
from t3rl_core.rollout.failures import ABORT_REQUESTED, ENV_ERROR, Failure, components_failure, describe
from t3rl_core.rollout.outcome_json import json_outcome
from t3rl_core.rollout.trajectory import TitoViolation, Trajectory
from t3rl_core.rollout.verdict_fields import (
    SCORE_FIELDS,
    VERDICT_FIELDS,
    score_fields_problem,
    verdict_fields_problem,
)
from t3rl_core.types import Action, Message, Transition

if TYPE_CHECKING:
    from t3rl_core.chat.format import ChatFormat
    from t3rl_core.config import RolloutConfig
    from t3rl_core.engines.base import Engine
    from t3rl_core.envs.base import Env
    from t3rl_core.envs.format_repair import FormatRepair

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

# parse_error: a malformed turn the format-repair protocol could not get fixed (t3rl_core.envs.format_repair).
Status = Literal["completed", "truncated", "aborted", "failed", "parse_error"]


class ActionParser(Protocol):
    def parse(self, text: str) -> Action: ...


@dataclass
class EpisodeResult:
    """Everything one episode produced; the response lists are aligned token for token."""

    prompt_ids: list[int]
    response_ids: list[int]
    loss_mask: list[int]
    log_probs: list[float]
    messages: list[Message]  # the whole conversation, assistant content verbatim
    response_text: str  # the model's text only, all calls concatenated
    status: Status
    outcome: dict[str, Any]
    num_model_calls: int
    error: str | None = None
    # Seconds awaiting the engine, and everything else (parsing, env steps, tokenization, rendering).
    timings: dict[str, float] = field(default_factory=dict)
    # First token where the trajectory differs from a fresh render (only with rollout.tito_drift_check).
    drift_at: int | None = None
    # Malformed turns the format-repair protocol retried (each counted once, however many attempts).
    format_repairs: int = 0
    # Response offset of the model's first token of each env step (t3rl_core.credit.turn_spans).
    step_starts: list[int] = field(default_factory=list)
    # What the environment, the engine, the reward or t3rl broke (None: the policy's own episode).
    failure: Failure | None = None
    # Each model call's bookkeeping from the engine (SGLang's prompt and cached tokens, weight version).
    call_meta: list[dict[str, Any]] = field(default_factory=list)
    # Inserted tokens (observations, template text) dropped at the episode's token limits.
    cut_tokens: int = 0
    # Tokens engines answered after a turn's stop token or stop string, dropped (never trained).
    after_stop_tokens: int = 0
    # Each env call's Transition.info (reset's first, then each step's), as JSON data.
    step_info: list[dict[str, Any]] = field(default_factory=list)
    # The samplers whose draws the episode's seed may not decide, each saying why (an unseeded policy, a
    # world's `Env.unseeded_draws`); empty: the same seed plays the same episode, as far as t3rl sees.
    unseeded: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not len(self.log_probs) == len(self.loss_mask) == len(self.response_ids):
            raise TitoViolation(
                f"TITO violation: response {len(self.response_ids)}, loss mask {len(self.loss_mask)}, "
                f"log-probs {len(self.log_probs)}"
            )

    @property
    def response_length(self) -> int:
        return len(self.response_ids)

    @property
    def tokens(self) -> list[int]:
        return self.prompt_ids + self.response_ids


class _Ended(Exception):
    """Ends the loop with a status (and an error, and what broke, when something failed)."""

    def __init__(self, status: Status, error: str | None = None, failure: Failure | None = None) -> None:
        super().__init__(error or status)
        self.status, self.error, self.failure = status, error, failure


# The largest log-prob an engine may answer: 0, with room for rounding (a log-softmax computed as
# log(softmax) can give 1e-7); past it the number is no log-probability at all.
MAX_LOG_PROB = 1e-3


def generation_problem(
    generation: Generation, max_new_tokens: int, token_id_limit: int | None = None
) -> str | None:
    """What makes an engine's answer unusable as the model's own tokens, whatever the engine: more
    tokens than the call allowed (the episode's token limits rest on it), an id no token has (negative,
    or at or past `token_id_limit`, the model's embedding rows: t3rl_core/chat/vocab_limit.py), or a
    log-prob that is no finite number or above 0 (slime's importance ratios read them: one NaN makes
    the loss NaN)."""
    ids = generation.token_ids
    # A Generation checks its lengths when built, but its lists are the engine's and may change after
    # (a plugin appending its stop token): one log-prob per token, or the engine's failure, not a
    # TitoViolation counted as t3rl's bug.
    problem = length_problem(ids, generation.log_probs)
    if problem is not None:
        return problem
    if len(ids) > max_new_tokens:
        return f"{counted(len(ids), 'token')} to a call of max_new_tokens={max_new_tokens}"
    if ids and min(ids) < 0:
        return f"negative token id {min(ids)}"
    if ids and token_id_limit is not None and max(ids) >= token_id_limit:
        return f"token id {max(ids)}, past the model's vocabulary ({token_id_limit} ids)"
    # One sum in C, finite when every log-prob is; it also refuses finite ones whose sum overflows
    # (magnitudes near 1e308: no sampled token's).
    if not math.isfinite(sum(generation.log_probs)):
        bad = [lp for lp in generation.log_probs if not math.isfinite(lp)][:5]
        return f"log-probs that are no finite number: {bad or 'their sum overflows'}"
    # A log-prob is at most 0 (a probability at most 1): a positive one is a probability, a logit or
    # a sign error, and slime's importance ratios (exp of the trainer's log-prob minus it) read it.
    if generation.log_probs and max(generation.log_probs) > MAX_LOG_PROB:
        bad = [lp for lp in generation.log_probs if lp > MAX_LOG_PROB][:5]
        return f"log-probs above 0, which no probability has: {bad}"
    return None


def _aborted(generation: Generation) -> _Ended:
    error = generation.error or "the engine aborted the request"
    kind = ABORT_REQUESTED if generation.on_request else "abort"
    return _Ended("aborted", error, Failure("engine", kind, error))


class _Episode:
    """State of one running episode; `run` drives it."""

    def __init__(
        self,
        task: Mapping[str, Any],
        env: Env,
        engine: Engine,
        chat: ChatFormat,
        parser: ActionParser,
        sampling: SamplingParams,
        limits: RolloutConfig,
        tools_key: str | None,
    ) -> None:
        self.tools_key = tools_key
        self.env, self.engine, self.chat, self.parser, self.limits = env, engine, chat, parser, limits
        # Each message in one form, content parts of text as text and a few-shot call's arguments an
        # object (chat/message_form.py: task_parts refuses a row whose messages have no such form).
        self.messages: list[Message] = [
            scalar_message(dict(normal_message(message, "")[0])) for message in task["prompt"]
        ]
        self.tools = (task.get("metadata") or {}).get("tools") or None
        self.sampling = dataclasses.replace(
            sampling,
            stop=tuple(dict.fromkeys((*sampling.stop, *env.stop))),
            stop_token_ids=tuple(dict.fromkeys((*sampling.stop_token_ids, *chat.stop_token_ids))),
        )
        self.context = GenerationContext(
            env=env, messages=self.messages, tool_call_parser=getattr(parser, "tool_call_parser", None)
        )
        # Engine.answers_plain: its answers hold Generation's declared types, taken as they are.
        self.plain_answers = getattr(engine, "answers_plain", False) is True
        self.trajectory: Trajectory | None = None
        self.model_texts: list[str] = []  # the texts of the model turns kept in the conversation
        # The model's own assistant messages (by identity: a repair deletes messages before them), which
        # alone may hold a turn's control tokens in a render (the drift check's: ControlText.hide).
        self.model_messages: list[Message] = []
        self.model_calls = 0  # every answered call, also the repair attempts of a repaired turn
        self.format_repairs = 0
        self.step_starts: list[int] = []
        self.env_steps = 0  # env.step() calls: the steps a world's turn_steps must add up to
        # Each env call's Transition.info, in order (reset's first): JSON data, kept in the records.
        self.step_info: list[dict[str, Any]] = []
        # Response offsets [start, end) of each model call's tokens kept (the drift check reads where
        # the model's own tokens begin and end: ChatFormat.tito_drift).
        self.model_spans: list[tuple[int, int]] = []
        self.generation_s = 0.0
        self.after_stop = 0  # tokens engines answered past a turn's stop, dropped (_through_stop)
        self.call_meta: list[dict[str, Any]] = []
        # Message index → character spans of the env's inline text in that (assistant) message: the
        # drift check encodes them as the loop did, each on its own as text.
        self.inline_spans: dict[int, list[tuple[int, int]]] = {}
        # True while the trajectory ends where the model writes next: after a generation prompt, or
        # inside its turn after inline text (`mid_turn`).
        self.awaiting_model = True
        self.mid_turn = False

    async def run(self) -> None:
        first = await self._env_call(self.env.reset)
        self._keep_info(first)
        if first.inline is not None:
            error = "env.reset() returned inline text; only step() may continue a model turn"
            raise _Ended("failed", error, Failure("env", "InlineReset", error))
        self.messages.extend(map(scalar_message, self._world_messages(first)))
        self._check_roles(self.messages)
        self._check_placed(self.messages)
        prompt_ids = await self.chat.prompt_ids_async(self.messages, self.tools, tools_key=self.tools_key)
        self.trajectory = Trajectory(prompt_ids, self._response_limit(len(prompt_ids)))
        if first.done:
            raise _Ended("truncated" if first.truncated else "completed")
        while True:
            self.step_starts.append(len(self.trajectory.response_ids))
            continuing = self.mid_turn  # this call goes on with the assistant message of the last one
            generation, text = await self._model_turn(self.sampling, continuing)
            last_token = generation.token_ids[-1] if generation.token_ids else None
            if generation.finish_reason != "stop":
                self._close_turn(last_token)
                if generation.finish_reason == "length":
                    self._cut_off(text)
                    raise _Ended("truncated")
                raise _aborted(generation)
            action = self.parser.parse(text)
            repair = self.env.format_repair
            if repair is not None and not continuing and self._format_problem(action) is not None:
                action, last_token = await self._repair(repair, generation)
            self.env_steps += 1
            transition = await self._env_call(self.env.step, action)
            await self._observe(transition, last_token)

    async def _model_turn(self, sampling: SamplingParams, continuing: bool = False) -> tuple[Generation, str]:
        """One model call, its text appended to the conversation (to the open assistant message when
        `continuing`)."""
        generation = await self._generate(sampling)
        text = self.chat.model_text(generation.token_ids)
        self.model_texts.append(text)
        if continuing:
            self.messages[-1]["content"] += text
        else:
            self.messages.append({"role": "assistant", "content": text})
            self.model_messages.append(self.messages[-1])
        return generation, text

    async def _repair(self, repair: FormatRepair, failed: Generation) -> tuple[Action, int | None]:
        """The format-repair protocol (t3rl_core.envs.format_repair) for the malformed turn `failed`:
        close it, send the correction, retry at the repair temperature. Returns the repaired action and
        its last token, the failed turns kept untrained (loss mask 0) or taken back per `repair`. A
        repair that fails or cannot run ends the episode (`parse_error`; `aborted` if the engine
        aborts), with every token from the failed turn on untrained."""
        assert self.trajectory is not None
        self.format_repairs += 1
        start = len(self.trajectory.response_ids) - len(failed.token_ids)
        first_message, first_text = len(self.messages) - 1, len(self.model_texts) - 1
        try:
            action, generation, retry_start = await self._retry(repair, failed)
        except _Ended as ended:
            self.trajectory.exclude(start)
            if ended.status == "truncated":
                limit = "a step or token limit was reached before the format was repaired"
                raise _Ended("parse_error", limit) from None
            raise
        if repair.keep_in_history:
            self.trajectory.exclude(start, retry_start)
        else:
            self.trajectory.rewind(start)
            self.trajectory.append_model(generation.token_ids, generation.log_probs)
            self.model_spans = [span for span in self.model_spans if span[1] <= start]
            self.model_spans.append((start, len(self.trajectory.response_ids)))
            del self.messages[first_message:-1]
            del self.model_texts[first_text:-1]
        if not repair.train_on_repaired:
            self.trajectory.exclude(len(self.trajectory.response_ids) - len(generation.token_ids))
        return action, generation.token_ids[-1] if generation.token_ids else None

    async def _retry(self, repair: FormatRepair, failed: Generation) -> tuple[Action, Generation, int]:
        """Correction and retry until a turn parses: (its action, its generation, where it starts)."""
        assert self.trajectory is not None
        sampling = dataclasses.replace(self.sampling, temperature=repair.temperature)
        generation, problem = failed, ""
        for _ in range(repair.attempts):
            correction: Message = {"role": "user", "content": repair.message}
            self.messages.append(correction)
            last_token = generation.token_ids[-1] if generation.token_ids else None
            self.trajectory.append_observation(
                self.chat.turn_end_ids(last_token, [correction], add_generation_prompt=True)
            )
            self.awaiting_model = True
            retry_start = len(self.trajectory.response_ids)
            generation, text = await self._model_turn(sampling)
            if generation.finish_reason == "abort":
                self._close_turn(generation.token_ids[-1] if generation.token_ids else None)
                raise _aborted(generation)
            action = self.parser.parse(text)
            problem = (
                self._format_problem(action) or ""
                if generation.finish_reason == "stop"
                else "the output was cut off at the token limit"
            )
            if not problem:
                return action, generation, retry_start
        self._close_turn(generation.token_ids[-1] if generation.token_ids else None)
        raise _Ended("parse_error", f"the format repair failed: {problem}")

    def _format_problem(self, action: Action) -> str | None:
        """The world's `format_problem(action)`: None, or the problem as text. Anything else is the
        world's failure: a False (or "") meant as "no problem" sent every correct turn through the
        format repair (a correction after it, the turn untrained or taken back), and True ended the
        episode as 'the format repair failed: True'."""
        try:
            problem = self.env.format_problem(action)
        except BaseException as exc:
            if not components_failure(exc):
                raise
            error = f"{ENV_ERROR}{describe(exc)}"
            raise _Ended("failed", error, Failure.from_exception("env", exc, error)) from exc
        if problem is None or (isinstance(problem, str) and problem):
            return problem
        error = (
            f"world {type(self.env).__name__}.format_problem returned {shown(problem, 60)}: return None "
            "when the action keeps the format, else the problem as text"
        )
        raise _Ended("failed", error, Failure("env", "InvalidFormatProblem", error))

    def _response_limit(self, prompt_length: int) -> int | None:
        """The response tokens `max_response_len` and `max_context_len` leave after the prompt."""
        limits = [] if self.limits.max_response_len is None else [self.limits.max_response_len]
        if self.limits.max_context_len is not None:
            limits.append(self.limits.max_context_len - prompt_length)
        return min(limits) if limits else None

    def _no_room(self) -> str:
        """Why the episode ends before the policy's first call: its prompt leaves no response token."""
        assert self.trajectory is not None
        prompt = len(self.trajectory.prompt_ids)
        return (
            f"the prompt of {prompt} tokens leaves no response token under rollout.max_context_len="
            f"{self.limits.max_context_len} (max_response_len={self.limits.max_response_len}): the policy "
            "never played; drop such rows when the data is prepared, or raise the limit"
        )

    async def _generate(self, sampling: SamplingParams) -> Generation:
        assert self.trajectory is not None
        limit = self.trajectory.max_response
        budget = None if limit is None else limit - len(self.trajectory.response_ids)
        if self.model_calls >= self.limits.max_num_steps or (budget is not None and budget <= 0):
            if self.mid_turn:
                self._close_turn(None)
            no_room = self.model_calls == 0 and budget is not None and budget <= 0
            raise _Ended("truncated", self._no_room() if no_room else None)
        if budget is not None:
            sampling = dataclasses.replace(sampling, max_new_tokens=min(sampling.max_new_tokens, budget))
        started = time.perf_counter()
        try:
            generation = await self.engine.generate(self.trajectory.tokens, sampling, self.context)
        except BaseException as exc:
            if not components_failure(exc):
                raise
            error = f"engine failed: {describe(exc)}"
            raise _Ended("aborted", error, Failure.from_exception("engine", exc, error)) from exc
        finally:
            self.generation_s += time.perf_counter() - started
        # The one place an answer is accepted: of exactly Generation's declared types (a plugin engine's
        # numpy ids converted, None or a bool id refused as the engine's failure, never t3rl's bug);
        # an engine declaring plain answers (t3rl's own) is taken as it is, with no check per token.
        try:
            if not (self.plain_answers and type(generation) is Generation):
                generation = plain_generation(generation)
            problem = generation_problem(generation, sampling.max_new_tokens, self.chat.token_id_limit)
        except BadGeneration as exc:
            problem = str(exc)
        if problem is not None:
            error = f"engine answered what was not asked for: {problem}"
            raise _Ended("aborted", error, Failure("engine", "BadGeneration", error))
        # A model call is an answer the episode takes: an engine that raised, answered what was not
        # asked for, or aborted before any token gave none. Counted apart, the same server failure was
        # one call more in the record when the engine answered `abort` than when it raised.
        if generation.token_ids or generation.finish_reason != "abort":
            self.model_calls += 1
        generation = self._through_stop(generation, sampling)
        if generation.meta:
            self.call_meta.append(generation.meta)
        self.trajectory.append_model(generation.token_ids, generation.log_probs)
        if generation.token_ids:
            end = len(self.trajectory.response_ids)
            self.model_spans.append((end - len(generation.token_ids), end))
        self.awaiting_model = self.mid_turn = False
        return generation

    def _through_stop(self, generation: Generation, sampling: SamplingParams) -> Generation:
        """`generation` up to and including its first stop: a stop token id, or the token whose text
        completes a stop string. A turn ends there: what an engine answers past it is not the policy's
        turn and is dropped (counted in `after_stop`), the turn ending as stopped whatever the finish
        reason said (an abort stays an abort). Kept, those tokens were trained as the model's, the turn
        delta repeated the turn's closing after them, and the context held a turn no render writes
        (`...</tool_call><|im_end|>junk<|im_end|>`). SGLang's speculative decoding can answer them (an
        accepted block crossing a stop, reported as `length`); a plugin engine may. A stop on the last
        token leaves the answer as it is (a `length` cut there stays a cut)."""
        ids = generation.token_ids
        end = len(ids)
        for stop in sampling.stop_token_ids:
            try:
                end = ids.index(stop, 0, end - 1) + 1  # before the last token only
            except ValueError:
                continue
        if sampling.stop and end > 1 and self._holds_stop(ids[: end - 1], sampling.stop):
            low, high = 1, end - 1  # the shortest prefix holding a stop string (one decode per halving)
            while low < high:
                middle = (low + high) // 2
                low, high = (
                    (low, middle) if self._holds_stop(ids[:middle], sampling.stop) else (middle + 1, high)
                )
            end = low
        if end == len(ids):
            return generation
        self.after_stop += len(ids) - end
        logger.warning(
            "the engine answered %d tokens after the turn's stop (at token %d of %d); they are dropped",
            len(ids) - end, end, len(ids),
        )  # fmt: skip
        # An abort stays one (the engine stopped the request: slime hands the sample over again).
        finish = "abort" if generation.finish_reason == "abort" else "stop"
        return dataclasses.replace(
            generation, token_ids=ids[:end], log_probs=generation.log_probs[:end], finish_reason=finish
        )

    def _holds_stop(self, ids: list[int], stops: tuple[str, ...]) -> bool:
        text = self.chat.decode(ids)
        return any(stop in text for stop in stops if stop)

    def _cut_off(self, text: str) -> None:
        """Hand the env the text of a call cut at the token limit (`Env.cut_off`)."""
        try:
            self.env.cut_off(text)
        except BaseException as exc:
            if not components_failure(exc):
                raise
            error = f"{ENV_ERROR}{describe(exc)}"
            raise _Ended("failed", error, Failure.from_exception("env", exc, error)) from exc

    async def _env_call(self, method: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        """`method(*args)` of the world (reset, step, finish), bounded by its class's CALL_TIMEOUT_S;
        what it raises, or its bound passed, ends the episode as the world's failure."""
        bound = getattr(self.env, "CALL_TIMEOUT_S", None)
        deadline = asyncio.timeout(bound)
        world = type(self.env).__name__
        called = f"{world}.{getattr(method, '__name__', 'call')}()"
        started = time.monotonic()
        try:
            async with deadline:
                answer = await method(*args)
        except BaseException as exc:
            if deadline.expired():  # ours, not a TimeoutError the world raised itself
                error = (
                    f"{ENV_ERROR}{called} did not return within {bound:g} s "
                    f"({world}.CALL_TIMEOUT_S; raise it for a world whose calls take longer)"
                )
            elif components_failure(exc):
                error = f"{ENV_ERROR}{describe(exc)}"
            else:
                raise
            raise _Ended("failed", error, Failure.from_exception("env", exc, error)) from exc
        # CALL_TIMEOUT_S bounds the call's time, measured, not only what asyncio could cut: a call that
        # held the event loop (time.sleep, blocking I/O in an async def) or caught the cancellation and
        # returned anyway ran past its bound with the episode going on as if it had not.
        took = time.monotonic() - started
        if bound is not None and took > bound:
            how = (
                "it caught the cancellation and returned anyway: let asyncio.CancelledError propagate"
                if deadline.expired()
                else "it held the event loop (a time.sleep or blocking I/O in an async def), so no episode "
                "ran meanwhile and asyncio could not cut it: run blocking work in asyncio.to_thread"
            )
            error = (
                f"{ENV_ERROR}{called} took {took:.3g} s, past its {bound:g} s bound "
                f"({world}.CALL_TIMEOUT_S): {how}"
            )
            raise _Ended("failed", error, Failure("env", "TimeoutError", error))
        return answer

    async def _observe(self, transition: Transition, last_token: int | None) -> None:
        """Append what the env returned: inline text inside the model's turn, or the turn's end and
        new messages; ends the episode when the env is done or the step limit is reached."""
        assert self.trajectory is not None
        observations = self._world_messages(transition)
        self._keep_info(transition)
        if transition.inline is not None:
            self._check_turn_open(last_token)
            inline = scalar_text(transition.inline)
            self.trajectory.append_observation(await self.chat.encode_text_async(inline))
            start = len(self.messages[-1]["content"])
            self.messages[-1]["content"] += inline
            span = (start, start + len(inline))
            self.inline_spans.setdefault(len(self.messages) - 1, []).append(span)
            if transition.done:
                self._close_turn(None)
                raise _Ended("truncated" if transition.truncated else "completed")
            self.awaiting_model = self.mid_turn = True
            return
        observations = [scalar_message(message) for message in observations]
        self._check_roles(observations, after_model=True)
        self.messages.extend(observations)
        more = not transition.done and self.model_calls < self.limits.max_num_steps
        self.trajectory.append_observation(
            await self.chat.turn_end_ids_async(last_token, observations, add_generation_prompt=more)
        )
        self.awaiting_model = more
        if transition.done:
            raise _Ended("truncated" if transition.truncated else "completed")
        if not more:
            raise _Ended("truncated")

    def model_turns(self) -> set[int]:
        """The indices of the model's own assistant messages in the conversation."""
        own = {id(message) for message in self.model_messages}
        return {index for index, message in enumerate(self.messages) if id(message) in own}

    def _check_turn_open(self, last_token: int | None) -> None:
        """Inline text continues the model's turn (`Transition.inline`), so the turn must still be open:
        the call ended at a stop string (the world's `Env.stop`, ReTool's `</code>`), was cut, or wrote
        no stop token at all. After the turn-ending token of the chat family (`<|im_end|>`, Llama-3's
        `<|eom_id|>`, GLM's `<|observation|>`) the trained context held `...<|im_end|>` then the
        world's text inside what the messages record as one assistant message: a context no render
        writes, which only `rollout.tito_drift_check` reported. The world's failure."""
        if last_token is None or last_token not in self.chat.stop_token_ids:
            return
        world = type(self.env).__name__
        ended = self.chat.decode([last_token])
        error = (
            f"world {world} returned inline text after the model ended its turn with {ended!r}: inline text "
            f"continues a turn the model left open at one of the world's stop strings ({world}.stop is "
            f"{tuple(self.env.stop)!r}); declare the text that ends a call in {world}.stop (e.g. the call "
            "format's closing tag), or return the result as messages"
        )
        raise _Ended("failed", error, Failure("env", "InlineAfterTurnEnd", error))

    def _keep_info(self, transition: Transition) -> None:
        """Keep `transition.info`, the world's note on this call (ReTool's sandbox status, BFCL's turn
        score), as the records keep it: a text-keyed mapping of JSON data, else the world's failure (it
        was read by nothing, so a note no record could hold went unsaid)."""
        info = transition.info
        if not isinstance(info, Mapping):
            problems = [f"Transition.info is a {type(info).__name__}, not a mapping"]
        else:
            kept, problems = json_outcome(info, "Transition.info")
        if problems:
            error = (
                f"world {type(self.env).__name__} returned {'; '.join(problems[:3])}. Return text-keyed "
                "dicts, lists, text, finite numbers, bools or None there (each call's info is kept in the "
                "eval's records and slime's sample metadata as step_info)"
            )
            raise _Ended("failed", error, Failure("env", "InvalidInfo", error))
        self.step_info.append(kept)

    def _world_messages(self, transition: Transition) -> list[Message]:
        """`transition`'s messages, each a mapping whose role and content are text, and its inline text
        text: a tool's result handed over as a list or a dict (10,000 levels deep, or one) failed as t3rl's
        bug in one family's template and vanished unsaid in another's. A world writes its results as
        text (json.dumps), and a message that is not is the world's failure."""
        messages = list(transition.messages)
        for index, message in enumerate(messages):
            if type(message) is dict or isinstance(message, Mapping):
                messages[index], form = normal_message(message, f"message {index}")
                if form is not None:
                    error = f"world {type(self.env).__name__} returned a message no template renders: {form}"
                    raise _Ended("failed", error, Failure("env", "InvalidMessage", error))
        if transition.inline is not None and not isinstance(transition.inline, str):
            problem = f"inline text that is a {type(transition.inline).__name__}"
        else:
            problem = next(filter(None, map(_message_problem, messages)), None)
        if problem is None:
            # Copies: the episode owns what it took. A world keeping the messages it returned and editing
            # them later (its own history, trimmed or annotated) changed the recorded conversation, and
            # the drift check's render, away from the tokens the model read. JSON data too, as an
            # outcome is: a message's tuple key (a tool_call_id kept as a uuid, a set of sources) raised
            # out of the eval's record writer, NaN was written as no JSON, the rest as its str unsaid.
            copies = []
            for index, message in enumerate(messages):
                copy, problems = json_outcome(message, f"message {index}")
                if problems:
                    error = (
                        f"world {type(self.env).__name__} returned a message that is no JSON data: "
                        f"{'; '.join(problems)}. Return text-keyed dicts, lists, text, finite numbers, "
                        "bools or None (a tool_call_id as text)"
                    )
                    raise _Ended("failed", error, Failure("env", "InvalidMessage", error))
                copies.append(copy)
            return copies
        error = f"world {type(self.env).__name__} returned {problem}, not text: write it as text (json.dumps)"
        raise _Ended("failed", error, Failure("env", "InvalidMessage", error))

    def _check_roles(self, messages: list[Message], after_model: bool = False) -> None:
        """Every message entering the conversation (the row's, the world's) is one the chat template
        writes: a role it skips would hide the message's content from the model, unsaid. `after_model`:
        the world's messages after a model turn, which the template must write there (in the delta)."""
        drops = self.chat.drops_after_model if after_model else self.chat.drops_role
        written = set() if after_model else self.chat.written_roles
        for message in messages:
            role = message.get("role")
            if isinstance(role, str) and role not in written and drops(role):
                roles = [r for r in ("system", "user", "assistant", "tool") if not drops(r)]
                where = " after the model's turn" if after_model else ""
                error = (
                    f"the chat template writes nothing of a '{role}' message{where}, so its content would "
                    f"never reach the model: give it a role the template writes there ({', '.join(roles)})"
                )
                raise _Ended("failed", error, Failure("env", "UnrenderedRole", error))

    def _check_placed(self, messages: list[Message]) -> None:
        """A message of the prompt after an assistant turn (a row's few-shot history, a world's opening)
        is written there: DeepSeek-V3's and GLM-4-0414's templates write every system message in the
        prompt's head, so a row's `system` message after a worked answer ("from now on, answer in
        French") was moved before the turns it follows, unsaid. The probe of a world's message after
        the model's turn (`ChatFormat.drops_after_model`) decides it for the prompt too."""
        answered = next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), len(messages))
        for index in range(answered + 1, len(messages)):
            role = messages[index].get("role")
            if isinstance(role, str) and self.chat.drops_after_model(role):
                roles = [r for r in ("user", "assistant", "tool") if not self.chat.drops_after_model(r)]
                error = (
                    f"the chat template does not write a '{role}' message where the prompt puts it "
                    f"(message {index}, after an assistant turn): it moves or drops it, so the model "
                    f"would read it elsewhere or not at all; put its text in the first system message, "
                    f"or give it a role the template writes there ({', '.join(roles)})"
                )
                raise _Ended("failed", error, Failure("env", "UnrenderedRole", error))

    def _close_turn(self, last_token: int | None) -> None:
        assert self.trajectory is not None
        self.trajectory.append_observation(self.chat.turn_end_ids(last_token))
        self.awaiting_model = self.mid_turn = False


def _message_problem(message: Any) -> str | None:
    """What keeps a world's `message` from being a chat message of text; None when nothing does."""
    if type(message) is not dict and not isinstance(message, Mapping):  # a dict without the ABC's check
        return f"a message that is a {type(message).__name__}"
    for key in ("role", "content"):
        if not isinstance(message.get(key), str):
            return f"a message whose {key} is a {type(message.get(key)).__name__}"
    return None


def _prompt_ids(chat: ChatFormat, episode: _Episode) -> list[int]:
    """The task prompt's ids of an episode that ended before its trajectory began (its env's reset
    failed), so that its record keeps the prompt; none when the prompt cannot be rendered either."""
    try:
        return chat.prompt_ids(episode.messages, episode.tools, tools_key=episode.tools_key)
    except Exception:
        return []


def _verdict_problem(outcome: Mapping[str, Any], _steps: int) -> str | None:
    return verdict_fields_problem(outcome)


def _score_problem(outcome: Mapping[str, Any], _steps: int) -> str | None:
    return score_fields_problem(outcome)


# Checks of a world's outcome and the env steps the episode took: (what is wrong, None when nothing;
# the fields it reads; error type).
_OUTCOME_CHECKS: tuple[tuple[Callable[[Mapping[str, Any], int], str | None], frozenset[str], str], ...] = (
    (turn_fields_problem, TURN_FIELDS, "InvalidTurnFields"),
    (_verdict_problem, frozenset(VERDICT_FIELDS), "InvalidOutcome"),
    (_score_problem, frozenset(SCORE_FIELDS), "InvalidOutcome"),
)


async def run_episode(
    task: Mapping[str, Any],
    *,
    env: Env,
    engine: Engine,
    chat: ChatFormat,
    parser: ActionParser,
    sampling: SamplingParams,
    limits: RolloutConfig,
    tools_key: str | None = None,
) -> EpisodeResult:
    """Run one episode of `task` (a dataset row: prompt messages, metadata.tools) to its end;
    `tools_key` is the tools' `tools_cache_key` when the caller has computed it."""
    started = time.perf_counter()
    try:
        episode = _Episode(task, env, engine, chat, parser, sampling, limits, tools_key)
        status, error, failure, outcome = await _played(episode, env)
    finally:
        # Whatever ended the episode, a cancellation too (an eval's Ctrl-C, a task slime drops): the
        # world's resources (an OpenEnv session, a user simulator's client, a verifiers rollout) are
        # released. A cancelled episode left them open: one OpenEnv session per episode in flight.
        await release_world(env)
    trajectory = episode.trajectory or Trajectory(_prompt_ids(chat, episode))
    drift_at = None
    if limits.tito_drift_check and episode.trajectory is not None and not episode.mid_turn:
        drift_at = chat.tito_drift(
            trajectory.tokens,
            episode.messages,
            episode.tools,
            add_generation_prompt=episode.awaiting_model,
            env_spans=episode.inline_spans,
            # An episode that failed ends where it failed: after a model turn whose closing (the
            # turn delta) the world's failure never let in, its tokens are a prefix of the render. Read
            # whole, every such failure was logged as TITO drift at its last token.
            cut=trajectory.cut > 0 or failure is not None,
            model_turns=episode.model_turns(),
            model_spans=[
                (len(trajectory.prompt_ids) + a, len(trajectory.prompt_ids) + b)
                for a, b in episode.model_spans
            ],
        )
        if drift_at is not None:
            logger.warning("TITO drift: the trajectory differs from a fresh render at token %d", drift_at)
    total = time.perf_counter() - started
    return EpisodeResult(
        prompt_ids=trajectory.prompt_ids,
        response_ids=trajectory.response_ids,
        loss_mask=trajectory.loss_mask,
        log_probs=trajectory.log_probs,
        messages=episode.messages,
        response_text="".join(episode.model_texts),
        status=status,
        outcome=outcome,
        num_model_calls=episode.model_calls,
        error=error,
        timings={
            "generation_s": episode.generation_s,
            "orchestration_s": total - episode.generation_s,
            "total_s": total,
        },
        drift_at=drift_at,
        format_repairs=episode.format_repairs,
        step_starts=episode.step_starts,
        failure=failure,
        call_meta=episode.call_meta,
        cut_tokens=trajectory.cut,
        after_stop_tokens=episode.after_stop,
        step_info=episode.step_info,
        unseeded=unseeded(sampling, env),
    )


def unseeded(sampling: SamplingParams, env: Env) -> list[str]:
    """`EpisodeResult.unseeded` of an episode sampled with `sampling` in the world `env`."""
    policy = ["the policy's sampling has no seed"] if sampling.seed is None else []
    world = _world_unseeded(env)
    return policy + ([world] if world else [])


def _world_unseeded(env: Env) -> str | None:
    """The world's declaration, read once it ended; one that raised or is no text is said so, never
    read as reproducible."""
    try:
        said = env.unseeded_draws()
    except Exception as exc:
        return f"world {type(env).__name__}.unseeded_draws() raised {describe(exc)}"
    if said is None or (isinstance(said, str) and said):
        return said
    return f"world {type(env).__name__}.unseeded_draws() returned {said!r}, not None or a reason"


async def _played(episode: _Episode, env: Env) -> tuple[Status, str | None, Failure | None, dict[str, Any]]:
    """Play `episode` to its end: its status, error, failure and the world's checked outcome."""
    status: Status = "completed"
    error: str | None = None
    failure: Failure | None = None
    try:
        await episode.run()
    except _Ended as ended:
        status, error, failure = ended.status, ended.error, ended.failure
    except TitoViolation as exc:
        status, error = "failed", str(exc)
        failure = Failure.from_exception("t3rl", exc, error)
    except BaseException as exc:  # a bug in the loop or the template must not kill the rollout batch
        if not components_failure(exc):
            raise
        logger.exception("episode failed")
        status, error = "failed", f"episode loop error: {describe(exc)}"
        failure = Failure.from_exception("t3rl", exc, error)
    outcome: dict[str, Any] = {}
    try:
        # Bounded as reset and step are: a finish() that never returned (a rubric awaiting a judge that
        # does not answer) held the episode, and the eval or the rollout batch with it, for good.
        await episode._env_call(env.finish)
        outcome = dict(env.outcome())
    except _Ended as ended:
        error, failure, status = error or ended.error, failure or ended.failure, "failed"
    except BaseException as exc:
        if not components_failure(exc):
            raise
        message = f"env.outcome() failed: {describe(exc)}"
        error = error or message
        failure = failure or Failure.from_exception("env", exc, message)
        status = "failed"
    # The world's own bugs: turns that cannot be credited (generate would raise), a verdict no score
    # may read. The fields are left out of the outcome.
    for check, fields, error_type in _OUTCOME_CHECKS:
        problem = check(outcome, episode.env_steps)
        if problem is not None:
            message = f"world {type(env).__name__}: {problem}"
            error = error or message
            failure = failure or Failure("env", error_type, message)
            status = "failed"
            outcome = {key: value for key, value in outcome.items() if key not in fields}
    # Env.outcome() declares JSON data (records, slime's metadata), checked after the fields named above
    # (their words are the more precise): numpy scalars are converted, an entry holding what JSON cannot
    # (a set, a tuple key, NaN) is left out and fails the episode as the world's.
    outcome, problems = json_outcome(outcome)
    if problems:
        message = (
            f"world {type(env).__name__}.outcome() is no JSON data: {'; '.join(problems[:3])}. Return "
            "text-keyed dicts, lists, text, finite numbers, bools or None (eval records and slime's "
            "sample metadata hold it as JSON)"
        )
        error = error or message
        failure = failure or Failure("env", "InvalidOutcome", message)
        status = "failed"
    return status, error, failure, outcome


async def release_world(env: Env) -> None:
    """`env.aclose()`, bounded by the world class's CALL_TIMEOUT_S as its other calls are (an aclose that
    never returned held the episode for good, after its result was known); a world failing to release,
    or not within its bound, is logged, never the episode's failure."""
    bound = getattr(env, "CALL_TIMEOUT_S", None)
    deadline = asyncio.timeout(bound)
    try:
        async with deadline:
            await env.aclose()
    except BaseException as exc:
        if not (deadline.expired() or components_failure(exc)):
            raise
        world = type(env).__name__
        if deadline.expired():
            logger.warning("%s.aclose() did not return within %g s (%s.CALL_TIMEOUT_S)", world, bound, world)
        else:
            logger.warning("%s.aclose() failed: %s", world, describe(exc))
