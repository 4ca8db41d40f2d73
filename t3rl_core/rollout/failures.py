"""Infrastructure failures: episodes the environment, the engine, the reward or t3rl itself broke.

Such an episode says nothing about the policy, so it must never become a reward: the slime hooks take
it (and its prompt group) out of training, count it by type and stop the run when too many fail
(`t3rl_core.hooks.failures`); the standalone eval leaves engine failures out of every score. A policy
that fails the task, runs out of steps or writes a malformed turn is no failure of this kind.
"""

from __future__ import annotations

import traceback
from dataclasses import asdict, dataclass
from typing import Any, Literal

# env: the world or its factory raised (a missing package on a rollout node, a broken task row);
# engine: no answer from the model server; reward: the reward function raised; t3rl: a bug in the
# episode loop or the TITO bookkeeping.
FailureKind = Literal["env", "engine", "reward", "t3rl"]
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
