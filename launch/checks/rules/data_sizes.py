"""What a stage draws from a split, against how many rows the split can hold.

Each env declares the most rows of every split it prepares when that is known without preparing data
(`EnvConfig.split_sizes()`: BFCL's id cut × categories, tau2's shipped task lists × domains). A train
stage draws rollout_batch_size prompts (over_sampling_batch_size under dynamic sampling) per rollout:
from a split with fewer rows, slime's data source repeats prompts inside one batch, and from one with
fewer than half as many it returns a short batch that breaks the batch arithmetic; with num_epoch the
run has zero rollouts. A split with no rows at all trains or scores nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context, Scope
from launch.checks.eval_configs import eval_configs, eval_key
from launch.checks.rules.layouts import scope_valid
from launch.config.errors import Problem, did_you_mean
from t3rl_core.counts import counted
from t3rl_core.records import Record


def _env_keys(ctx: Context) -> list[str]:
    """The env keys the split sizes depend on, as the config spells them, with the leaves under them
    (a split's own file under `env.data.splits`)."""
    fields = [f"env.{field}" for field in type(ctx.run.env).SIZE_FIELDS]
    under = tuple(f"{field}." for field in fields)  # one startswith a key, not one per field
    leaves = [k for k, _ in ctx.provenance.items() if k.startswith(under)]
    return [*fields, *leaves]


class _Fix(Record):
    """A fix as its assignments (none: prose) and the text that says it."""

    text: str
    assigned: tuple[str, ...] = ()


def splits_hold_what_stages_draw(ctx: Context) -> Iterator[Problem]:
    """The env's split sizes (read once: a user's file is counted) against every train and eval stage."""
    sizes = ctx.run.env.split_sizes()
    if sizes is None:
        return
    env_keys = _env_keys(ctx)
    yield from _batches_fit_train_splits(ctx, sizes, env_keys)
    yield from _eval_splits_have_rows(ctx, sizes, env_keys)


def _batches_fit_train_splits(ctx: Context, sizes: dict[str, int], env_keys: list[str]) -> Iterator[Problem]:
    """A rollout draws at most as many prompts as its train split holds, and the split is not empty.
    Stages short of rows because of one env setting get one error whose fix resizes them all."""
    by_env: dict[str, list[tuple[str, _Fix]]] = {}
    for scope in ctx.scopes:
        cur = scope.curriculum
        if cur is None or cur.train_split not in sizes:
            continue  # an unknown split is reported by the split rules
        size = sizes[cur.train_split]
        over = (cur.over_sampling_batch_size or 0) > size
        field = "over_sampling_batch_size" if over else "rollout_batch_size"
        drawn = getattr(cur, field)
        if drawn <= size:
            continue
        key = ctx.latest(scope.cur(field), scope.cur("train_split"), *env_keys)
        name = f"split {cur.train_split} of env {ctx.run.env.name}"
        other = _other_split(
            scope.cur("train_split"), cur.train_split, sizes, cur.rollout_batch_size, env_keys
        )
        if size == 0:
            message = f"{name} holds no rows: stage {scope.stage} would train on nothing"
            fix = other
        else:
            message = (
                f"{field} {drawn} > {size}: {name} holds at most {size} rows, so every rollout of stage "
                f"{scope.stage} would repeat prompts within its batch (slime refills from the next epoch, "
                "and a batch over twice the split comes back short)"
            )
            fix = _smaller_batch(scope, ctx, field, size) or other
        if key.startswith("env."):
            by_env.setdefault(key, []).append((message, fix))
        else:
            yield Problem(key, message, fix=fix.text)
    for key, found in by_env.items():
        fixes = [fix for _, fix in found]
        if len(fixes) > 1 and all(f.assigned for f in fixes):
            text = (
                f"set {' '.join(a for f in fixes for a in f.assigned)} (each stage's batch within its split)"
            )
        else:
            text = fixes[0].text
        yield Problem(key, "; ".join(message for message, _ in found), fix=text)


def _smaller_batch(scope: Scope, ctx: Context, field: str, size: int) -> _Fix | None:
    """The largest draw the split holds with the same optimizer steps per rollout, checked against every
    per-scope rule (None when there is none)."""
    cur = scope.curriculum
    assert cur is not None
    if field == "over_sampling_batch_size":
        assigned = f"{scope.cur(field)}={size}"
        return _Fix(f"set {assigned} (>= rollout_batch_size {cur.rollout_batch_size}), or null", (assigned,))
    samples = cur.rollout_batch_size * cur.n_samples_per_prompt
    steps = cur.num_steps_per_rollout or (samples // cur.global_batch_size if cur.global_batch_size else 1)
    for prompts in range(size, 0, -1):
        total = prompts * cur.n_samples_per_prompt
        if total % steps:
            continue
        update: dict[str, int] = {"rollout_batch_size": prompts}
        if cur.global_batch_size is not None:
            update["global_batch_size"] = total // steps
        if scope_valid(scope._replace(curriculum=cur.model_copy(update=update)), ctx):
            assigned = tuple(f"{scope.cur(k)}={v}" for k, v in update.items())
            why = f"at most {size} prompts, {steps} optimizer step(s) per rollout as now"
            return _Fix(f"set {' '.join(assigned)} ({why})", assigned)
    return None


def _other_split(key: str, split: str, sizes: dict[str, int], needed: int, env_keys: list[str]) -> _Fix:
    """A split of the same role (train / held out) with at least `needed` rows, the nearest name first;
    else the env settings that size the split."""
    role = ("test", "val", "unseen") if any(w in split for w in ("test", "val", "unseen")) else ("train",)
    options = [s for s, n in sizes.items() if n >= needed and s != split and any(w in s for w in role)]
    if not options:
        settings = " / ".join(env_keys) or "the env settings"
        return _Fix(
            f"change {settings} so that split {split} holds {needed} row(s), or read another split at {key}"
        )
    rows = counted(needed, "row")
    assigned = f"{key}={did_you_mean(split, options) or options[0]}"
    return _Fix(f"set {assigned} (at least {rows})", (assigned,))


def _eval_splits_have_rows(ctx: Context, sizes: dict[str, int], env_keys: list[str]) -> Iterator[Problem]:
    """An eval (stage, standalone, or a train stage's in-loop eval) scores a split with rows."""
    scored: list[tuple[str, str]] = []
    for stage, config, overrides in eval_configs(ctx.run):
        scored.append((eval_key(stage, overrides, "split"), config.split))
    for scope in ctx.scopes:
        cur = scope.curriculum
        if cur is not None and cur.eval_split is not None:
            scored.append((scope.cur("eval_split"), cur.eval_split))
    # Evals left without rows by one env setting (`env.data.val_ratio=0`) get one error whose fix moves
    # them all: a fix for the first reader alone left the others refused at the same key.
    by_key: dict[str, list[tuple[str, _Fix]]] = {}
    for key, split in scored:
        if sizes.get(split, 1) > 0:
            continue
        message = f"split {split} of env {ctx.run.env.name} holds no rows: the eval would score nothing"
        by_key.setdefault(ctx.latest(key, *env_keys), []).append(
            (message, _other_split(key, split, sizes, 1, env_keys))
        )
    for key, found in by_key.items():
        fixes = list(dict.fromkeys(fix for _, fix in found))
        if len(fixes) > 1 and all(f.assigned for f in fixes):
            assigned = " ".join(dict.fromkeys(a for f in fixes for a in f.assigned))
            text = f"set {assigned} (a split with rows for each eval)"
        else:
            text = fixes[0].text
        yield Problem(key, "; ".join(dict.fromkeys(message for message, _ in found)), fix=text)


RULES = (splits_hold_what_stages_draw,)
