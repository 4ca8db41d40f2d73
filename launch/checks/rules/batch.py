"""A train stage's curriculum: batch arithmetic, schedule, eval and token budgets (slime's rules).

Batch sizes count samples: a rollout yields rollout_batch_size × n_samples_per_prompt of them, and
each optimizer step takes global_batch_size. slime drops the samples of a rollout that do not fill a
whole step, and Megatron needs each step to split evenly over the data-parallel ranks.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import Any

from pydantic import BaseModel

from launch.checks.context import Context, Scope, per_scope
from launch.checks.rules.layouts import first_valid, passes
from launch.checks.rules.topology import fitting
from launch.config.algorithms import ESTIMATORS, filter_declaration
from launch.config.errors import Problem, did_you_mean
from t3rl_core.counts import counted


def _listed(values: list[int]) -> str:
    return ", ".join(map(str, values))


def _samples(scope: Scope) -> int:
    cur = scope.curriculum
    assert cur is not None
    return cur.rollout_batch_size * cur.n_samples_per_prompt


@per_scope
def steps_per_rollout_defined(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """RL needs global_batch_size or num_steps_per_rollout, and the two may not disagree (slime)."""
    cur = scope.curriculum
    if cur is None or cur.mode != "rl":
        return
    total = _samples(scope)
    gbs, steps = cur.global_batch_size, cur.num_steps_per_rollout
    if gbs is None and steps is None:
        yield Problem(
            scope.cur("global_batch_size"),
            "neither global_batch_size nor num_steps_per_rollout is set",
            fix=f"set {scope.cur('global_batch_size')}={total} (one optimizer step per rollout)",
        )
    if steps is not None and total % steps:
        yield Problem(
            scope.cur("num_steps_per_rollout"),
            f"{counted(total, 'sample')} per rollout (rollout_batch_size × n_samples_per_prompt) "
            f"do not split into {steps} steps",
            fix=_pick(
                scope, ctx, "num_steps_per_rollout", fitting(total, 1), f"divides {counted(total, 'sample')}"
            ),
        )
    elif steps is not None and gbs is not None and gbs != total // steps:
        key = ctx.latest(scope.cur("global_batch_size"), scope.cur("num_steps_per_rollout"))
        yield Problem(
            key,
            f"global_batch_size {gbs} disagrees with num_steps_per_rollout {steps}: "
            f"{counted(total, 'sample')} / {steps} steps = {total // steps} (slime asserts they match)",
            fix=f"set {scope.cur('global_batch_size')}={total // steps}, or remove one of the two",
        )


@per_scope
def rollout_fills_whole_steps(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """slime trains floor(samples / global_batch_size) steps per rollout and drops the rest."""
    cur = scope.curriculum
    if cur is None or cur.global_batch_size is None:
        return
    total, gbs = _samples(scope), cur.global_batch_size
    if total % gbs == 0:
        return
    key = ctx.latest(
        scope.cur("global_batch_size"), scope.cur("rollout_batch_size"), scope.cur("n_samples_per_prompt")
    )
    what = (
        "no optimizer step at all" if gbs > total else f"{total % gbs} samples of every rollout are dropped"
    )
    yield Problem(
        key,
        f"rollout_batch_size {cur.rollout_batch_size} × n_samples_per_prompt {cur.n_samples_per_prompt} "
        f"= {counted(total, 'sample')} is not a multiple of global_batch_size {gbs}: {what}",
        fix=_pick(
            scope,
            ctx,
            "global_batch_size",
            fitting(total, 1),
            f"divides {total}; {total} = one step per rollout",
        ),
    )


@per_scope
def global_batch_splits_over_data_parallel(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Megatron's micro-batch calculator: global batch divisible by micro batch (1) × data-parallel size."""
    cur = scope.curriculum
    if cur is None or scope.world_size % scope.model_parallel:
        return
    gbs = cur.global_batch_size or (
        _samples(scope) // cur.num_steps_per_rollout if cur.num_steps_per_rollout else None
    )
    dp = scope.data_parallel
    if gbs is None or gbs % dp == 0:
        return
    # the side changed last: the batch, or the layout field typed that changed the data-parallel ranks
    sizes = (
        ("global_batch_size",) if cur.global_batch_size else ("rollout_batch_size", "n_samples_per_prompt")
    )
    key = ctx.latest(*(scope.cur(f) for f in sizes), *(scope.hw(f) for f in _LAYOUT))
    field = next((f for f in _LAYOUT if key == scope.hw(f)), None)
    ok = _layout_values(scope, ctx, field, gbs) if field else []
    yield Problem(
        key if ok or not field else scope.cur("global_batch_size"),
        f"global batch {gbs} does not split over {dp} data-parallel ranks "
        f"(world {scope.world_size} / (TP × PP × CP) {scope.model_parallel}; Megatron)",
        fix=f"set {key}={ok[0]} (one of {', '.join(map(str, sorted(ok)))}: {gbs} splits over its ranks)"
        if ok
        else _data_parallel_fix(scope, ctx, gbs, dp),
    )


