"""Episodes the infrastructure broke, as slime sees them (see `t3rl_core.rollout.failures`).

- The generate hook marks such a sample `remove_sample` (slime zeroes its loss mask) and records the
  failure under `metadata.t3rl_failure`.
- slime's GRPO normalises rewards per prompt group, removed samples included, so one failed sample
  would still shift its siblings' advantages: the rollout log hook, which slime calls on the whole
  batch before turning it into training data, removes every group with a failure.
- Failures are counted by `kind/error_type` in the rollout and eval metrics.
- A training step stops the run once its failures exceed `rollout.max_failure_rate` of its batch
  (`rollout_batch_size × n_samples_per_prompt` samples, or of the episodes it played when slime
  over-samples more), counted as episodes finish, so that a world
  that always fails cannot keep slime over-sampling groups a dynamic filter drops; an eval stops when
  its failed share passes the same rate. The error names the first failure, with its traceback.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from t3rl_core.counts import counted
from t3rl_core.finite import shown
from t3rl_core.rollout.failures import Failure

METADATA_KEY = "t3rl_failure"


class FailureRateExceeded(RuntimeError):
    """Too many episodes of one rollout failed on infrastructure: the run stops."""


def metadata_of(sample: Any) -> Mapping[str, Any]:
    """A sample's metadata as every hook reads it: its mapping, or none. A sample no t3rl generate
    filled (slime aborted it before the call, or another generate made it) holds the row's own value,
    of any type: a list there, or a list under `reward_metrics`, raised out of the log hook, which
    then removed no failed group and logged nothing of the batch."""
    metadata = getattr(sample, "metadata", None)
    return metadata if isinstance(metadata, Mapping) else {}


def failure_of(sample: Any) -> Failure | None:
    """The failure the generate hook recorded on a sample, if any. A record of another shape under its
    name (only generate writes it: a row holding the name is refused) is no failure t3rl can read, and
    the sample is taken as failed, never trained on: it raised TypeError out of the log hook."""
    data = metadata_of(sample).get(METADATA_KEY)
    if not data:
        return None
    readable = (
        isinstance(data, Mapping)
        and _REQUIRED <= data.keys() <= _FAILURE_FIELDS
        and all(isinstance(data[key], str) for key in _REQUIRED)
    )
    if readable:
        return Failure.from_dict(dict(data))
    return Failure(
        "t3rl",
        "UnreadableFailure",
        f"metadata.{METADATA_KEY} holds {shown(data)}, no failure t3rl's generate wrote: the sample is "
        "taken as failed",
    )


_FAILURE_FIELDS = frozenset(field.name for field in fields(Failure))
_REQUIRED = frozenset({"kind", "error_type", "message"})


def remove_failed_groups(samples: Iterable[Any]) -> int:
    """Mark every sample of a prompt group holding a failed sample `remove_sample` (a sample without a
    group index is a group of its own); returns how many samples are removed for failures."""
    samples = list(samples)
    broken = {_group(sample) for sample in samples if failure_of(sample) is not None}
    removed = 0
    for sample in samples:
        if _group(sample) in broken:
            sample.remove_sample = True
            removed += 1
    return removed


def failure_metrics(samples: list[Any], prefix: str, removed: int | None = None) -> dict[str, float]:
    """`<prefix>/failures/<kind>/<error_type>` counts, the failed share `<prefix>/failures/rate` and,
    when given, the samples removed with their groups."""
    counts = Counter(failure.label for sample in samples if (failure := failure_of(sample)) is not None)
    metrics = {f"{prefix}/failures/{label}": float(n) for label, n in sorted(counts.items())}
    metrics[f"{prefix}/failures/rate"] = sum(counts.values()) / len(samples) if samples else 0.0
    if removed is not None:
        metrics[f"{prefix}/failures/removed_samples"] = float(removed)
    return metrics


def check_failure_rate(samples: list[Any], max_rate: float, where: str) -> None:
    """Raise FailureRateExceeded when more than `max_rate` of `samples` failed (or all of them did)."""
    failed = [(sample, failure) for sample in samples if (failure := failure_of(sample)) is not None]
    if failed and (len(failed) > max_rate * len(samples) or len(failed) == len(samples)):
        counts = Counter(failure.label for _, failure in failed)
        sample, first = failed[0]
        raise FailureRateExceeded(
            stop_message(
                where, f"{len(failed)} of {counted(len(samples), 'sample')}", max_rate, counts, first, sample
            )
        )


@dataclass
class StepBudget:
    """The failures one training step may have: at most `max_rate` of the episodes it played, and of
    its `batch` samples while it has played fewer. slime's over-sampling (`--over-sampling-batch-size`,
    a dynamic filter dropping groups) plays more episodes than a batch in a step: counted against the
    batch alone, 20 failures of 600 episodes (3 %) stopped a run at `max_failure_rate` 0.05 of 256.
    A world failing every episode still stops the step: at any rate below 1 as before, and at rate 1
    once more episodes than a batch have all failed (a filter drops every group of such a world, and
    slime would over-sample for good)."""

    step: int
    batch: int
    counts: Counter[str] = field(default_factory=Counter)
    first: tuple[Failure, Any] | None = None
    played: int = 0  # episodes finished in the step, failed or not

    def record(self, failure: Failure, sample: Any, max_rate: float) -> None:
        """Count a failed episode; raise FailureRateExceeded once the step's budget is spent."""
        self.played += 1
        self.counts[failure.label] += 1
        self.first = self.first or (failure, sample)
        failed = sum(self.counts.values())
        every = failed == self.played > self.batch
        if failed > max_rate * max(self.batch, self.played) or every:
            played = f"; {self.played} played" if self.played > self.batch else ""
            what = f"{failed} episodes (a batch has {self.batch} samples{played})"
            raise FailureRateExceeded(
                stop_message(f"rollout {self.step}", what, max_rate, self.counts, *self.first)
            )


def stop_message(
    where: str, what: str, max_rate: float, counts: Mapping[str, int], first: Failure, sample: Any
) -> str:
    by_type = ", ".join(f"{label} × {n}" for label, n in sorted(counts.items()))
    source = metadata_of(sample).get("data_source")
    about = f"sample {sample.index}" + (f" ({source})" if source else "")
    trace = f"\n{first.traceback.rstrip()}" if first.traceback else ""
    return (
        f"{where}: {what} failed on infrastructure ({by_type}), more than rollout.max_failure_rate="
        f"{max_rate:g} allows; the run stops. Failed episodes are never trained on. "
        f"First failure, {about}: {first.message}{trace}"
    )


def _group(sample: Any) -> tuple[str, int]:
    group = getattr(sample, "group_index", None)
    return ("group", group) if group is not None else ("sample", id(sample))
