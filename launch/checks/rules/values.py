"""Values a late stage consumes, checked now against what the env, the eval and the stages offer; and
settings slime or the eval would take without complaint but that make the experiment meaningless."""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context, Scope, per_scope
from launch.checks.eval_configs import eval_configs, eval_key
from launch.checks.sglang_names import greedy
from launch.config.algorithms import ESTIMATORS, filter_declaration
from launch.config.argv_tokens import argv_flags
from launch.config.errors import Problem, did_you_mean
from launch.config.schema import EvalStage
from t3rl_core.counts import counted
from t3rl_core.eval.config import EvalConfig

# Numbers of an eval summary.json block (t3rl_core.eval.metrics._block) besides pass@k / pass^k.
_BLOCK_METRICS = ("tasks", "episodes", "accuracy", "progress", "reward")
# Top-level numbers of summary.json (t3rl_core.eval.runner._summary).
_SUMMARY_NUMBERS = (
    "samples",
    "temperature",
    "max_new_tokens",
    "max_num_steps",
    "wall_time_s",
    "mean_response_tokens",
)


def eval_categories_exist(ctx: Context) -> Iterator[Problem]:
    """eval.categories keeps rows by data_source: a name the env's rows never carry keeps nothing."""
    known = ctx.run.env.eval_categories()
    if known is None:
        return
    for stage, config, overrides in eval_configs(ctx.run):
        unknown = [c for c in config.categories or () if c not in known]
        if not unknown:
            continue
        key = eval_key(stage, overrides, "categories")
        kept = [c for c in config.categories or () if c in known]
        guesses = [did_you_mean(c, known) for c in unknown]
        fixed = [g for g in guesses if g] if all(guesses) else []
        value = kept + [g for g in fixed if g not in kept] if fixed else kept or known
        fix = f"set {key}=[{','.join(value)}]"
        fix += (
            f" (did you mean {', '.join(fixed)}?)"
            if fixed
            else f" (env {ctx.run.env.name} has {', '.join(known)})"
        )
        yield Problem(
            key,
            f"categories {unknown} are not data sources of env {ctx.run.env.name}: "
            "the eval would keep no rows of them",
            fix=fix,
        )


def objective_names_an_eval_metric(ctx: Context) -> Iterator[Problem]:
    """An hparams search reads objective.metric from objective.stage's summary.json after every trial."""
    objective = ctx.run.objective
    if objective is None:
        return
    evals = {n: s for n, s in ctx.run.stages.items() if isinstance(s, EvalStage)}
    if not evals:
        yield Problem(
            "objective",
            "an hparams search scores trials by an eval stage's summary.json, but the experiment has none",
            fix="use an experiment with an eval stage, e.g. +experiment=stage1_bfcl",
        )
        return
    stage = objective.stage or list(evals)[-1]
    if stage not in evals:
        guess = did_you_mean(stage, list(evals)) or list(evals)[-1]
        what = (
            f"'{stage}' is a {ctx.run.stages[stage].kind} stage"
            if stage in ctx.run.stages
            else f"no stage '{stage}'"
        )
        yield Problem(
            "objective.stage",
            f"{what}; the objective is read from an eval stage's summary.json",
            fix=f"set objective.stage={guess} (eval stages: {', '.join(evals)})",
        )
        return
    config = next(c for n, c, _ in eval_configs(ctx.run) if n == stage)
    known = _summary_metrics(config, ctx.run.env.eval_categories())
    metric = objective.metric
    if metric in known or (metric.startswith("categories.") and ctx.run.env.eval_categories() is None):
        return
    from launch.checks.search_direction import echoes_a_setting  # lazy: only a metric summary.json lacks

    # a number the config fixes is no objective (every trial scores it alike): never the guess
    guess = did_you_mean(metric, [k for k in known if not echoes_a_setting(k)]) or "overall.accuracy"
    yield Problem(
        "objective.metric",
        f"summary.json of stage '{stage}' has no number '{metric}'",
        fix=f"set objective.metric={guess} (e.g. overall.accuracy, overall.reward, overall.pass@k for k in "
        f"{list(config.pass_k)})",
    )


def _summary_metrics(config: EvalConfig, categories: list[str] | None) -> list[str]:
    block = [*_BLOCK_METRICS, *(f"pass@{k}" for k in config.pass_k), *(f"pass^{k}" for k in config.pass_k)]
    names = [*_SUMMARY_NUMBERS, *(f"overall.{m}" for m in block)]
    kept = [c for c in categories or () if config.categories is None or c in config.categories]
    return names + [f"categories.{c}.{m}" for c in kept for m in block]


