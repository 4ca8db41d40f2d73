"""User simulators of the tau2 world: an LLM behind any OpenAI-compatible endpoint, or a scripted user.

A simulator is built once per run (registry `USER_SIMULATORS`, called as `Cls(config)`) and opens one
`UserSession` per episode. A session plays the customer: it hears the agent's text (or the results of
its own device tools, in telecom) and answers with text and/or calls of its own tools. Ending the
conversation is a text containing one of tau2's stop markers (###STOP###, ###TRANSFER###,
###OUT-OF-SCOPE###). Nothing here imports tau2; the env hands each session a `UserTask`.
"""

from __future__ import annotations

import ast
import asyncio
import bisect
import json
import re
import zlib
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field

from t3rl_core import outside_json
from t3rl_core.fields import (
    CALL_TOKENS,
    Identifier,
    Label,
    OpenAIBaseUrl,
    RegistryName,
    Seconds,
    Temperature,
    Text,
    TokensOf,
)
from t3rl_core.finite import shown
from t3rl_core.model_routes import served_model_name
from t3rl_core.secret import Secret
from t3rl_core.strict import StrictModel
from t3rl_core.types import Message

if TYPE_CHECKING:
    from openai import AsyncOpenAI  # lazy: openai, only for a model-played user

STOP_MARKERS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")


# ------------------------------------------------------------------------------------------- config


class UserSimulatorConfig(StrictModel):
    """Base of every user-simulator section (`env.user`); subclasses narrow `name` to a Literal."""

    # Fields that say where the user is served and how t3rl reaches it, not how it behaves: left out of
    # an eval's benchmark identity, whose user_simulator part records every other field (the customer's
    # sampling and prompt settings change what it says, so results of two of them do not compare).
    WHERE_FIELDS: ClassVar[tuple[str, ...]] = ()

    name: RegistryName


# The fields of the user model's request t3rl writes itself, each with where it comes from: the client
# merges extra_body into the request after them, so the same key there overrode it (a temperature the
# benchmark identity does not record, one seed for every reply, a conversation of extra_body's).
REQUEST_FIELDS = {
    "model": "env.user.model",
    "messages": "the conversation t3rl keeps",
    "tools": "the task's user tools",
    "temperature": "env.user.temperature",
    "max_tokens": "env.user.max_tokens",
    "seed": "a seed per reply, drawn from the episode's",
    "n": "one choice, the one t3rl reads",
    "stream": "one whole answer, which t3rl reads",
}


def _own_fields(extra: dict[str, Any]) -> dict[str, Any]:
    taken = [key for key in extra if key in REQUEST_FIELDS]
    if taken:
        key = taken[0]
        raise ValueError(
            f"extra_body sets {key!r}, which t3rl's request to the user model sets itself "
            f"({REQUEST_FIELDS[key]}); leave it out of extra_body (override ~env.user.extra_body.{key})"
        )
    return extra


class LLMUserConfig(UserSimulatorConfig):
    """A model served behind an OpenAI-compatible chat API (e.g. a second SGLang server) plays the user."""

    WHERE_FIELDS = ("base_url", "api_key", "timeout_s", "max_retries", "concurrency")

    name: Literal["llm"] = "llm"
    # Base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:30001/v1.
    base_url: OpenAIBaseUrl
    # Model name the server expects in requests (as the server names it: LiteLLM's client-side routes
    # litellm_proxy/ and hosted_vllm/ are refused with the name after them).
    model: Annotated[Label, AfterValidator(served_model_name)]
    temperature: Temperature = 0.7
    # Tokens per user reply; None = the server's default.
    max_tokens: Annotated[int, CALL_TOKENS, TokensOf("model")] | None = Field(None, ge=1)
    # The API key by reference: env:NAME or file:PATH (never the key itself); None = a local server
    # that checks no key.
    api_key: Secret | None = None
    # Extra JSON fields of every request (SGLang: chat_template_kwargs, e.g. thinking off).
    extra_body: Annotated[dict[Identifier, Any], AfterValidator(_own_fields)] = Field(default_factory=dict)
    # Seconds per request, and retries of a failed request (the openai client's own back-off).
    timeout_s: Seconds = 120.0
    max_retries: int = Field(3, ge=0)
    # Requests in flight at once across all episodes of this process.
    concurrency: int = Field(64, ge=1)


