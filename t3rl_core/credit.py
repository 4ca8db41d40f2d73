"""How advantages are built from an episode's rewards (`algorithm.credit`), and what each way needs.

- trajectory: slime's own estimator; every token of an episode shares one advantage.
- turn: MT-GRPO's turn-level credit (Zeng et al. 2025, "Reinforcing Multi-Turn Reasoning in LLM Agents
  via Turn-Level Credit Assignment", arXiv 2505.11821): the outcome advantage Â^O plus, on the tokens of
  each turn the world rewards, that turn's own group-normalised advantage Â^T (t3rl_core.hooks.advantage).

Each declaration states its prerequisites as data; the launcher's pre-flight reads them (no rule names a
credit). A world that rewards turns reports `turn_rewards` (one float or None per turn) and `turn_steps`
(the env steps each turn took) in its outcome.
"""

from collections.abc import Mapping, Sequence
from numbers import Integral
from typing import Annotated, Any, ClassVar

from annotated_types import Ge, Le

from t3rl_core.counts import counted
from t3rl_core.fields import Domain
from t3rl_core.strict import StrictModel

TURN_FIELDS = frozenset({"turn_rewards", "turn_steps"})


class Credit:
    """A way to build advantages; subclasses declare what it needs."""

    # Env.outcome() keys it reads.
    NEEDS_OUTCOME: ClassVar[frozenset[str]] = frozenset()
    # slime advantage estimators it works with (None = any).
    ESTIMATORS: ClassVar[tuple[str, ...] | None] = None
    # Curriculum modes it applies to.
    MODES: ClassVar[tuple[str, ...]] = ("rl", "sft")
    # Plans slime's one --custom-advantage-function-path (nothing else may then: KL-in-reward does too).
    ADVANTAGE_HOOK: ClassVar[bool] = False
    # Samples per prompt it normalises over, at least.
    MIN_GROUP: ClassVar[int] = 1


class TrajectoryCredit(Credit):
    """slime's estimator as configured: one advantage per episode."""


class TurnCredit(Credit):
    """MT-GRPO: Â^T of the turn + λ·Â^O on a rewarded turn's tokens, Â^O elsewhere."""

    NEEDS_OUTCOME = TURN_FIELDS
    ESTIMATORS = ("grpo",)
    MODES = ("rl",)
    ADVANTAGE_HOOK = True
    MIN_GROUP = 2


CREDITS: dict[str, type[Credit]] = {"trajectory": TrajectoryCredit, "turn": TurnCredit}

# λ's largest value. Both terms are z-scores within a group (|z| < 32 in a group of at most 1024), and the
# advantages reach the loss as float32, whose 24-bit significand rounds a term of size 1 away beside
# one of 2**24: past it the turn term is lost and credit=turn is trajectory credit scaled by λ. Unbounded,
# λ=1e308 made every advantage of a rewarded turn infinite (float32 of 1e308 * Â^O).
OUTCOME_WEIGHT_MAX = 2.0**24
OutcomeWeight = Annotated[
    float,
    Domain("outcome weight", "λ in [0, 2**24]: the outcome advantage's weight beside the turn's"),
    Ge(0),
    Le(OUTCOME_WEIGHT_MAX),
]


class TurnCreditConfig(StrictModel):
    """The runtime side of algorithm.credit=turn (the rollout hooks read it)."""

    # λ, the outcome advantage's weight on a rewarded turn's tokens (MT-GRPO: 1).
    outcome_weight: OutcomeWeight = 1.0


def turn_spans(
    step_starts: Sequence[int], turn_steps: Sequence[int], response_length: int
) -> list[tuple[int, int]]:
    """The response tokens of each turn: turn k runs from its first step's first model token to the
    next turn's (the last to the end of the response), observations included. A turn with no step (not
    reached) is an empty span. A model call the env never stepped (the last one, cut at the token limit
    or aborted) is in no turn: no turn's reward judged it, and after a turn that ended it may well be
    the next turn's first call, so the last turn ends where it starts."""
    starts: list[int] = []
    step = 0
    for count in turn_steps:
        starts.append(step_starts[step] if count and step < len(step_starts) else -1)
        step += count
    end = step_starts[step] if step < len(step_starts) else response_length
    spans = []
    for k, start in enumerate(starts):
        if start < 0:
            spans.append((response_length, response_length))
            continue
        later = [s for s in starts[k + 1 :] if s >= 0]
        spans.append((start, later[0] if later else end))
    return spans


def turn_fields_problem(outcome: Mapping[str, Any], taken: int | None = None) -> str | None:
    """What is wrong with an outcome's `turn_rewards` / `turn_steps` (None when they are absent or
    fit): the episode loop records it as the world's failure, so no sample carries turns that
    `turn_record` cannot read. `taken`: the env steps the episode took, which the turns' step counts
    must add up to (the spans are read from the loop's steps: a world counting a step it never took
    gave a turn the tokens of a call no env saw, or a reward and no tokens; one leaving steps out gave
    their tokens to no turn)."""
    # lazy: a cold `t3rl plan` imports this module for CREDITS alone (its start-up module budget)
    from t3rl_core.finite import finite_real, shown

    rewards, steps = outcome.get("turn_rewards"), outcome.get("turn_steps")
    if rewards is None or steps is None:  # no turn credit, as in turn_record
        return None
    if not isinstance(rewards, Sequence) or isinstance(rewards, str):
        return f"outcome turn_rewards is {type(rewards).__name__}, not a list (turn_steps: {shown(steps)})"
    if not isinstance(steps, Sequence) or isinstance(steps, str):
        return f"outcome turn_steps is {type(steps).__name__}, not a list (turn_rewards: {shown(rewards)})"
    if len(rewards) != len(steps):
        return (
            f"{len(rewards)} turn rewards for {counted(len(steps), 'turn')} (outcome turn_rewards / "
            "turn_steps)"
        )
    if not all(isinstance(count, Integral) and not isinstance(count, bool) and count >= 0 for count in steps):
        return f"outcome turn_steps must be step counts (ints >= 0): {shown(list(steps), 200)}"
    # A bool is a turn's check, not its score (as a reward's value: rewards.base.checked)
    if not all(r is None or (finite_real(r) and not isinstance(r, bool)) for r in rewards):
        return f"outcome turn_rewards must be finite numbers or None: {shown(list(rewards), 200)}"
    unreached = [
        k for k, (r, count) in enumerate(zip(rewards, steps, strict=True)) if r is not None and not count
    ]
    if unreached:
        # It has no tokens to credit, yet its reward would enter turn k's group mean of those that reached it.
        return f"outcome turn_rewards rewards turn(s) {unreached} of no step (turn_steps 0): give them None"
    if taken is not None and sum(steps) != taken:
        return (
            f"outcome turn_steps {shown(list(steps), 200)} add up to {sum(steps)} steps, the episode took "
            f"{taken} (env.step calls): count each step in the turn it belongs to"
        )
    return None


def turn_record(outcome: Mapping[str, Any], step_starts: Sequence[int], response_length: int) -> dict | None:
    """What the training side needs of an episode's turns: their rewards and token spans (None when
    the world reports no turn rewards)."""
    rewards, steps = outcome.get("turn_rewards"), outcome.get("turn_steps")
    if rewards is None or steps is None:
        return None
    problem = turn_fields_problem(outcome)
    if problem is not None:
        raise ValueError(problem)
    spans = turn_spans(step_starts, steps, response_length)
    return {"rewards": [None if r is None else float(r) for r in rewards], "spans": [list(s) for s in spans]}
