"""The environment interface every world implements."""

from __future__ import annotations

import functools
import inspect
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from t3rl_core.contracts import override_problem, unawaited
from t3rl_core.types import Action, Transition

if TYPE_CHECKING:
    from t3rl_core.envs.format_repair import FormatRepair

Mode = Literal["train", "eval"]


class EpisodeEnded(RuntimeError):
    """A step of an episode that has ended (a transition with `done`): the driver's bug, since the loop
    never steps an ended episode. Refused for every world alike (`Env.__init_subclass__`): ReTool ran
    the code of a step after its end and added it to the scored response, OpenEnv sent it to the
    server, and each world that checked it said so in its own words."""


def _refusing_after_end(
    method: Callable[..., Awaitable[Transition]],
) -> Callable[..., Awaitable[Transition]]:
    """`method` (a world's `reset` or `step`), refusing a call once a transition it gave was `done`, and
    an answer that is no Transition (a dict's `done` raised AttributeError in the loop's words)."""

    @functools.wraps(method)
    async def guarded(self: Env, *args: Any) -> Transition:
        world = type(self).__name__
        if self.__dict__.get("_t3rl_ended"):
            raise EpisodeEnded(f"{world}.{method.__name__}() after the episode ended")
        transition = await method(self, *args)
        problem = unawaited(transition, f"{world}.{method.__name__}()", "a Transition")
        if problem is not None:
            raise TypeError(problem)
        if not isinstance(transition, Transition):
            raise TypeError(
                f"{world}.{method.__name__}() returned {type(transition).__name__}, not a Transition: "
                "return Transition(messages=[...], done=...) (t3rl_core.types)"
            )
        if transition.done:
            self.__dict__["_t3rl_ended"] = True
        return transition

    guarded.__dict__["_refuses_after_end"] = True
    return guarded


