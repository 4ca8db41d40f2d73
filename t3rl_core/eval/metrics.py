"""Scores of an evaluation: per-category and overall accuracy, progress, unbiased pass@k and pass^k.

With n samples of a task of which c succeed:
  pass@k = 1 − C(n−c, k) / C(n, k)   (probability that at least one of k samples drawn without
                                      replacement succeeds; Chen et al.'s unbiased estimator)
  pass^k = C(c, k) / C(n, k)         (probability that all k drawn samples succeed; tau-bench)
Both are computed per task, then averaged over tasks. Accuracy is the mean success rate per task
(= pass@1), averaged over tasks; progress and reward are means over episodes.

An episode the engine failed (status `aborted`: the model never answered) is not a wrong answer: it
is counted under `engine_failures` and left out of every score (an eval only passes with such
episodes when `eval.max_engine_failure_rate` allows them).

Failed episodes are counted by whose fault they are (`failures`: agent, parse, user_simulator,
infrastructure; t3rl_core.eval.attribution), and `accuracy_without_user_simulator` is the accuracy with
the episodes the user simulator failed left out (equal to `accuracy` when it failed none).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from math import comb
from statistics import fmean
from typing import Any

OVERALL = "overall"
ENGINE_FAILURE = "aborted"
USER_SIMULATOR, INFRASTRUCTURE = "user_simulator", "infrastructure"
FAILURE_KEYS = ("agent", "parse", USER_SIMULATOR, INFRASTRUCTURE)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task with `c` successes among `n` samples."""
    _check(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k of one task: the chance that k samples drawn from the n all succeed."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a success rate (95 % for z = 1.96); (0, 1) when n is 0. Unlike
    p ± z·sqrt(p(1−p)/n) it stays inside [0, 1] and is not empty at p = 0 or 1 (a small all-wrong eval
    still says how unsure it is)."""
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= n:
        raise ValueError(f"successes {successes} must be within 0..n={n}")
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # The interval contains p in exact arithmetic; rounding can put a bound a hair past it (an upper
    # bound of 0.9999999999999999 at 6/6, a lower one of 3e-17 at 0/11), which plots as a negative error.
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"successes c={c} must be within 0..n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"k={k} must be within 1..n={n} (samples per task)")


@dataclass(frozen=True)
class EpisodeScore:
    """What the metrics need of one finished episode."""

    task_id: str
    category: str
    success: bool
    reward: float
    progress: float | None = None
    status: str = "completed"
    # Whose fault a failure is (t3rl_core.eval.attribution): agent, user_simulator or infrastructure,
    # and the rule's kind (parse, engine_failure, ...); None for a success or an unattributed failure.
    party: str | None = None
    kind: str | None = None


# The version of what a summary's numbers mean (identity's `metric` part records it): raised when a
# number's definition changes. A summary of a higher version was written by a newer t3rl, whose numbers
# this one would read by its own definitions (`newer_definition`).
DEFINITION_VERSION = 1
# Per block, per rate: the tasks it averages over (`rate_count`).
TASKS_SCORED = "tasks_scored"
# The rates of a block (its TASKS_SCORED keys): shares of tasks, each in [0, 1]; pass@k / pass^k by k.
RATES = ("accuracy", "accuracy_without_user_simulator")
RATES_BY_K = ("pass@", "pass^")


def newer_definition(summary: Mapping[str, Any]) -> str | None:
    """Why this t3rl cannot read `summary`'s numbers when a newer t3rl defined them (its metric
    definition version past DEFINITION_VERSION), else None (an older summary, or one recording none)."""
    identity = summary.get("identity")
    metric = identity.get("metric") if isinstance(identity, Mapping) else None
    written = metric.get("version") if isinstance(metric, Mapping) else None
    if isinstance(written, int) and not isinstance(written, bool) and written > DEFINITION_VERSION:
        return (
            f"the summary's numbers are defined by metric definition version {written}, a newer t3rl's; "
            f"this t3rl reads version {DEFINITION_VERSION}: read it with the t3rl that wrote it (its "
            "attempts' commits), or upgrade this one"
        )
    return None


def is_rate(name: str) -> bool:
    """Whether a block's number `name` is a rate (a share of tasks, in [0, 1])."""
    return name in RATES or any(name.startswith(p) and name[len(p) :].isdigit() for p in RATES_BY_K)


