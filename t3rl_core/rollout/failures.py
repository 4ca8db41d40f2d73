"""Infrastructure failures: episodes the environment, the engine, the reward or t3rl itself broke.

Such an episode says nothing about the policy, so it must never become a reward: the slime hooks take
it (and its prompt group) out of training, count it by type and stop the run when too many fail
(`t3rl_core.hooks.failures`); the standalone eval leaves engine failures out of every score. A policy
that fails the task, runs out of steps or writes a malformed turn is no failure of this kind.
"""

from __future__ import annotations

import asyncio
import traceback
from dataclasses import asdict, dataclass
from typing import Any, Literal

# env: the world or its factory raised (a missing package on a rollout node, a broken task row);
# engine: no answer from the model server; reward: the reward function raised; t3rl: a bug in the
# episode loop or the TITO bookkeeping.
FailureKind = Literal["env", "engine", "reward", "t3rl"]
# How the episode loop's error text begins for an exception out of a world's call, before the
# exception's `Type: message` (read back by the eval's attribution, which names the type's party).
ENV_ERROR = "environment error: "
# The error type of an engine failure whose request someone asked the engine to abort (slime, at the end
# of a rollout or pausing SGLang for a weight update): `Generation.on_request`.
ABORT_REQUESTED = "abort_requested"


@dataclass(frozen=True)
class Failure:
    """What broke an episode: its kind, the error's type (an exception class name, or `abort` for a
    request the engine aborted), the message and, for an exception, its traceback."""

    kind: FailureKind
    error_type: str
    message: str
    traceback: str | None = None

    @classmethod
    def from_exception(cls, kind: FailureKind, exc: BaseException, message: str) -> Failure:
        return cls(kind, type(exc).__name__, message, "".join(traceback.format_exception(exc)))

    @property
    def label(self) -> str:
        """`kind/error_type`, the key failures are counted under."""
        return f"{self.kind}/{self.error_type}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Failure:
        return cls(**data)


# What stops the process rather than failing a component: Ctrl-C, an exit asked for, a generator closed.
_PROCESS_STOPS = (KeyboardInterrupt, SystemExit, GeneratorExit)


def components_failure(exc: BaseException) -> bool:
    """Whether `exc`, raised out of an engine, a world, a parser's factory or a reward, is that
    component's failure (the episode ends with it, recorded): anything but the process's own stops.
    A CancelledError is the component's while nothing cancels the episode's task (a client library's
    own cancellation leaking out of a call): asyncio read it as the task's own cancellation, the eval
    dropped such an episode without a record and its summary said complete, and slime's gather lost
    the sample. A BaseException of a plugin's own (`class Stop(BaseException)`, a test framework's
    outcome) is the component's too: it went on up and ended the whole eval or rollout batch. A
    cancellation of the task itself (Ctrl-C in an eval, a task slime drops), KeyboardInterrupt,
    SystemExit and GeneratorExit are the process's, and go on up (a group holding one of them too)."""
    if isinstance(exc, Exception):
        return True
    if isinstance(exc, asyncio.CancelledError):
        task = asyncio.current_task()
        return task is not None and task.cancelling() == 0
    if isinstance(exc, BaseExceptionGroup):
        return all(map(components_failure, exc.exceptions))
    return not isinstance(exc, _PROCESS_STOPS)


def describe(exc: BaseException) -> str:
    """`Type: message`; a CancelledError that carries none says it cancelled nothing."""
    said = str(exc)
    if not said and isinstance(exc, asyncio.CancelledError):
        said = "raised by the call itself; nothing cancelled the episode"
    return f"{type(exc).__name__}: {said}"