class ScriptedUserConfig(UserSimulatorConfig):
    """A deterministic user driven by the task's scenario (tests, CPU runs, gold demonstrations). It does
    on its device only what the agent asks for as a call it can read, with the agent's arguments."""

    name: Literal["scripted"] = "scripted"
    # Reply to an agent message that asks for a confirmation or a yes/no decision.
    confirm_reply: Text = "Yes, please go ahead."
    # Last reply once everything known has been told; the stop marker ends the episode.
    stop_reply: Text = "Thank you, that is all I need. ###STOP###"
    # The most calls of its own tools the user makes for one agent message. Its replies are bounded by
    # the episode's (one per agent message, tau2's env.max_steps); its calls per message were not: 4,000
    # requested calls were 4,000 tool runs in one step. Asked for more, it makes none of them and
    # says so (`too_many_calls_reply`), a reply the agent can act on; the episode goes on.
    max_calls_per_turn: int = Field(16, ge=1)


# ------------------------------------------------------------------------------------------ session


@dataclass(frozen=True)
class UserTask:
    """What a user session needs to know about its task."""

    # tau2's user-simulator system prompt for this scenario (guidelines + scenario).
    system_prompt: str
    # The scenario's structured instructions (reason_for_call, known_info, ...) or free text.
    instructions: Mapping[str, Any] | str
    # OpenAI schemas of the user's own tools (telecom's device); empty in retail and airline.
    tools: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class UserToolCall:
    """One call the user makes on their own tools."""

    id: str
    name: str
    arguments: dict[str, Any]
    # Why the model-played user's arguments text is no call (not JSON, or JSON of no object), None when
    # it is one. Such a call is not made: the user is answered with the problem (`unreadable_result`),
    # as a tool's error, and the episode counts it as the user's (outcome `user_call_errors`). Run with
    # {} as before, a tool taking no argument ran a call the user never wrote; tau2's client raises.
    unreadable: str | None = None
    # The arguments as the user wrote them when unreadable, shown back to it in its own conversation.
    written: str | None = None


def user_call(id: str, name: str, text: object) -> UserToolCall:
    """The user's call of `name` whose arguments are the JSON text `text` (None: no arguments, {}). The
    openai client builds its answer without validating it, so a server writing the arguments as an
    object (not as the API's JSON text) hands a dict over: taken as the object it is, where json.loads
    raised TypeError out of the episode; any other type is no call."""
    if isinstance(text, Mapping):
        text = json.dumps(text)  # read as the text the API would have carried: one reading below
    if text is not None and not isinstance(text, str):
        shown_type = type(text).__name__
        return UserToolCall(
            id, name, {}, f"its arguments are a {shown_type}, not JSON text", shown(text, 200)
        )
    try:
        value = outside_json.loads(text or "{}", "the user's tool call arguments")
    except json.JSONDecodeError as exc:
        return UserToolCall(
            id, name, {}, f"its arguments are no JSON ({exc.msg} at character {exc.pos})", text
        )
    except ValueError as exc:  # an integer past Python's digit limit
        return UserToolCall(id, name, {}, f"its arguments are no JSON object we read ({exc})", text)
    if not isinstance(value, dict):
        return UserToolCall(
            id, name, {}, f"its arguments are a JSON {type(value).__name__}, not an object", text
        )
    return UserToolCall(id, name, value)


def unreadable_result(call: UserToolCall) -> str:
    """What the user is answered for a call it wrote that is no call (`UserToolCall.unreadable`)."""
    written = (call.written or "")[:200]
    return (
        f"Error: the call of {call.name[:80]} was not made: {call.unreadable}. You wrote {written!r}; "
        'write the arguments as one JSON object, e.g. {"name": "value"} ({} for none).'
    )


@dataclass(frozen=True)
class UserToolResult:
    """The result of one of the user's own calls, as the user sees it."""

    id: str
    name: str
    content: str


@dataclass(frozen=True)
class UserTurn:
    """One user message: text for the agent, or calls of the user's own tools (then text may be None)."""

    text: str | None
    tool_calls: tuple[UserToolCall, ...] = ()

    @property
    def stops(self) -> bool:
        return not self.tool_calls and self.text is not None and any(m in self.text for m in STOP_MARKERS)


# What a user hears: the agent's text, or the results of the user's own tool calls.
Incoming = str | tuple[UserToolResult, ...]


