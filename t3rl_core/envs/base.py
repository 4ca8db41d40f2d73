"""The environment interface every world implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from t3rl_core.types import Action, Transition

if TYPE_CHECKING:
    from t3rl_core.envs.format_repair import FormatRepair

Mode = Literal["train", "eval"]


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