def summarize(scores: Iterable[EpisodeScore], ks: Sequence[int]) -> dict[str, Any]:
    """`{"overall": {...}, "categories": {name: {...}}}`; each block has tasks, episodes,
    engine_failures (left out of every score), scored_episodes, wrong, accuracy, progress (None when no
    episode reports it), reward, pass@k / pass^k per k (over the tasks with at least k scored samples;
    None when there are none), and status counts."""
    by_category: dict[str, list[EpisodeScore]] = defaultdict(list)
    everything: list[EpisodeScore] = []
    for score in scores:
        by_category[score.category].append(score)
        everything.append(score)
    return {
        OVERALL: _block(everything, ks),
        "categories": {name: _block(by_category[name], ks) for name in sorted(by_category)},
    }


def _block(everything: list[EpisodeScore], ks: Sequence[int]) -> dict[str, Any]:
    scores = [s for s in everything if s.status != ENGINE_FAILURE]
    tasks: dict[str, list[EpisodeScore]] = defaultdict(list)
    for score in scores:
        tasks[score.task_id].append(score)
    progress = [s.progress for s in scores if s.progress is not None]
    block: dict[str, Any] = {
        "tasks": len({s.task_id for s in everything}),
        "episodes": len(everything),
        "scored_episodes": len(scores),
        "engine_failures": len(everything) - len(scores),
        "wrong": sum(not s.success for s in scores),
        "accuracy": _mean(fmean([s.success for s in group]) for group in tasks.values()),
        "progress": _mean(progress),
        "reward": _mean(s.reward for s in scores),
    }
    counts = [(len(group), sum(s.success for s in group)) for group in tasks.values()]
    for k in ks:
        # An interrupted eval can leave tasks with fewer than k samples; they cannot estimate pass@k.
        usable = [(n, c) for n, c in counts if n >= k]
        block[f"pass@{k}"] = _mean(pass_at_k(n, c, k) for n, c in usable)
        block[f"pass^{k}"] = _mean(pass_hat_k(n, c, k) for n, c in usable)
    block["statuses"] = dict(sorted(Counter(s.status for s in everything).items()))
    block["failures"] = failure_counts(everything)
    kept: dict[str, list[EpisodeScore]] = defaultdict(list)
    for score in scores:
        if score.party != USER_SIMULATOR:
            kept[score.task_id].append(score)
    block["accuracy_without_user_simulator"] = _mean(fmean([s.success for s in g]) for g in kept.values())
    # How many tasks each rate averages over (its interval's n): a task the engine failed in every
    # episode, or scored on fewer than k samples, is in `tasks` and in none of these means.
    block[TASKS_SCORED] = {
        "accuracy": len(tasks),
        **{f"pass{mark}{k}": sum(n >= k for n, _ in counts) for k in ks for mark in "@^"},
        "accuracy_without_user_simulator": len(kept),
    }
    return block


def rate_count(block: Mapping[str, Any], name: str) -> int | None:
    """The tasks the rate `name` of a summary's block averages over: its TASKS_SCORED entry, else (a
    summary written before t3rl kept them) the block's tasks (episodes in the oldest); None without one."""
    scored = block.get(TASKS_SCORED)
    value = scored.get(name) if isinstance(scored, Mapping) else None
    if value is None:
        value = block.get("tasks", block.get("episodes"))
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def failure_counts(scores: Iterable[EpisodeScore]) -> dict[str, int]:
    """Failed episodes by whose fault: agent (wrong answers), parse (the agent's unreadable output),
    user_simulator, infrastructure (engine failures included)."""
    counts = dict.fromkeys(FAILURE_KEYS, 0)
    for score in scores:
        if score.success:
            continue
        if score.party in (USER_SIMULATOR, INFRASTRUCTURE):
            counts[score.party] += 1
        elif score.status == ENGINE_FAILURE:
            counts[INFRASTRUCTURE] += 1
        else:
            counts["parse" if score.kind == "parse" else "agent"] += 1
    return counts


def _mean(values: Iterable[float]) -> float | None:
    # fmean of a list: of an iterator without a length it counts each item in Python (the summary of
    # a 300-episode eval spent most of its ~7 ms there, after the last episode).
    items = list(values)
    return fmean(items) if items else None