class UserSession(ABC):
    """The user of one episode."""

    # The episode's seed (Env.episode_seed), set before its first reply; a session that samples seeds
    # each of its requests from it (None: unseeded).
    seed: int | None = None

    @abstractmethod
    async def reply(self, incoming: Incoming) -> UserTurn: ...

    def unseeded(self) -> str | None:
        """Why this session's replies may not follow `seed` (Env.unseeded_draws), None when they do. A
        simulator of a plugin's that does not say is taken at its silence: not reproducible."""
        return f"the user simulator's session {type(self).__name__} does not say its replies follow the seed"


class UserSimulator(ABC):
    """Built once per run; opens one session per episode."""

    @abstractmethod
    def session(self, task: UserTask) -> UserSession: ...

    async def aclose(self) -> None:  # noqa: B027 - most simulators hold nothing to release
        """Release clients."""


# ---------------------------------------------------------------------------------------------- LLM


class NoUserReply(RuntimeError):
    """The user model's server answered a request with no reply: the user simulator's own error."""


class LLMUser(UserSimulator):
    """The user is a chat model; its conversation is the episode seen from the customer's side."""

    def __init__(self, config: LLMUserConfig) -> None:
        self.config = config
        if config.api_key is not None:
            config.api_key.reveal()  # fails here, naming the reference, when it does not resolve
        self._client: AsyncOpenAI | None = None
        self._semaphore: asyncio.Semaphore | None = None

    def session(self, task: UserTask) -> LLMUserSession:
        return LLMUserSession(self, task)

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]], seed: int | None = None
    ) -> UserTurn:
        """One chat completion as a user turn (`seed`: the request's sampling seed, None for none)."""
        client, semaphore = self._connection()
        request: dict[str, Any] = {
            "model": self.config.model,
            "messages": messages,
            "temperature": self.config.temperature,
        }
        if seed is not None:
            request["seed"] = seed
        if tools:
            request["tools"] = tools
        if self.config.max_tokens is not None:
            request["max_tokens"] = self.config.max_tokens
        if self.config.extra_body:
            request["extra_body"] = self.config.extra_body
        async with semaphore:
            response = await client.chat.completions.create(**request)
        choices = getattr(response, "choices", None)
        if not choices:
            # A server's answer of no choice (a content filter, a proxy's empty reply): its words, where
            # `choices[0]` raised IndexError, "list index out of range", an episode crash naming nobody.
            raise NoUserReply(
                f"the user model {self.config.model!r} at {self.config.base_url} answered no choice "
                f"({shown(response, 200)})"
            )
        message = choices[0].message
        calls = tuple(
            user_call(call.id, call.function.name, call.function.arguments)
            for call in message.tool_calls or ()
        )
        return UserTurn(text=message.content, tool_calls=calls)

    def _connection(self) -> tuple[AsyncOpenAI, asyncio.Semaphore]:
        if self._client is None or self._semaphore is None:
            from openai import AsyncOpenAI  # lazy: openai, only for a model-played user

            # A local server checks no key, but the client insists on one.
            api_key = self.config.api_key
            key = api_key.reveal().get_secret_value() if api_key is not None else "EMPTY"
            self._client = AsyncOpenAI(
                base_url=self.config.base_url,
                api_key=key,
                timeout=self.config.timeout_s,
                max_retries=self.config.max_retries,
            )
            self._semaphore = asyncio.Semaphore(self.config.concurrency)
        return self._client, self._semaphore

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