class Env(ABC):
    """One episode of one task. Instances are never reused across episodes.

    The episode loop renders the task's prompt messages itself (from the dataset row) and calls
    `reset()` once, then `step()` per model action until a transition is `done`.
    """

    # Extra stop strings the model's sampling must use in this env (e.g. ReTool's "</code>").
    stop: tuple[str, ...] = ()
    # How model text becomes an action: "tool_calls" (the family's SGLang tool-call parser) or a
    # format registered in `t3rl_core.parsers.actions` (e.g. "code_block").
    action_format: str = "tool_calls"
    # The format-repair protocol of this episode (t3rl_core.envs.format_repair), or None: a turn that
    # breaks the format then goes to `step()` like any other.
    format_repair: FormatRepair | None = None
    # Seconds one `reset()`, `step()` or `finish()` may take before the episode fails as the world's, and
    # `aclose()` before it is left, logged (a plugin's step that never returned hung the eval, or a
    # training rollout, for good); None = unbounded, for a world that bounds its own calls. Generous: a
    # tau2 step waits on its user model (120 s, 3 retries).
    CALL_TIMEOUT_S: float | None = 1800.0
    # The episode's seed (its sampling's), set by the episode runner before `reset()`; None when the
    # episode is unseeded. A world that samples on its own (a model-played user) draws from it, so the
    # same seed plays the same episode: the policy's draws alone were seeded.
    episode_seed: int | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every world's own `reset` and `step` refuse a call after the episode ended (EpisodeEnded):
        no world's state or outcome moves after its end, whichever world and whoever calls. Each
        method a world overrides keeps Env's own contract (`t3rl_core.contracts`), refused here, when its
        module is imported (so at `t3rl validate`, by the plugin's import), not at its first episode."""
        super().__init_subclass__(**kwargs)
        for name, value in cls.__dict__.items():
            problem = (
                override_problem(cls, name, value, Env)
                or _shared_problem(cls, name, value)
                or _bound_problem(cls, name, value)
            )
            if problem is not None:
                raise TypeError(problem)
        for name in ("reset", "step"):
            method = cls.__dict__.get(name)
            if method is not None and not getattr(method, "_refuses_after_end", False):
                setattr(cls, name, _refusing_after_end(method))

    def unseeded_draws(self) -> str | None:
        """Why this world's own draws (a model-played user) may not follow `episode_seed`, so that the
        same seed may play another episode; None when it draws nothing of its own or draws by the seed.
        The episode's record says so (`EpisodeResult.unseeded`)."""
        return None

    async def reset(self) -> Transition:
        """Start the episode; returns observations to append after the prompt (usually none)."""
        return Transition()

    @abstractmethod
    async def step(self, action: Action) -> Transition:
        """Apply one model action."""

    @abstractmethod
    def outcome(self) -> dict[str, Any]:
        """JSON-serialisable result of the episode so far, read by rewards and metrics."""

    async def finish(self) -> None:  # noqa: B027 (optional hook: most envs score in step())
        """The episode has ended, however (also by a t3rl step or token limit): settle what `outcome()`
        reports. An env that scores asynchronously (verifiers' rubric) does it here."""

    def cut_off(self, text: str) -> None:  # noqa: B027 (optional hook: most envs judge steps only)
        """The model's last call was cut at the token limit: `text` is what it wrote, which no step
        will see. An env whose reference scores the response as decoded, the cut call included
        (ToolRL's and ReTool's rewards read the whole response text), keeps it for `outcome()`."""

    def format_problem(self, action: Action) -> str | None:
        """Why `action` breaks the env's strict action format (None = it does not); asked only when
        `format_repair` is set."""
        return None

    def oracle(self) -> Action | None:
        """The gold next action at the current state, for the scripted reference engine."""
        return None

    async def aclose(self) -> None:  # noqa: B027 (optional hook: most have nothing to release)
        """Release per-episode resources."""


@runtime_checkable
class StartsAhead(Protocol):
    """An env factory with work worth starting before its episodes ask for it (BFCL's tool-call
    workers): an eval calls `start_ahead()` once its first episodes hold their slots."""

    def start_ahead(self) -> None: ...


class EnvFactory(Protocol):
    """Built once per run from an env config; makes one `Env` per task (shares pools, clients)."""

    def __call__(self, task: Mapping[str, Any], mode: Mode) -> Env: ...

    async def aclose(self) -> None: ...


def factory_problem(factory: Any) -> str | None:
    """Why a built env factory breaks EnvFactory's contract (its `__call__` makes an Env without being
    awaited, its `aclose` is awaited), else None: pre-flight builds each plugin world's factory and
    asks here, so an `async def __call__` (every episode got a coroutine for its Env) or a plain
    `def aclose` (the eval failed at its end) is refused before a stage."""
    for name in ("__call__", "aclose"):
        method = getattr(type(factory), name, None)
        problem = override_problem(type(factory), name, method, EnvFactory) if method is not None else None
        if problem is not None:
            return problem
    return None


# Containers a class attribute would share, mutated, between every episode the class plays.
_MUTABLE = (list, dict, set, bytearray)


def _bound_problem(cls: type, name: str, value: Any) -> str | None:
    """Why a world's `CALL_TIMEOUT_S` is no bound: a text ("30", from a config file) raised a TypeError
    out of the episode loop, ending the whole eval; 0, a negative or NaN failed every episode as if its
    calls "held the event loop". None (unbounded) or a positive finite number of seconds."""
    if name != "CALL_TIMEOUT_S" or value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < float("inf"):
        return None
    return (
        f"{cls.__name__}.CALL_TIMEOUT_S is {type(value).__name__} {value!r}: a call's bound is a positive "
        "number of seconds (e.g. CALL_TIMEOUT_S = 30.0), or None for a world that bounds its own calls"
    )


def _shared_problem(cls: type, name: str, value: Any) -> str | None:
    """Why class attribute `name` of a world breaks the one-episode-per-Env isolation: a mutable container
    on the class (`calls = []`, then `self.calls.append(…)`) is one object for every episode, concurrent
    ones included, so an episode's outcome read another's state."""
    if name.startswith("__") or not isinstance(value, _MUTABLE):
        return None
    if "ClassVar" in str(inspect.get_annotations(cls).get(name, "")):
        return None  # declared shared on purpose (a test's injected verdicts, a registry of the class)
    kind = type(value).__name__
    return (
        f"{cls.__name__}.{name} is a {kind} on the class, one object shared by every episode (an Env "
        f"plays one): set it in __init__ (self.{name} = {kind}(...)), make a constant immutable (a "
        f"tuple, frozenset or types.MappingProxyType), or annotate it ClassVar when shared on purpose"
    )