def tau2_splits_exist(ctx: Context) -> Iterator[Problem]:
    """tau2 reads each split from every selected domain; not every domain ships every split."""
    missing = getattr(ctx.run.env, "missing_splits", None)
    if not callable(missing):
        return
    for split, domains in missing().items():
        field = "demonstrations_split" if split == ctx.run.env.data.demonstrations_split else "splits"  # type: ignore[attr-defined]
        key = ctx.latest(f"env.data.{field}", "env.domains")
        fix = (
            "set env.data.splits=[train,test]"
            if field == "splits"
            else "set env.data.demonstrations_split=train"
        )
        yield Problem(
            key,
            f"tau2 split '{split}' does not exist for domain(s) {domains} "
            "(tau2 ships small/full for telecom only)",
            fix=fix,
        )


def eval_stage_evaluates_its_checkpoint(ctx: Context) -> Iterator[Problem]:
    """An eval stage naming a checkpoint must serve it: the scripted reference policy would report numbers
    of another model under the checkpoint's name (an error); a fixed URL may (a warning)."""
    for name, config, overrides in eval_configs(ctx.run):
        stage = ctx.run.stages.get(name) if name else None
        if not isinstance(stage, EvalStage) or stage.checkpoint is None:
            continue
        engine = config.engine
        if engine.name == "reference":
            key = eval_key(name, overrides, "engine.name")
            yield Problem(
                key,
                f"eval stage '{name}' names checkpoint '{stage.checkpoint}', "
                "but the reference engine replays "
                "gold actions and never loads it",
                fix=f"set {key}=sglang",
            )
        elif getattr(engine, "url", None) is not None:
            key = eval_key(name, overrides, "engine.url")
            yield Problem(
                key,
                f"eval stage '{name}' names checkpoint '{stage.checkpoint}', but engine.url sends every "
                "request to an already running server: make sure it serves that checkpoint",
                fix=f"set {key}=null to have the stage start SGLang on the checkpoint",
                severity="warning",
            )


def repeated_samples_vary(ctx: Context) -> Iterator[Problem]:
    """pass@k over k greedy samples of a deterministic engine is pass@1 k times over."""
    if ctx.run.env.varies_between_attempts() is not None:
        return  # the env's own sampling (an LLM customer) makes greedy attempts differ
    for name, config, overrides in eval_configs(ctx.run):
        if config.samples > 1 and greedy(config.temperature) and config.engine.name in ("sglang", "hf"):
            key = ctx.latest(eval_key(name, overrides, "samples"), eval_key(name, overrides, "temperature"))
            yield Problem(
                key,
                f"{config.samples} samples per task at temperature {config.temperature:g}: greedy decoding "
                "repeats one answer, "
                "so pass@k and pass^k equal pass@1",
                fix=f"set {eval_key(name, overrides, 'temperature')}=1.0",
            )