class LLMUserSession(UserSession):
    """tau2's user simulator protocol: the agent's words are the model's `user` turns, its own words
    and tool calls its `assistant` turns, and its tool results `tool` turns."""

    def __init__(self, user: LLMUser, task: UserTask) -> None:
        self.user, self.task = user, task
        self.messages: list[Message] = [{"role": "system", "content": task.system_prompt}]

    async def reply(self, incoming: Incoming) -> UserTurn:
        if isinstance(incoming, str):
            self.messages.append({"role": "user", "content": incoming})
        else:
            self.messages.extend(
                {"role": "tool", "tool_call_id": result.id, "content": result.content} for result in incoming
            )
        turn = await self.user.complete(self.messages, self.task.tools, self._request_seed())
        message: Message = {"role": "assistant", "content": turn.text}
        if turn.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": _as_written(call)},
                }
                for call in turn.tool_calls
            ]
        self.messages.append(message)
        return turn

    def unseeded(self) -> str | None:
        """A sampling user's draws follow the seed only if its server reads the request's `seed` (and
        draws deterministically by it), which no answer shows: a server that ignores it (or samples
        on several GPUs without deterministic inference) plays another conversation each time."""
        config = self.user.config
        if config.temperature == 0:
            return None
        return (
            f"the user model {config.model!r} at {config.base_url} samples at temperature "
            f"{config.temperature:g}; its requests carry seeds drawn from the episode's, which its server "
            "may not read (env.user.temperature: 0 for a greedy user)"
        )

    def _request_seed(self) -> int | None:
        """The seed of this session's next request: one per reply, from the episode's seed and the
        reply's index (the same seed for every reply would repeat the draws' noise at each one)."""
        if self.seed is None:
            return None
        replies = sum(message["role"] == "assistant" for message in self.messages)
        return zlib.crc32(f"{self.seed}/{replies}".encode()) & 0x7FFFFFFF


def _as_written(call: UserToolCall) -> str:
    """A call's arguments in the user's own history: as it wrote them when they are no call (it reads its
    mistake beside the error), else their JSON."""
    return call.written if call.unreadable is not None and call.written else json.dumps(call.arguments)


# ----------------------------------------------------------------------------------------- scripted

