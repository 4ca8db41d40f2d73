"""slime's own start-up assertions on its argv (slime/utils/arguments.py, `slime_validate_args`, at the
pinned commit), as declarations: a flag another requires, two flags that exclude each other, a flag
slime silently ignores next to another. Every train argv t3rl builds — pass-through flags included —
is checked against them, so a combination slime would refuse (or quietly drop) on the cluster is a
config error before anything starts."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from launch.config.errors import ConfigError, Problem
from launch.config.fixes import list_override
from launch.plan.slime_options import argv_flags, is_flag


@dataclass(frozen=True)
class Constraint:
    """`flag` (given, and not 0 when it takes a number) needs every flag in `requires`, and none of
    `excludes`; `ignored_with`: slime ignores `flag` when that flag is given too."""

    flag: str
    requires: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    ignored_with: str | None = None
    why: str = ""


CONSTRAINTS = (
    Constraint(
        "--use-rollout-logprobs", excludes=("--use-tis",), why="slime: use_rollout_logprobs and use_tis"
    ),
    Constraint("--get-mismatch-metrics", requires=("--custom-tis-function-path",)),
    Constraint("--kl-coef", excludes=("--kl-loss-coef",), why="slime: only one of kl_coef and kl_loss_coef"),
    Constraint("--use-dynamic-batch-size", requires=("--max-tokens-per-gpu",)),
    Constraint("--balance-by-flops", requires=("--use-dynamic-batch-size",)),
    Constraint("--debug-rollout-only", excludes=("--debug-train-only",)),
    Constraint("--eval-interval", requires=("--eval-prompt-data|--eval-config",)),
    Constraint("--save-interval", requires=("--save",)),
    Constraint("--enable-mtp-training", requires=("--mtp-num-layers",)),
    Constraint("--only-train-params-name-list", excludes=("--freeze-params-name-list",)),
    Constraint("--num-epoch", ignored_with="--num-rollout"),
    Constraint(
        "--num-epoch",
        excludes=("--disable-rollout-global-dataset",),
        why="slime: num_epoch needs the global dataset",
    ),
)


def _given(argv: Sequence[str]) -> dict[str, list[str]]:
    """Flag → its values, for the flags that are on (a numeric value 0 is off, as slime reads it)."""
    return {
        name: values for _, name, values in argv_flags(argv) if not (len(values) == 1 and _zero(values[0]))
    }


def _zero(value: str) -> bool:
    try:
        return float(value) == 0
    except ValueError:
        return False


def violations(argv: Sequence[str]) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(sentence, the flags involved) per slime assertion the argv would fail, or flag slime would drop."""
    given = _given(argv)
    for rule in CONSTRAINTS:
        if rule.flag not in given:
            continue
        for needed in rule.requires:
            if not any(option in given for option in needed.split("|")):
                either = needed.replace("|", " or ")
                yield f"{rule.flag} needs {either}, which is not given (slime asserts it)", (rule.flag,)
        for other in rule.excludes:
            if other in given:
                why = rule.why or "slime asserts it"
                yield f"{rule.flag} and {other} cannot be given together ({why})", (rule.flag, other)
        if rule.ignored_with and rule.ignored_with in given:
            why = "slime keeps the latter without a word"
            yield (
                f"{rule.flag} is ignored next to {rule.ignored_with} ({why})",
                (rule.flag, rule.ignored_with),
            )


def check_constraints(argv: Sequence[str], extra: Sequence[str], *, key: str, extra_key: str) -> None:
    """Raise a ConfigError for every slime assertion the argv would fail: on `extra_key` (the fix drops
    the pass-through flag) when a flag of `extra` takes part, else on `key`."""
    passed = _given(extra)
    problems = []
    for sentence, flags in violations(argv):
        mine = [f for f in flags if f in passed]
        if not mine:
            problems.append(
                Problem(key, f"slime argv: {sentence}", fix="change the t3rl keys that write them")
            )
            continue
        rest = _without(extra, mine[0])
        problems.append(
            Problem(extra_key, f"slime argv: {sentence}", fix=f"set {list_override(extra_key, rest)}")
        )
    if problems:
        raise ConfigError(problems)


def _without(argv: Sequence[str], flag: str) -> list[str]:
    """`argv` without `flag` and its values."""
    kept: list[str] = []
    skipping = False
    for token in argv:
        if is_flag(token):
            skipping = token.partition("=")[0] == flag
        if not skipping:
            kept.append(token)
    return kept
