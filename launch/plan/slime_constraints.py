"""slime's and Megatron's own start-up assertions on the argv, as declarations: slime's
`slime_validate_args` and its Megatron defaults, Megatron's `validate_args`, `TransformerConfig` and
`OptimizerParamScheduler` (at the commits `slime_option_table` names). A flag another requires, flags
that exclude each other, a flag silently ignored next to another, and numeric relations between flags
(a bound, a multiple). Every train argv t3rl builds — pass-through flags included — is checked against
them, so a combination slime or Megatron would refuse (or quietly drop) on the cluster is a config
error before anything starts.

A condition names a flag: `--flag` (given, and not 0 when it takes a number), `--flag=v` (its value is
v), `--flag>N` (its number is more than N); `a|b` is either. slime always turns on Megatron's
distributed optimizer, and bf16 unless `--fp16` (`_set_default_megatron_args`): those count as given.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping, Sequence

from launch.config.argv_tokens import flags_on, without_flag
from launch.config.errors import ConfigError, Problem
from launch.config.fixes import list_override
from launch.config.schema import MegatronArch, MLAArch, MoEArch
from launch.plan.slime_options import known_options
from t3rl_core.records import Record

SLIME = "slime asserts it"
MEGATRON = "Megatron asserts it"


class Constraint(Record):
    """`flag` (a condition) needs every condition in `requires`, and none of `excludes`;
    `ignored_with`: `flag` is dropped without a word when that condition holds too."""

    flag: str
    requires: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    ignored_with: str | None = None
    # Why slime replaces the flag's setting whatever else is given (empty: it does not).
    replaced: str = ""
    why: str = ""


class Violation(Record):
    """One assertion an argv fails: what is wrong, the flags taking part, and the condition it lacks
    (for a flag another requires)."""

    sentence: str
    flags: tuple[str, ...]
    missing: str | None = None


class Relation(Record):
    """`left op right` between two numbers of the argv, checked when both are known and `when` holds.
    A side is a flag or a quantity slime derives (`DERIVED`, which `reads` names the flags of); op is
    one of `OPS`."""

    left: str
    op: str
    right: str
    why: str
    when: str | None = None
    reads: tuple[str, ...] = ()


_SLIME_SETS_THE_LENGTH = (
    "slime sets train_iters to num_rollout × rollout_batch_size × n_samples_per_prompt // global_batch_size "
    "(set the curriculum's num_rollout)"
)
_SLIME_COUNTS_STEPS = (
    "slime's scheduler counts warmup and decay in optimizer steps and never reads a sample count "
    "(--lr-warmup-iters, --lr-decay-iters, --lr-wsd-decay-iters or optimizer.lr_warmup_fraction)"
)
CONSTRAINTS = (
    # slime_validate_args
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
    Constraint("--use-opd", requires=("--opd-type",)),
    Constraint("--opd-teacher-load", requires=("--use-opd",)),
    Constraint("--opd-type=megatron", requires=("--opd-teacher-load",)),
    Constraint("--opd-type=sglang", excludes=("--opd-teacher-load",)),
    Constraint("--update-weight-transport=disk", requires=("--update-weight-disk-dir",)),
    Constraint(
        "--update-weight-mode=delta",
        requires=("--update-weight-transport=disk", "--update-weight-local-checkpoint-dir"),
    ),
    Constraint(
        "--update-weight-mode=delta",
        excludes=("--colocate",),
        why="slime: a colocated engine gets the weights by CUDA IPC, delta updates are for separate ones",
    ),
    Constraint(
        "--release-train",
        requires=("--save", "--update-weight-transport=disk"),
        excludes=("--keep-old-actor", "--advantage-estimator=ppo", "--update-weight-mode=delta"),
    ),
    Constraint(
        "--allgather-cp",
        excludes=("--context-parallel-size>1",),
        why="slime: allgather CP is for DSA-attention models (DeepSeek-V3.2, GLM-5.1) only; others "
        "would have their token order scrambled",
    ),
    Constraint("--lr-warmup-iters", ignored_with="--lr-warmup-fraction"),
    Constraint("--micro-batch-size", ignored_with="--use-dynamic-batch-size"),
    Constraint(
        "--decoder-first-pipeline-num-layers|--decoder-last-pipeline-num-layers",
        requires=("--pipeline-model-parallel-size>1",),
    ),
    # t3rl's pipeline: conversions, init_from and resume read the stage's torch_dist checkpoints.
    Constraint(
        "--ckpt-format",
        requires=("--ckpt-format=torch_dist",),
        why="t3rl's conversion to HF, init_from and resume read torch_dist checkpoints",
    ),
    Constraint(
        "--no-save-optim",
        requires=("--no-load-optim",),
        why="a resumed stage loads its last checkpoint with --load, and Megatron looks for its optimizer",
    ),
    Constraint(
        "--no-save-rng",
        requires=("--no-load-rng",),
        why="a resumed stage loads its last checkpoint with --load, and Megatron looks for its RNG state",
    ),
    # Megatron validate_args
    Constraint(
        "--num-layers-per-virtual-pipeline-stage|--num-virtual-stages-per-pipeline-rank",
        requires=("--pipeline-model-parallel-size>1",),
        why="Megatron: the interleaved schedule needs pipeline stages",
    ),
    Constraint(
        "--num-layers-per-virtual-pipeline-stage",
        excludes=("--decoder-first-pipeline-num-layers|--decoder-last-pipeline-num-layers",),
        why="Megatron: uneven pipeline stages take --num-virtual-stages-per-pipeline-rank",
    ),
    Constraint("--fp16", excludes=("--bf16",), why="Megatron: one of fp16 and bf16"),
    Constraint("--optimizer-cpu-offload", requires=("--use-precision-aware-optimizer",)),
    Constraint("--overlap-param-gather", requires=("--overlap-grad-reduce",)),
    Constraint("--tp-comm-overlap", requires=("--sequence-parallel",)),
    Constraint(
        "--distribute-saved-activations",
        requires=("--tensor-model-parallel-size>1", "--recompute-granularity=full", "--recompute-method"),
        excludes=("--sequence-parallel",),
    ),
    Constraint(
        "--use-torch-fsdp2",
        excludes=(
            "--use-distributed-optimizer",
            "--pipeline-model-parallel-size>1",
            "--expert-model-parallel-size>1",
        ),
        why="Megatron: FSDP2 replaces the distributed optimizer slime always turns on",
    ),
    Constraint("--offload-optimizer-states", excludes=("--optimizer=sgd",), why="Megatron: adam only"),
    Constraint("--load-main-params-from-ckpt", requires=("--no-load-optim",)),
    Constraint("--fp4-format", excludes=("--fp8-format",)),
    Constraint("--fp4-param-gather", requires=("--fp4-format",)),
    Constraint("--fp8-param-gather", requires=("--fp8-format",), why="Megatron: fp8_param needs fp8 mode"),
    Constraint("--expert-model-parallel-size>1", requires=("--num-experts",)),
    Constraint(
        "--moe-token-dispatcher-type=allgather",
        replaced="slime turns it into alltoall (allgather cannot take variable sequence lengths)",
    ),
    # slime sizes the run and its schedule itself (backends/megatron_utils/model.py at SLIME_COMMIT):
    # train_iters from the rollouts, warmup and decay in iterations; no sample count is read.
    *(Constraint(flag, replaced=_SLIME_SETS_THE_LENGTH) for flag in ("--train-iters", "--train-samples")),
    *(
        Constraint(flag, replaced=_SLIME_COUNTS_STEPS)
        for flag in ("--lr-warmup-samples", "--lr-decay-samples", "--lr-wsd-decay-samples")
    ),
    Constraint(
        "--lr-wsd-decay-iters|--lr-wsd-decay-style",
        requires=("--lr-decay-style=WSD",),
        why="Megatron reads it for that decay style only",
    ),
    Constraint(
        "--lr-decay-style=WSD",
        requires=("--lr-wsd-decay-iters",),
        why="Megatron's scheduler starts the WSD anneal that many steps before the end",
    ),
    # Megatron TransformerConfig
    Constraint(
        "--moe-expert-capacity-factor",
        excludes=("--moe-router-load-balancing-type=sinkhorn",),
        why="Megatron: token dropping works with the aux-loss and none load balancing",
    ),
    Constraint(
        "--moe-router-topk=1",
        requires=(
            "--moe-router-pre-softmax|--moe-router-score-function=sigmoid|--moe-router-load-balancing-type=sinkhorn",
        ),
        why="Megatron: a softmax over one expert has no gradient",
    ),
    Constraint("--moe-enable-deepep", requires=("--moe-token-dispatcher-type=flex",)),
    Constraint("--moe-pad-expert-input-to-capacity", requires=("--moe-expert-capacity-factor",)),
    Constraint("--moe-shared-expert-overlap", requires=("--moe-token-dispatcher-type=alltoall",)),
    Constraint("--moe-router-enable-expert-bias", requires=("--moe-router-score-function=sigmoid",)),
    Constraint("--moe-router-padding-for-quantization", requires=("--fp8-format|--fp4-format",)),
    Constraint("--moe-router-group-topk", requires=("--moe-router-num-groups",)),
    Constraint(
        "--cpu-offloading-num-layers",
        excludes=("--pipeline-model-parallel-size>1", "--recompute-granularity"),
        why="Megatron: activation CPU offloading works without pipeline stages and recomputation",
    ),
)


def _global_batch(given: Mapping[str, list[str]]) -> float | None:
    """Samples per optimizer step: --global-batch-size, or what slime derives from --num-steps-per-rollout."""
    batch = _number(given, "--global-batch-size")
    prompts, samples = _number(given, "--rollout-batch-size"), _number(given, "--n-samples-per-prompt")
    steps = _number(given, "--num-steps-per-rollout")
    if batch is None and steps and prompts and samples:
        batch = prompts * samples // steps
    return batch


def _train_iters(given: Mapping[str, list[str]]) -> float | None:
    """slime's train_iters: num_rollout × rollout_batch_size × n_samples_per_prompt // the global batch."""
    rollouts, batch = _number(given, "--num-rollout"), _global_batch(given)
    prompts, samples = _number(given, "--rollout-batch-size"), _number(given, "--n-samples-per-prompt")
    if not (rollouts and batch and prompts and samples):
        return None
    return (rollouts * prompts * samples) // batch