# A sentence that says not to do something ("do NOT touch …", "never run …", "avoid …").
_NEGATION = re.compile(r"\b(?:not|never|avoid|without|stop)\b|n't\b", re.I)
_SENTENCE_START = re.compile(r"(?:^|[.!?;]\s|\n)")
_CONFIRMATION = re.compile(
    r"\b(confirm|proceed|yes or no|yes/no|shall i|should i|would you like|do you want|go ahead)\b", re.I
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# Second person → first person, longest forms first. "you" as a subject (sentence start, after a
# conjunction) is "I"; any other "you" is "me".
_PRONOUNS = (
    (re.compile(r"\byou are\b", re.I), "I am"),
    (re.compile(r"\byou were\b", re.I), "I was"),
    (re.compile(r"\byou're\b", re.I), "I'm"),
    (re.compile(r"\byou've\b", re.I), "I've"),
    (re.compile(r"\byou'd\b", re.I), "I'd"),
    (re.compile(r"\byou'll\b", re.I), "I'll"),
    (re.compile(r"\byourself\b", re.I), "myself"),
    (re.compile(r"\byours\b", re.I), "mine"),
    (re.compile(r"\byour\b", re.I), "my"),
    (re.compile(r"(^|[.!?,;:]\s+|\b(?:and|but|if|that|so|because|when|as|or|then)\s+)you\b", re.I), "\\1I"),
    (re.compile(r"\byou\b", re.I), "me"),
)


def first_person(text: str) -> str:
    """The scenario's second-person text as the customer would say it ("You want X" → "I want X")."""
    for pattern, replacement in _PRONOUNS:
        text = pattern.sub(lambda m, r=replacement: _same_case(m, r), text)
    return text


def _same_case(match: re.Match[str], replacement: str) -> str:
    text = match.expand(replacement)
    return text[:1].upper() + text[1:] if match.group(0)[:1].isupper() else text


class ScriptedUser(UserSimulator):
    """Deterministic: see `ScriptedUserSession` for the rules."""

    def __init__(self, config: ScriptedUserConfig) -> None:
        self.config = config

    def session(self, task: UserTask) -> ScriptedUserSession:
        return ScriptedUserSession(self.config, task)


class ScriptedUserSession(UserSession):
    """Rules, first match wins:

    1. the opening (the reply to the agent's greeting) states the reason for the call;
    2. the agent asks for calls of the user's own tools, each written as a call it can read
       (`name(key=value, ...)`, values as Python literals, tau2's functional format) in a sentence
       that does not say not to → the user makes exactly those calls, with the agent's arguments,
       then reports the results (a tool's name alone, a call it cannot read or one the agent
       forbids is no request); more than `max_calls_per_turn` of them → none, and
       `too_many_calls_reply` says why;
    3. the agent asks for a confirmation or a yes/no decision → `confirm_reply`;
    4. known information (name, ids, ...) not yet told → all of it, in the scenario's order;
    5. otherwise → `stop_reply` (contains ###STOP###, which ends the episode).
    """

    def __init__(self, config: ScriptedUserConfig, task: UserTask) -> None:
        self.config, self.task = config, task
        instructions = task.instructions
        if isinstance(instructions, str):
            self._reason, known = instructions, ""
        else:
            self._reason = str(instructions.get("reason_for_call") or "")
            known = str(instructions.get("known_info") or "")
        self._known = [first_person(s.strip()) for s in _SENTENCE_END.split(known) if s.strip()]
        self._tools = {str(tool["function"]["name"]) for tool in task.tools if "function" in tool}
        self._opened = False
        self._calls = 0

    def unseeded(self) -> str | None:
        return None  # deterministic: its rules read the agent's text only

    async def reply(self, incoming: Incoming) -> UserTurn:
        if not isinstance(incoming, str):
            return UserTurn(text="; ".join(f"{r.name}: {r.content}" for r in incoming))
        if not self._opened:
            self._opened = True
            return UserTurn(text=" ".join(first_person(self._reason).split()))
        requested = requested_calls(incoming, self._tools)
        if len(requested) > self.config.max_calls_per_turn:
            return UserTurn(text=too_many_calls_reply(len(requested), self.config.max_calls_per_turn))
        if requested:
            calls = []
            for name, arguments in requested:
                self._calls += 1
                calls.append(UserToolCall(id=f"user_call_{self._calls}", name=name, arguments=arguments))
            return UserTurn(text=None, tool_calls=tuple(calls))
        if _CONFIRMATION.search(incoming):
            return UserTurn(text=self.config.confirm_reply)
        if self._known:
            told, self._known = " ".join(self._known), []
            return UserTurn(text=told)
        return UserTurn(text=self.config.stop_reply)


def too_many_calls_reply(asked: int, most: int) -> str:
    """The scripted user's reply to an agent message asking for more of its calls than it makes."""
    return (
        f"You asked me to do {asked} things on my device in one message; I do at most {most} at a time. "
        "Please tell me the first few to do."
    )


# The longest call the scripted user reads, from its name to its ")": tau2's user tools take a few
# short arguments (`set_network_mode_preference(mode="4g_5g_preferred")`).
CALL_CHARS = 1000


def requested_calls(text: str, tools: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """The calls of `tools` that `text` asks for: `name(key=value, ...)` with literal values, in order,
    leaving out those in a sentence that says not to."""
    if not tools:
        return []
    names = "|".join(re.escape(name) for name in sorted(tools, key=len, reverse=True))
    calls = []
    # The sentence starts and the negations of the whole text, each found once: both were read again
    # from the start of the text (or of the call's sentence) for every call, so a 68 kB agent message
    # of 4,000 calls in one sentence took 12 s of CPU on the event loop every episode shares.
    starts = [m.end() for m in _SENTENCE_START.finditer(text)]
    negations = [m.start() for m in _NEGATION.finditer(text)]
    for match in re.finditer(rf"\b({names})\s*\(", text):
        arguments = _call_arguments(text, match.start(), match.end())
        if arguments is None:
            continue
        before = bisect.bisect_right(starts, match.start() + 1)
        sentence = starts[before - 1] if before else 0
        # A negation inside the call's sentence, before its name (the name's word boundary keeps any
        # negation word from running into it).
        negated = bisect.bisect_left(negations, sentence) < bisect.bisect_left(negations, match.start())
        if not negated:
            calls.append((match.group(1), arguments))
    return calls


def _call_arguments(text: str, start: int, open_paren: int) -> dict[str, Any] | None:
    """The keyword arguments of the call written from `start` (its "(" ends at `open_paren`), or None
    when no closing ")" within CALL_CHARS of its start makes it a call with literal keyword arguments
    only. The bound keeps the reading linear in the agent's text: each ")" after the name is tried, so
    a message of unclosed calls and many ")" was read in quadratic time (16 kB, 2 s of CPU)."""
    end = start + CALL_CHARS
    close = text.find(")", open_paren, end)
    while close != -1:
        try:
            node = ast.parse(text[start : close + 1], mode="eval").body
        except SyntaxError:
            close = text.find(")", close + 1, end)
            continue
        if not isinstance(node, ast.Call) or node.args:
            return None
        try:
            return {str(k.arg): ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
        except ValueError:
            return None
    return None