@per_scope
def algorithm_meaningful(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Policy-gradient settings slime rejects at start-up, or that make every update zero."""
    cur = scope.curriculum
    if cur is None or cur.mode != "rl":
        return
    algo = cur.algorithm
    estimator = scope.cur("algorithm.advantage_estimator")
    declared = ESTIMATORS[algo.advantage_estimator]
    filtered = filter_declaration(cur.dynamic_sampling_filter) if cur.dynamic_sampling_filter else None
    baseline = declared.group_baseline and not (filtered is not None and filtered.sets_advantages)
    if baseline and cur.n_samples_per_prompt == 1:
        key = ctx.latest(scope.cur("n_samples_per_prompt"), estimator)
        without = [n for n, e in ESTIMATORS.items() if not e.group_baseline and e.unsupported is None]
        alternative = f"; or {estimator}={without[0]}" if without else ""
        yield Problem(
            key,
            f"{algo.advantage_estimator} with n_samples_per_prompt 1: each advantage is the reward minus "
            "the mean of a group of one, always 0, so training never updates the policy",
            fix=f"set {scope.cur('n_samples_per_prompt')}=8{alternative}",
        )
    passed = [flag for _, flag, _ in argv_flags(ctx.run.model.architecture.extra_args)]
    if declared.unsupported is not None and declared.unless_passed not in passed:
        supported = [n for n, e in ESTIMATORS.items() if e.unsupported is None]
        also = f" (or pass {declared.unless_passed} in model.architecture.extra_args)"
        fix = f"set {estimator}={supported[0]}" + (also if declared.unless_passed else "")
        yield Problem(estimator, declared.unsupported, fix=fix)


@per_scope
def lengths_consistent(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """An episode cap below one model call's length cuts every call short."""
    cur = scope.curriculum
    if cur is None:
        return
    if cur.max_response_len is not None and cur.max_response_len < cur.rollout_max_response_len:
        # the loop gives a call at most what is left of the episode's response budget
        key = ctx.latest(scope.cur("max_response_len"), scope.cur("rollout_max_response_len"))
        yield Problem(
            key,
            f"max_response_len {cur.max_response_len} < rollout_max_response_len "
            f"{cur.rollout_max_response_len}: the episode's response budget is below one model call's, so "
            "the first call is cut at it and the episode ends truncated",
            fix=f"set {scope.cur('max_response_len')}={cur.rollout_max_response_len}, or null",
        )
    if cur.max_context_len is None:
        return
    if cur.max_context_len <= cur.rollout_max_response_len:
        key = ctx.latest(scope.cur("max_context_len"), scope.cur("rollout_max_response_len"))
        yield Problem(
            key,
            f"max_context_len {cur.max_context_len} <= "
            f"rollout_max_response_len {cur.rollout_max_response_len}: "
            "the prompt alone leaves less than one model call's tokens (slime needs prompt < context)",
            fix=f"set {scope.cur('max_context_len')}={cur.rollout_max_response_len * 2}, or null",
        )


@per_scope
def in_loop_eval_happens(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """An eval interval beyond the last rollout never evaluates (warning: slime evaluates before training)."""
    cur = scope.curriculum
    if cur is None or cur.eval_interval is None or cur.num_rollout is None:
        return
    if cur.eval_interval > cur.num_rollout:
        yield Problem(
            scope.cur("eval_interval"),
            f"eval_interval {cur.eval_interval} > num_rollout {cur.num_rollout}: "
            "no in-loop eval after the first",
            fix=f"set {scope.cur('eval_interval')}={max(1, cur.num_rollout // 4)}",
            severity="warning",
        )


@per_scope
def expert_tp_needs_experts(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Megatron: expert tensor parallelism applies to MoE layers only."""
    if scope.hardware.expert_tensor_parallel > 1 and ctx.run.model.architecture.moe is None:
        key = scope.hw("expert_tensor_parallel")
        yield Problem(
            key,
            f"expert_tensor_parallel {scope.hardware.expert_tensor_parallel} on a dense model "
            f"({ctx.run.model.name} has no experts)",
            fix=f"set {key}=1",
        )


def _nearest_multiple(value: int, of: int) -> int:
    """The multiple of `of` nearest `value`, at least `of` (the smaller on a tie)."""
    return max(of, min((value // of) * of, (value // of + 1) * of, key=lambda m: abs(m - value)))


def architecture_consistent(ctx: Context) -> Iterator[Problem]:
    """Megatron's own asserts on the architecture: query groups, head size, router top-k."""
    arch = ctx.run.model.architecture
    prefix = "model.architecture"
    groups = arch.num_query_groups
    if groups is not None and arch.num_attention_heads % groups:
        heads_key, groups_key = f"{prefix}.num_attention_heads", f"{prefix}.num_query_groups"
        if ctx.latest(groups_key, heads_key) == heads_key:  # the heads typed over the file's groups
            fix = f"set {heads_key}={_nearest_multiple(arch.num_attention_heads, groups)}"
        else:
            options = [g for g in range(1, arch.num_attention_heads + 1) if arch.num_attention_heads % g == 0]
            fix = f"set {groups_key}={min(options, key=lambda g: abs(g - groups))}"
        yield Problem(
            ctx.latest(groups_key, heads_key),
            f"{arch.num_attention_heads} attention heads do not split into {groups} query groups (Megatron)",
            fix=fix,
        )
    if arch.kv_channels is None and arch.mla is None and arch.hidden_size % arch.num_attention_heads:
        yield Problem(
            f"{prefix}.kv_channels",
            f"hidden_size {arch.hidden_size} is not divisible by "
            f"{counted(arch.num_attention_heads, 'head')} and "
            "kv_channels (the head size) is not given (Megatron)",
            fix=f"set {prefix}.kv_channels={max(1, arch.hidden_size // arch.num_attention_heads)}",
        )
    moe = arch.moe
    if moe is not None and moe.moe_router_topk > moe.num_experts:
        key = ctx.latest(f"{prefix}.moe.moe_router_topk", f"{prefix}.moe.num_experts")
        yield Problem(
            key,
            f"moe_router_topk {moe.moe_router_topk} > num_experts {moe.num_experts}",
            fix=f"set {prefix}.moe.moe_router_topk={moe.num_experts}",
        )


RULES = (
    eval_categories_exist,
    objective_names_an_eval_metric,
    tau2_splits_exist,
    eval_stage_evaluates_its_checkpoint,
    repeated_samples_vary,
    algorithm_meaningful,
    lengths_consistent,
    in_loop_eval_happens,
    expert_tp_needs_experts,
    architecture_consistent,
)