def _micro_batches_over_dp(given: Mapping[str, list[str]]) -> float | None:
    """--micro-batch-size × the data-parallel ranks (world / (TP × PP × CP)), when a micro batch is given."""
    micro = _number(given, "--micro-batch-size")
    names = ("--actor-num-nodes", "--actor-num-gpus-per-node")
    parallel = ("--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size")
    world = [_number(given, n) for n in names]
    split = [_number(given, n) or 1 for n in parallel]
    if micro is None or None in world:
        return None
    ranks = world[0] * world[1] // (split[0] * split[1] * split[2])  # type: ignore[operator]
    return micro * ranks if ranks else None


def _two_cp(given: Mapping[str, list[str]]) -> float | None:
    cp = _number(given, "--context-parallel-size")
    return 2 * cp if cp and cp > 1 else None


def _layers_per_stage(given: Mapping[str, list[str]]) -> float | None:
    layers, stages = _number(given, "--num-layers"), _number(given, "--pipeline-model-parallel-size")
    return layers / stages if layers and stages else None


DERIVED: dict[str, Callable[[Mapping[str, list[str]]], float | None]] = {
    "train_iters": _train_iters,
    "global batch": _global_batch,
    "--micro-batch-size × data-parallel ranks": _micro_batches_over_dp,
    "2 × --context-parallel-size": _two_cp,
    "layers per pipeline stage": _layers_per_stage,
}

OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
    "a multiple of": lambda a, b: a % b == 0,
}

RELATIONS = (
    Relation("--min-lr", "<=", "--lr", "Megatron: min_lr <= lr"),
    Relation("--lr-warmup-init", "<=", "--lr", "Megatron's scheduler: init_lr <= max_lr"),
    Relation(
        "--lr-warmup-iters",
        "<",
        "--lr-decay-iters",
        "Megatron's scheduler: warmup steps < decay steps",
        when="--lr-decay-iters",
    ),
    Relation(
        "--lr-warmup-iters",
        "<",
        "train_iters",
        "Megatron's scheduler: warmup steps < decay steps, which default to slime's train_iters "
        "(num_rollout × rollout_batch_size × n_samples_per_prompt / global_batch_size)",
    ),
    Relation(
        "layers per pipeline stage",
        "a multiple of",
        "--num-layers-per-virtual-pipeline-stage",
        "Megatron: each pipeline stage splits into whole virtual stages",
    ),
    Relation(
        "global batch",
        "a multiple of",
        "--micro-batch-size × data-parallel ranks",
        "Megatron's micro-batch calculator, which slime initialises with them",
        reads=("--micro-batch-size",),
    ),
    Relation("--moe-router-num-groups", "<=", "--num-experts", "Megatron: experts split into the groups"),
    Relation("--num-experts", "a multiple of", "--moe-router-num-groups", "Megatron asserts it"),
    Relation("--save-retain-interval", "a multiple of", "--save-interval", "Megatron asserts it"),
    Relation("--seq-length", "a multiple of", "2 × --context-parallel-size", "Megatron, with CP > 1"),
    Relation("--seq-length", "<=", "--max-position-embeddings", "Megatron asserts it"),
    Relation(
        "--rollout-max-prompt-len",
        "<",
        "--rollout-max-context-len",
        "slime: at least one generated token to compute a loss on",
    ),
    Relation("--cpu-offloading-num-layers", "<", "--num-layers", "Megatron asserts it"),
    Relation("--moe-router-group-topk", "<=", "--moe-router-num-groups", "Megatron asserts it"),
)


