"""The one async interface every engine speaks: token ids in, token ids and log-probs out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from t3rl_core.counts import counted
from t3rl_core.fields import SAMPLING_DOMAINS, refused_stops, stop_problem

if TYPE_CHECKING:
    from t3rl_core.envs.base import Env
    from t3rl_core.types import Message

FinishReason = Literal["stop", "length", "abort"]


@dataclass(frozen=True)
class SamplingParams:
    """Per-call sampling, named as SGLang's `sampling_params`."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    max_new_tokens: int = 1024
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    seed: int | None = None

    def __post_init__(self) -> None:
        refused = refused_stops(self.stop)
        if refused:
            raise ValueError(f"stop string {refused[0]!r}: {stop_problem(refused[0])}; drop it")
        for name, (holds, domain) in SAMPLING_FIELDS.items():
            value = getattr(self, name)
            items = value if name in _EACH else (value,)
            wrong = next((item for item in items if not holds(item)), _NONE)
            if wrong is not _NONE:
                raise SamplingOutOfDomain(
                    name, f"sampling {name}={_shown(value)}: {domain}, not {_shown(wrong)}"
                )


class SamplingOutOfDomain(ValueError):
    """A sampling field's value outside its domain (`SAMPLING_DOMAINS`); `field` names the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


_NONE = object()  # no item is out of its domain


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)  # a bool is no number here


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _sglang(name: str, kind: Callable[[object], bool]) -> tuple[Callable[[Any], bool], str]:
    """SGLang's domain of a sampling parameter (t3rl_core.fields.SAMPLING_DOMAINS) for values of `kind`."""
    holds, domain = SAMPLING_DOMAINS[name]
    return (lambda value: kind(value) and holds(value)), domain


# Each sampling field's domain: SGLang's (its SamplingParams.verify, declared once in t3rl_core.fields
# and read by the pre-flight too) on values of the field's kind, and t3rl's own where the loop needs
# more. A value outside reached the server, which refused every call of every episode (each an engine
# failure counted toward rollout.max_failure_rate, the flag that set it never named), or was taken as
# another value (a text of stop token ids as one id per character, a bool as 1).
SAMPLING_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "temperature": _sglang("temperature", _number),
    "top_p": _sglang("top_p", _number),
    "top_k": _sglang("top_k", _whole),
    # SGLang takes 0; a call that may write no token plays no turn, and every episode ends unplayed.
    "max_new_tokens": (lambda v: _whole(v) and v >= 1, "a whole number >= 1 (tokens a call may write)"),
    "stop_token_ids": (lambda v: _whole(v) and v >= 0, "token ids, each a whole number >= 0"),
    "seed": (lambda v: v is None or (_whole(v) and 0 <= v < 2**63), "None or a whole number in [0, 2**63)"),
}
# The fields whose value is a tuple of items, each in the domain.
_EACH = frozenset({"stop_token_ids"})


def _shown(value: object) -> str:
    return repr(value)[:80]


@dataclass(frozen=True)
class Generation:
    """One model call's result. `token_ids` includes a matched stop token (as SGLang returns it)."""

    token_ids: list[int]
    log_probs: list[float]
    finish_reason: FinishReason
    error: str | None = None  # set when finish_reason == "abort" because of a transport failure
    # The server's bookkeeping of the call, as SGLang's meta_info names it (answers.CALL_META:
    # prompt and prefix-cached tokens, weight version, speculative-decoding counters); empty elsewhere.
    # Bookkeeping, not output: two generations of the same tokens are equal whatever it says.
    meta: dict[str, Any] = field(default_factory=dict, compare=False)
    # An abort someone asked the server for (SGLang's abort_request, or /pause_generation, which slime's
    # weight updates call): the request was stopped, it did not fail.
    on_request: bool = False

    def __post_init__(self) -> None:
        if len(self.token_ids) != len(self.log_probs):
            raise ValueError(f"{counted(len(self.token_ids), 'token')} but {len(self.log_probs)} log-probs")


@dataclass
class GenerationContext:
    """Episode state an engine may read; only the scripted reference engine does."""

    env: Env | None = None
    messages: list[Message] = field(default_factory=list)
    # The run's SGLang tool-call parser name: the format the scripted engine writes its calls in.
    tool_call_parser: str | None = None


class EngineUnavailable(RuntimeError):
    """The engine cannot answer at all (a dead URL, a model that does not load): nothing to evaluate."""


class Engine(ABC):
    """An async text generator over token ids."""

    # Whether each Generation this engine answers holds exactly its declared types (ids as int,
    # log-probs as float, meta as answers.CALL_META has it): t3rl's own engines build them so, and the
    # episode takes them as they are, at no cost per token. Any other engine's answer is checked and
    # converted (engines/answers.py). A subclass that writes its own generate answers for itself: it
    # is not plain unless it says so too (a plugin subclassing SGLangEngine to answer numpy ids).
    answers_plain: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "generate" in cls.__dict__ and "answers_plain" not in cls.__dict__:
            cls.answers_plain = False

    async def check(self) -> dict[str, Any]:
        """Before the first episode: raise EngineUnavailable unless the engine can answer; return what
        it serves (recorded with the results). Engines with nothing remote to reach answer at once."""
        return {}

    @abstractmethod
    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation: ...

    async def aclose(self) -> None:  # noqa: B027 (optional hook: most have nothing to release)
        """Release connections, threads or models."""