@per_scope
def over_sampling_covers_batch(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """slime: over_sampling_batch_size must be at least rollout_batch_size."""
    cur = scope.curriculum
    if (
        cur is None
        or cur.over_sampling_batch_size is None
        or cur.over_sampling_batch_size >= cur.rollout_batch_size
    ):
        return
    key = ctx.latest(scope.cur("over_sampling_batch_size"), scope.cur("rollout_batch_size"))
    yield Problem(
        key,
        f"over_sampling_batch_size {cur.over_sampling_batch_size} "
        f"< rollout_batch_size {cur.rollout_batch_size} (slime)",
        fix=f"set {scope.cur('over_sampling_batch_size')}={cur.rollout_batch_size} "
        f"(>= {cur.rollout_batch_size}), or null",
    )


@per_scope
def schedule_length_set(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """slime: --num-rollout or --num-epoch is required."""
    cur = scope.curriculum
    if cur is not None and cur.num_rollout is None and cur.num_epoch is None:
        rollouts, epochs = scope.cur("num_rollout"), scope.cur("num_epoch")
        # the one nulled last (`num_epoch=null` under an epoch-length curriculum) gets its value back
        fix = (
            f"give {epochs} its number of passes over the split, or {rollouts} a number of rollouts"
            if ctx.latest(rollouts, epochs) == epochs
            else f"set {rollouts}=800 (T3RL), or {epochs}"
        )
        yield Problem(
            ctx.latest(rollouts, epochs),
            "the train stage has no length: neither num_rollout nor num_epoch is set",
            fix=fix,
        )


@per_scope
def eval_interval_needs_eval_split(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """slime: --eval-interval needs eval datasets; an eval split without an interval is never evaluated."""
    cur = scope.curriculum
    if cur is not None and cur.eval_interval is not None and cur.eval_split is None:
        key = ctx.latest(scope.cur("eval_interval"), scope.cur("eval_split"))
        yield Problem(
            key,
            f"eval_interval {cur.eval_interval} but no eval_split: in-loop eval has no data",
            fix=f"set {scope.cur('eval_interval')}=null; or {scope.cur('eval_split')} to a prepared split",
        )
    elif cur is not None and cur.mode == "rl" and cur.eval_interval is None and cur.eval_split is not None:
        key = ctx.latest(scope.cur("eval_interval"), scope.cur("eval_split"))
        yield Problem(
            key,
            f"eval_split {cur.eval_split} but no eval_interval: the in-loop eval never runs",
            fix=f"set {scope.cur('eval_interval')}=5; or {scope.cur('eval_split')}=null",
            severity="warning",
        )


@per_scope
def sft_mode_consistent(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """slime's SFT rollout samples nothing and evaluates nothing: one sample per prompt, no in-loop eval."""
    cur = scope.curriculum
    if cur is None or cur.mode != "sft":
        return
    fix = _sft_fix(scope)
    if cur.n_samples_per_prompt != 1:
        yield Problem(
            scope.cur("n_samples_per_prompt"),
            f"mode sft trains on dataset rows: n_samples_per_prompt is {cur.n_samples_per_prompt}",
            fix=fix,
        )
    if cur.eval_interval is not None:
        yield Problem(
            scope.cur("eval_interval"),
            "slime's SFT rollout has no in-loop eval (evaluate with an eval stage)",
            fix=fix,
        )
    if cur.dynamic_sampling_filter is not None:
        yield Problem(
            scope.cur("dynamic_sampling_filter"), "mode sft has no rewards to filter groups by", fix=fix
        )


def _sft_fix(scope: Scope) -> str:
    """Every change SFT mode needs at once, so that applying the fix of any one of its errors validates."""
    cur = scope.curriculum
    assert cur is not None
    changes = {"n_samples_per_prompt": 1} if cur.n_samples_per_prompt != 1 else {}
    if cur.global_batch_size and cur.rollout_batch_size % cur.global_batch_size:
        changes["global_batch_size"] = cur.rollout_batch_size
    if cur.eval_interval is not None:
        changes["eval_interval"] = "null"
    if cur.dynamic_sampling_filter is not None:
        changes["dynamic_sampling_filter"] = "null"
    return "set " + " ".join(f"{scope.cur(k)}={v}" for k, v in changes.items())


@per_scope
def group_filter_needs_groups(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """A reward-std filter drops every group of one sample (its std is always 0)."""
    cur = scope.curriculum
    if cur is None or cur.mode != "rl" or not cur.dynamic_sampling_filter or cur.n_samples_per_prompt > 1:
        return
    if filter_declaration(cur.dynamic_sampling_filter).needs_groups:
        key = ctx.latest(scope.cur("dynamic_sampling_filter"), scope.cur("n_samples_per_prompt"))
        yield Problem(
            key,
            f"{cur.dynamic_sampling_filter.rpartition('.')[2]} judges a prompt's group of samples, and "
            "n_samples_per_prompt 1 makes every group one sample (a single reward has std 0)",
            fix=f"set {scope.cur('n_samples_per_prompt')}=16 (>= 2; T3RL: 16), "
            f"or {scope.cur('dynamic_sampling_filter')}=null",
        )


@per_scope
def kl_coef_needs_kl_loss(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """slime ignores --kl-loss-coef without --use-kl-loss."""
    cur = scope.curriculum
    if cur is not None and cur.algorithm.kl_loss_coef != 0 and not cur.algorithm.use_kl_loss:
        coef, use = scope.cur("algorithm.kl_loss_coef"), scope.cur("algorithm.use_kl_loss")
        yield Problem(
            ctx.latest(coef, use),  # the one set last (`use_kl_loss=false` typed over a file's coefficient)
            f"kl_loss_coef {cur.algorithm.kl_loss_coef} has no effect: use_kl_loss is false",
            fix=f"set {use}=true, or {coef}=0",
        )


@per_scope
def kl_in_reward_has_a_reference(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """The KL-in-reward hook needs slime's policy-gradient loop with a reference model and GRPO returns.

    The plan loads the reference with --kl-coef, which slime refuses next to a non-zero --kl-loss-coef.
    """
    cur = scope.curriculum
    if cur is None or cur.algorithm.kl_in_reward is None:
        return
    algo, hook = cur.algorithm, scope.cur("algorithm.kl_in_reward")
    if cur.mode != "rl":
        yield Problem(
            ctx.latest(hook, scope.cur("mode")),
            "algorithm.kl_in_reward needs a reference model and advantages, and mode sft has neither",
            fix=f"set {hook}=null",
        )
    elif not ESTIMATORS[algo.advantage_estimator].grpo_returns:
        yield Problem(
            ctx.latest(hook, scope.cur("algorithm.advantage_estimator")),
            f"algorithm.kl_in_reward replaces GRPO's advantages, not {algo.advantage_estimator}'s",
            fix=f"set {scope.cur('algorithm.advantage_estimator')}=grpo, or {hook}=null",
        )
    if algo.use_kl_loss and algo.kl_loss_coef != 0:
        yield Problem(
            ctx.latest(hook, scope.cur("algorithm.kl_loss_coef")),
            f"kl_in_reward loads the reference with --kl-coef {algo.kl_in_reward.coef}, and slime refuses "
            f"it next to a non-zero --kl-loss-coef {algo.kl_loss_coef} (one KL term: reward or loss)",
            fix=f"set {scope.cur('algorithm.kl_loss_coef')}=0, or {hook}=null",
        )


@per_scope
def token_budget_fits_one_call(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """A sample is split over the CP ranks, so one micro-batch holds max_tokens_per_gpu × CP of it.

    slime packs micro-batches up to that budget, but a longer sample is trained alone in an over-budget
    micro-batch (slime/utils/dp_schedule.py) rather than rejected, so this is a memory warning: when even
    one model call may exceed the budget, the budget no longer bounds activation memory.
    """
    cur, hw = scope.curriculum, scope.hardware
    if cur is None or not hw.dynamic_batch or hw.max_tokens_per_gpu is None:
        return
    budget = hw.max_tokens_per_gpu * hw.context_parallel
    if budget >= cur.rollout_max_response_len:
        return
    need = -(-cur.rollout_max_response_len // hw.context_parallel)
    yield Problem(
        scope.hw("max_tokens_per_gpu"),
        f"max_tokens_per_gpu {hw.max_tokens_per_gpu} × CP {hw.context_parallel} = {budget} tokens, "
        f"but one model call may return {cur.rollout_max_response_len} tokens: longer samples are "
        "trained alone in over-budget micro-batches (memory follows the longest episode, not the budget)",
        fix=f"raise {scope.hw('max_tokens_per_gpu')} to >= {need} or context_parallel, if memory allows "
        "(T3RL stage 1 runs 2048 × CP 1 on H200 with per-call 10000)",
        severity="warning",
    )


@per_scope
def splits_exist(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Train and eval splits must be ones the env's data preparation writes (when the env lists them)."""
    cur = scope.curriculum
    known = env_splits(ctx)
    if cur is None or known is None:
        return
    for field in ("train_split", "eval_split"):
        split = getattr(cur, field)
        if split is not None and split not in known:
            yield unprepared_split(ctx, scope.cur(field), split, known)


def unprepared_split(ctx: Context, key: str, split: str, known: list[str], what: str = "split") -> Problem:
    """`key` reads split `split`, which the env does not prepare. When the env's field that prepared it
    by default now names another, the user renamed one side: blamed on the side set last, with the
    rename undone as the fix (other stages may read the old name too)."""
    renamed = renamed_split(ctx, split)
    message = f"{what} '{split}' is not prepared by env {ctx.run.env.name}"
    if renamed is None:
        fix = split_fix(key, split, known)
        return (
            _swapped(ctx, key, message, fix)
            or _left_out_by_override(ctx, split, message, fix)
            or Problem(key, message, fix=fix)
        )
    field, now = renamed
    return Problem(
        ctx.latest(key, field),
        f"{message}: {field} names it {now} instead",
        fix=f"set {field}={split} (its name where the stages read it); or set {key}={now}",
    )


def _swapped(ctx: Context, key: str, message: str, fix: str) -> Problem | None:
    """A group option typed on the command line (`env=tau2`, `curriculum@stages.train.curriculum=tau2_sft`)
    that brought in the env or the split name, the side set last: the other side was built around the
    option it replaced, so the swap is blamed: undoing it is the first fix, `fix` (the split's) the second."""
    blamed = ctx.latest(key, "env.name")
    origin = ctx.provenance.origin(blamed)
    text = origin.chosen_on_line if origin is not None else None
    if text is None:
        return None
    other = "the stages' splits" if blamed == "env.name" else f"env {ctx.run.env.name}"
    return Problem(
        blamed,
        f"{message}: {text} swapped in an option that does not fit {other}",
        origin.chosen_by,
        f"drop {text}; or {fix}",
    )


def _left_out_by_override(ctx: Context, split: str, message: str, fix: str) -> Problem | None:
    """An env field typed on the command line (`env.data.demonstrations_split=null`, or deleted) without
    which the env prepares `split` (the field at its schema default): the override is the cause, and
    dropping it the first fix. The split's own fix (another split: tau2's test tasks) comes second."""
    for key, origin in ctx.provenance.items():
        if not key.startswith("env.") or "override `" not in origin.source:
            continue
        text = origin.source.partition("override `")[2].removesuffix("`")
        path = key.split(".")[1:]
        # the field at its schema default, else at the value the files give it (ReTool's sft_source: the
        # schema's None writes no SFT split, the experiment's file does)
        for reset in (_at_default(ctx.run.env, path), _as_in_the_files(ctx, text, path)):
            names = getattr(reset, "split_names", None)
            if callable(names) and split in names():
                return Problem(
                    key, f"{message}: `{text}` leaves it out", origin.source, f"drop `{text}`; or {fix}"
                )
    return None


_UNSET = object()


def _at_default(model: BaseModel, path: list[str], value: Any = _UNSET) -> BaseModel | None:
    """A copy of `model` whose field at `path` holds `value`, by default its schema default (None: no such
    field)."""
    field = type(model).model_fields.get(path[0])
    if field is None:
        return None
    if len(path) == 1:
        new = field.get_default(call_default_factory=True) if value is _UNSET else value
    else:
        inner = getattr(model, path[0])
        new = _at_default(inner, path[1:], value) if isinstance(inner, BaseModel) else None
        if new is None:
            return None
    return model.model_copy(update={path[0]: new})


def _as_in_the_files(ctx: Context, text: str, path: list[str]) -> BaseModel | None:
    """The env with the field at `path` as the config without override `text` has it (None: it has none,
    or that config does not compose). Only asked of a refusal."""
    from launch.checks.undo import value_without  # lazy: composes again, only to place a refusal's blame

    before = value_without(text, command_line(ctx), ctx.config_dirs, ".".join(["env", *path]))
    return None if before is None else _at_default(ctx.run.env, path, before)


def command_line(ctx: Context) -> list[str]:
    """The command line's overrides as far as the provenance holds them: the group choices typed (an
    experiment, `model=…`), then the key overrides in the order they were applied."""
    chosen, keys = [], []
    for _, origin in ctx.provenance.items():
        if origin.chosen_on_line is not None:
            chosen.append(origin.chosen_on_line.strip("`"))
        if origin.source.startswith("override `"):
            keys.append((origin.order, origin.source.removeprefix("override `").removesuffix("`")))
    return [*dict.fromkeys(chosen), *dict.fromkeys(text for _, text in sorted(keys))]


def split_names_distinct(ctx: Context) -> Iterator[Problem]:
    """Each split an env prepares is its own file `<split>.jsonl`: two of its split-name fields naming
    one split would write both into that file (the second overwriting the first)."""
    names = getattr(ctx.run.env, "split_names", None)
    written = names() if callable(names) else []
    fields = _split_fields(ctx.run.env, "env")
    for name in sorted({n for n in written if written.count(n) > 1}):
        keys = [k for k, (value, _) in fields.items() if value == name]
        if len(keys) < 2:
            continue
        blamed = ctx.latest(*keys)
        default = fields[blamed][1]
        free = default if isinstance(default, str) and default not in written else f"{name}_2"
        yield Problem(
            blamed,
            f"{' and '.join(keys)} both name split '{name}': prepare_data writes both into {name}.jsonl",
            fix=f"set {blamed}={free}",
        )


def renamed_split(ctx: Context, split: str) -> tuple[str, str] | None:
    """(key, its name now) of the env's split-name field whose default is `split` and that now names
    another: the split a curriculum or eval reads under its old name."""
    for key, (value, default) in _split_fields(ctx.run.env, "env").items():
        if default == split and value != split:
            return key, value
    return None


def _split_fields(node: Any, prefix: str) -> dict[str, tuple[str, Any]]:
    """Key → (value, schema default) of every field under `node` that names a prepared split (`*_split`)."""
    found: dict[str, tuple[str, Any]] = {}
    for name, field in type(node).model_fields.items():
        value = getattr(node, name)
        if name.endswith("_split") and isinstance(value, str):
            found[f"{prefix}.{name}"] = (value, field.default)
        elif isinstance(value, BaseModel):
            found |= _split_fields(value, f"{prefix}.{name}")
    return found


def _pick(scope: Scope, ctx: Context, field: str, options: list[int], why: str) -> str:
    """`set <curriculum field>=V (one of …: why)`, V one with which the scope validates."""
    value = first_valid(scope, ctx, "curriculum", field, options)
    return f"set {scope.cur(field)}={value} (one of {_listed(options)}: {why})"


def _data_parallel_fix(scope: Scope, ctx: Context, gbs: int, dp: int) -> str:
    """A global batch that splits over the data-parallel ranks, and the layouts under which this one does."""
    cur = scope.curriculum
    assert cur is not None
    total = _samples(scope)
    batches = [v for v in fitting(total, 1) if v % dp == 0]
    layouts: list[tuple[str, list[int]]] = []
    for field in ("tensor_parallel", "gpus_per_node", "nodes"):
        ok = _layout_values(scope, ctx, field, gbs)
        if ok:
            layouts.append((scope.hw(field), ok))
    listed = ", ".join(f"{key} {' or '.join(map(str, sorted(ok)))}" for key, ok in layouts)
    working = f"layouts under which {gbs} splits: {listed}" if layouts else ""
    if batches and cur.num_steps_per_rollout is None:
        value = first_valid(scope, ctx, "curriculum", "global_batch_size", batches)
        head = (
            f"set {scope.cur('global_batch_size')}={value} (a multiple of {dp} dividing "
            f"{counted(total, 'sample')})"
        )
        return f"{head}; {working}" if working else head
    if layouts:
        key, ok = layouts[0]
        why = f"no global batch that is a multiple of {dp} divides {counted(total, 'sample')}"
        return f"set {key}={ok[0]} ({why}; {working})"
    return f"use a global batch that is a multiple of {dp} (none divides {counted(total, 'sample')})"


# The hardware fields that decide the data-parallel ranks (world / (TP × PP × CP)).
_LAYOUT = ("nodes", "gpus_per_node", "tensor_parallel", "pipeline_parallel", "context_parallel")


def _layout_values(scope: Scope, ctx: Context, field: str, gbs: int) -> list[int]:
    """Up to four values of the hardware `field`, nearest its own first, under which `gbs` splits over the
    data-parallel ranks and the scope's other rules pass."""
    current = getattr(scope.hardware, field)
    # searched up to 2**16 (no layout field is larger): `gpus_per_node=10**12` ran out of memory here
    searched = range(1, min(max(current, 8) * 2, _SEARCHED) + 1)
    # past every layout (`nodes=10**12`) the values nearest it mean nothing, and the largest searched met
    # the rules of the whole run next (a local Ray head's GPUs): the smallest come first
    anchor = current if current <= _SEARCHED else 1
    values = sorted((v for v in searched if v != current), key=lambda v: (abs(v - anchor), -v))
    ok = (v for v in values if _dp_ok(scope, field, v, gbs) and passes(scope, ctx, "hardware", field, v))
    return list(islice(ok, 4))


_SEARCHED = 2**16


def _dp_ok(scope: Scope, field: str, value: int, gbs: int) -> bool:
    hw = scope.hardware.model_copy(update={field: value})
    world = hw.nodes * hw.gpus_per_node
    mp = hw.tensor_parallel * hw.pipeline_parallel * hw.context_parallel
    return world % mp == 0 and gbs % (world // mp) == 0


def env_splits(ctx: Context) -> list[str] | None:
    """Split names the env's prepare step writes, when its config class declares them (`split_names()`)."""
    split_names = getattr(ctx.run.env, "split_names", None)
    return sorted(split_names()) if callable(split_names) else None


def split_fix(key: str, split: str, known: list[str]) -> str:
    guess = did_you_mean(split, known)
    return f"did you mean {key}={guess}?" if guess else f"use one of {', '.join(known)}"


RULES = (
    steps_per_rollout_defined,
    rollout_fills_whole_steps,
    global_batch_splits_over_data_parallel,
    over_sampling_covers_batch,
    schedule_length_set,
    eval_interval_needs_eval_split,
    sft_mode_consistent,
    group_filter_needs_groups,
    kl_coef_needs_kl_loss,
    kl_in_reward_has_a_reference,
    token_budget_fits_one_call,
    splits_exist,
)
# Not per scope: once for the run's env.
NAME_RULES = (split_names_distinct,)