def _given(argv: Sequence[str]) -> dict[str, list[str]]:
    """Flag → its values, for the flags that are on (a numeric value 0 is off, as slime reads it), with
    the Megatron settings slime turns on itself."""
    given = flags_on(argv)
    given.setdefault("--use-distributed-optimizer", [])
    if "--fp16" not in given:
        given.setdefault("--bf16", [])
    return given


def _number(given: Mapping[str, list[str]], name: str) -> float | None:
    values = given.get(name)
    try:
        return float(values[-1]) if values else None
    except ValueError:
        return None


def _holds(given: Mapping[str, list[str]], condition: str) -> bool:
    """Whether one of the `|`-separated conditions holds of the argv."""
    for term in condition.split("|"):
        name, eq, value = term.partition("=")
        flag, gt, bound = name.partition(">")
        if gt:
            number = _number(given, flag)
            if number is not None and number > float(bound):
                return True
        elif eq:
            if given.get(name) and given[name][-1] == value:
                return True
        elif name in given:
            return True
    return False


def _asserted_by(flag: str) -> str:
    option = known_options().get(flag)
    return SLIME if option is not None and option.source != "megatron" else MEGATRON


def _flags(condition: str) -> tuple[str, ...]:
    return tuple(term.partition("=")[0].partition(">")[0] for term in condition.split("|"))


def _said(condition: str) -> str:
    return condition.replace("|", " or ").replace("=", " ").replace(">", " > ")


def violations(argv: Sequence[str]) -> Iterator[Violation]:
    """Each assertion the argv would fail, or flag that would be dropped."""
    given = _given(argv)
    for rule in CONSTRAINTS:
        if not _holds(given, rule.flag):
            continue
        mine = tuple(f for f in _flags(rule.flag) if f in given)
        why = rule.why or _asserted_by(_flags(rule.flag)[0])
        for needed in rule.requires:
            if _holds(given, needed):
                continue
            if _flags(needed) == _flags(rule.flag):  # a value the flag must have
                value = " ".join(given[mine[0]])
                yield Violation(f"{mine[0]} {value} is not {_said(needed)} ({why})", mine)
            else:
                yield Violation(
                    f"{_said(rule.flag)} needs {_said(needed)}, which is not given ({why})", mine, needed
                )
        for other in rule.excludes:
            if _holds(given, other):
                sentence = f"{_said(rule.flag)} and {_said(other)} cannot be given together ({why})"
                yield Violation(sentence, (*mine, *_flags(other)))
        if rule.ignored_with and _holds(given, rule.ignored_with):
            sentence = (
                f"{_said(rule.flag)} is ignored next to {_said(rule.ignored_with)} "
                "(the latter wins without a word)"
            )
            yield Violation(sentence, (*mine, *_flags(rule.ignored_with)))
        if rule.replaced:
            yield Violation(f"{_said(rule.flag)} has no effect: {rule.replaced}", mine)
    yield from relation_violations(given)


def relation_violations(given: Mapping[str, list[str]]) -> Iterator[Violation]:
    """Each relation the argv's numbers break."""
    for rel in RELATIONS:
        if rel.when is not None and not _holds(given, rel.when):
            continue
        left, right = _side(given, rel.left), _side(given, rel.right)
        if left is None or right is None or OPS[rel.op](left, right):
            continue
        flags = (*(side for side in (rel.left, rel.right) if side not in DERIVED), *rel.reads)
        yield Violation(f"{rel.left} {left:g} is not {rel.op} {rel.right} {right:g} ({rel.why})", flags)


def _side(given: Mapping[str, list[str]], side: str) -> float | None:
    """A relation's side: a quantity slime derives, or a flag's number."""
    return DERIVED[side](given) if side in DERIVED else _number(given, side)


def check_constraints(argv: Sequence[str], extra: Sequence[str], *, key: str, extra_key: str) -> None:
    """Raise a ConfigError for every assertion the argv would fail: on `extra_key` (the fix drops
    the pass-through flag) when a flag of `extra` takes part, else on the config key t3rl derives a
    flag of it from (`key`, the stage, when none)."""
    passed = _given(extra)
    problems = []
    for sentence, flags, missing in violations(argv):
        mine = [f for f in flags if f in passed]
        if mine:
            rest = without_flag(extra, mine[0])
            problems.append(
                Problem(extra_key, f"slime argv: {sentence}", fix=f"set {list_override(extra_key, rest)}")
            )
            continue
        blamed = next((k for k in (_config_key(f, key) for f in flags) if k is not None), key)
        added = _addable(missing, key)
        valued = added and len(added) == 1 and _takes_values(added[0])
        fix = (
            f"add {added[0]} with its value to {extra_key}"
            if valued
            else f"set {list_override(extra_key, [*without_flag(extra, added[0]), *added])}"
            if added
            else "change the t3rl keys that write these flags (no override of one key fixes it alone)"
        )
        problems.append(Problem(blamed, f"slime argv: {sentence}", fix=fix))
    if problems:
        raise ConfigError(problems)


def _addable(condition: str | None, stage_key: str) -> list[str]:
    """The pass-through tokens that satisfy a missing condition (its first alternative), when it names a
    flag t3rl does not derive and a plain value."""
    if condition is None:
        return []
    term = condition.split("|")[0]
    name, eq, value = term.partition("=")
    if ">" in name or _config_key(name, stage_key) is not None:
        return []
    return [name, value] if eq else [name]


def _takes_values(flag: str) -> bool:
    """Whether `flag` is an option that needs a value (not a switch), by slime's option table."""
    option = known_options().get(flag)
    return option is not None and option.nargs != 0


def _config_key(flag: str, stage_key: str) -> str | None:
    """The config key t3rl writes `flag` from: a curriculum or hardware key, or an architecture field."""
    from launch.config.slime_flags import owner  # lazy: asked only of a flag in a violation

    found = owner(flag, stage_key)
    name = flag.removeprefix("--").replace("-", "_")
    for prefix, model in (("", MegatronArch), ("moe.", MoEArch), ("mla.", MLAArch)):
        if found is None and name in model.model_fields:
            found = f"model.architecture.{prefix}{name}"
    return found
