"""The pipeline: stage names, references to earlier stages, each stage's inputs, eval settings."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from launch.checks.context import Context
from launch.checks.rules.batch import env_splits, split_fix, unprepared_split
from launch.checks.rules.resources import node_gpus
from launch.config.compose_cache import on_search_path
from launch.config.errors import Problem, did_you_mean
from launch.config.overlay import overlay
from launch.config.schema import (
    ConvertHfToTorchDistStage,
    ConvertTorchDistToHfStage,
    EvalStage,
    PrepareDataStage,
    TrainStage,
    stage_sections,
)
from launch.config.schema_errors import numbers_misread, problems_from_validation
from launch.previous_run import PREFIX, PreviousRunError, RunStageRef, continued_checkpoint
from t3rl_core.eval.config import EvalConfig

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def stage_names_are_path_safe(ctx: Context) -> Iterator[Problem]:
    """Stage names become directory names in the run dir."""
    for name in ctx.run.stages:
        if not _NAME.match(name):
            yield Problem(
                f"stages.{name}",
                f"stage name '{name}' is not usable as a directory name",
                fix="rename the stage with letters, digits, '_', '-' and '.' only",
            )


def references_name_earlier_stages(ctx: Context) -> Iterator[Problem]:
    """init_from, source and checkpoint name an earlier stage of the kind they consume."""
    earlier: dict[str, Any] = {}
    for name, stage in ctx.run.stages.items():
        refs: list[tuple[str, str | None, type, str]] = []
        if isinstance(stage, TrainStage) and not is_run_ref(stage.init_from):
            refs.append(("init_from", stage.init_from, TrainStage, "a train stage"))
        elif isinstance(stage, ConvertTorchDistToHfStage):
            refs.append(("source", stage.source, TrainStage, "a train stage"))
        elif isinstance(stage, EvalStage):
            refs.append(
                (
                    "checkpoint",
                    stage.checkpoint,
                    ConvertTorchDistToHfStage,
                    "a convert_torch_dist_to_hf stage",
                )
            )
        for field, ref, kind, what in refs:
            if ref is None:
                continue
            key = f"stages.{name}.{field}"
            candidates = [n for n, s in earlier.items() if isinstance(s, kind)]
            if ref in earlier and isinstance(earlier[ref], kind):
                continue
            if ref in earlier:
                message = f"'{ref}' is a {earlier[ref].kind} stage, not {what}"
            elif ref in ctx.run.stages:
                message = f"'{ref}' runs after '{name}'; {field} must name an earlier stage"
            else:
                message = f"no stage named '{ref}'"
            guess = did_you_mean(ref, candidates)
            if guess:
                fix = f"did you mean {key}={guess}?"
            elif len(candidates) == 1:
                fix = f"set {key}={candidates[0]}"
            else:
                fix = (
                    f"set {key}={candidates[-1]} (one of {', '.join(candidates)})"
                    if candidates
                    else f"add {what} before '{name}'"
                )
            yield Problem(key, message, fix=fix)
        earlier[name] = stage


def stages_have_their_inputs(ctx: Context) -> Iterator[Problem]:
    """Train and eval read prepared data; a train stage from the base model needs a torch_dist conversion."""
    seen: list[Any] = []
    for name, stage in ctx.run.stages.items():
        has_data = any(isinstance(s, PrepareDataStage) for s in seen)
        if isinstance(stage, TrainStage | EvalStage) and not has_data:
            yield Problem(
                f"stages.{name}",
                f"{stage.kind} stage '{name}' reads prepared data, but no prepare_data stage runs before it",
                fix="add a stage `data: {kind: prepare_data}` first",
            )
        converted = any(isinstance(s, ConvertHfToTorchDistStage) for s in seen)
        if isinstance(stage, TrainStage) and stage.init_from is None and not converted:
            yield Problem(
                f"stages.{name}.init_from",
                f"train stage '{name}' starts from the base model, but no convert_hf_to_torch_dist stage "
                "makes its Megatron weights",
                fix=f"add `to_torch_dist: {{kind: convert_hf_to_torch_dist}}` before '{name}', "
                "or set init_from to an earlier train stage",
            )
        seen.append(stage)


def eval_settings_valid(ctx: Context) -> Iterator[Problem]:
    """The root eval section, and each eval stage's overrides of it, form a valid EvalConfig."""
    evals = [stage for stage in ctx.run.stages.values() if isinstance(stage, EvalStage)]
    # The root split matters only where a stage (or `t3rl eval`, with no stages) does not name its own.
    root_split_used = not evals or any("split" not in stage.eval for stage in evals)
    yield from _eval_problems(ctx.run.eval, "eval", ctx, check_split=root_split_used)
    if not root_split_used:
        yield from _unread_root_split(ctx)
    for name, stage in ctx.run.stages.items():
        if not isinstance(stage, EvalStage) or not stage.eval:
            continue
        merged = overlay(ctx.run.eval.model_dump(), stage.eval)
        try:
            config = EvalConfig.model_validate(merged)
        except ValidationError as error:
            yield from problems_from_validation(
                error, merged, ctx.provenance, prefix=f"stages.{name}.eval", root=ctx.data
            )
            continue
        misread = list(numbers_misread(stage.eval, config, f"stages.{name}.eval"))  # `…eval.top_k=true`
        if misread:
            from launch.config.machine_ints import misread_number_problems  # lazy: only a number misread

            under = (f"stages.{name}.eval", ctx.run.eval)
            yield from misread_number_problems(misread, ctx.provenance, ctx.data, under=under)
            continue
        yield from _eval_problems(config, f"stages.{name}.eval", ctx, stage.eval)


def _unread_root_split(ctx: Context) -> Iterator[Problem]:
    """An `eval.split` typed on the command line that no stage reads (each names its own) and the env
    never prepares: the pipeline would not notice, `t3rl eval` of this config refuses it."""
    known = env_splits(ctx)
    origin = ctx.provenance.origin("eval.split")
    split = ctx.run.eval.split
    if known is None or split in known or origin is None or not origin.source.startswith("override"):
        return
    stages = ", ".join(name for name, stage in ctx.run.stages.items() if isinstance(stage, EvalStage))
    yield Problem(
        "eval.split",
        f"eval split '{split}' is not prepared by env {ctx.run.env.name}, and no stage reads it "
        f"(the eval stages name their own: {stages}): `t3rl eval` of this config would refuse it",
        fix=f"{split_fix('eval.split', split, known)}; or set the split of the stage meant "
        f"(stages.<stage>.eval.split)",
        severity="warning",
    )


def _eval_problems(
    config: EvalConfig, prefix: str, ctx: Context, overrides: Any = None, *, check_split: bool = True
) -> Iterator[Problem]:
    def key(field: str) -> str:
        return f"{prefix}.{field}" if overrides is None or field in overrides else f"eval.{field}"

    too_big = [k for k in config.pass_k if k > config.samples]
    if too_big:
        yield Problem(
            ctx.latest(key("pass_k"), key("samples")),
            f"pass@k for k = {too_big} needs that many samples per task; samples is {config.samples}",
            fix=f"set {key('samples')}={max(too_big)}"
            + (
                f" {key('temperature')}=1.0"
                if config.temperature == 0 and config.engine.name != "reference"
                else ""
            )
            + ", or drop those k",
        )

    known = env_splits(ctx)
    if check_split and known is not None and config.split not in known:
        yield unprepared_split(ctx, key("split"), config.split, known, "eval split")


def is_run_ref(value: str | None) -> bool:
    return value is not None and value.startswith(PREFIX)


def init_from_run_usable(ctx: Context) -> Iterator[Problem]:
    """`init_from: run:<run dir>:<stage>` names a finished train stage of another run of this model."""
    for name, stage in ctx.run.stages.items():
        if not isinstance(stage, TrainStage) or not is_run_ref(stage.init_from):
            continue
        key = f"stages.{name}.init_from"
        try:
            ref = RunStageRef.parse(stage.init_from)
            assert ref is not None
            continued_checkpoint(ref, ctx.run.model.name)
        except ValueError as err:
            yield Problem(key, str(err), fix=f"e.g. {key}=run:runs/stage1_bfcl/<timestamp>:train")
        except PreviousRunError as err:
            yield Problem(key, str(err), fix=err.fix)


def debug_stages_consistent(ctx: Context) -> Iterator[Problem]:
    """A train_only stage names its saved rollouts (an earlier rollout_only stage, or a directory that
    holds rollout_data_<id>.pt for every rollout it trains on); no other stage sets rollouts_from, and
    nothing takes weights from a rollout_only stage."""
    earlier: dict[str, Any] = {}
    for name, stage in ctx.run.stages.items():
        if not isinstance(stage, TrainStage):
            earlier[name] = stage
            continue
        key = f"stages.{name}.rollouts_from"
        source = stage.rollouts_from
        savers = [n for n, s in earlier.items() if isinstance(s, TrainStage) and s.debug == "rollout_only"]
        if stage.debug != "train_only" and source is not None:
            yield Problem(
                ctx.latest(key, f"stages.{name}.debug"),
                "only a debug: train_only stage reads saved rollouts",
                fix=f"set {key}=null",
            )
        elif stage.debug == "train_only" and source is None:
            yield Problem(
                ctx.latest(key, f"stages.{name}.debug"),
                "a debug: train_only stage trains on saved rollouts but names none",
                fix=f"set {key}={savers[-1]}"
                if savers
                else f"set {key} to an earlier rollout_only stage or a directory of rollout_data_<id>.pt",
            )
        elif stage.debug == "train_only" and source is not None:
            yield from _rollouts_source_problems(ctx, name, stage.debug_num_rollout, source, earlier, savers)
        parent = earlier.get(stage.init_from or "")
        if isinstance(parent, TrainStage) and parent.debug == "rollout_only":
            yield Problem(
                f"stages.{name}.init_from",
                f"'{stage.init_from}' only generates rollouts (debug: rollout_only): it has no weights",
                fix="start from a stage that trains, or from the base model (init_from: null)",
            )
        earlier[name] = stage


def _rollouts_source_problems(
    ctx: Context, name: str, count: int, source: str, earlier: dict[str, Any], savers: list[str]
) -> Iterator[Problem]:
    """A train_only stage's saved rollouts: an earlier rollout_only stage that saves as many as it trains
    on, or a directory that holds them."""
    key = f"stages.{name}.rollouts_from"
    stage = earlier.get(source)
    if stage is not None:
        if not (isinstance(stage, TrainStage) and stage.debug == "rollout_only"):
            # a rollout_only stage turned into another is its debug key's change
            blamed = ctx.latest(key, f"stages.{source}.debug") if isinstance(stage, TrainStage) else key
            fix = (
                f"set {blamed}=rollout_only"
                if blamed != key
                else f"set {key}={savers[-1]}"
                if savers
                else "name a rollout_only stage"
            )
            yield Problem(blamed, f"stage '{source}' saves no debug rollouts", fix=fix)
        elif stage.debug_num_rollout < count:
            mine, theirs = f"stages.{name}.debug_num_rollout", f"stages.{source}.debug_num_rollout"
            blamed = ctx.latest(mine, theirs, key)
            yield Problem(
                blamed,
                f"'{source}' saves {stage.debug_num_rollout} rollouts, stage {name} trains on {count}",
                fix=f"set {theirs}={count}"
                if blamed == theirs
                else f"set {mine}={stage.debug_num_rollout} (at most what '{source}' saves)",
            )
        return
    directory = Path(source).expanduser()
    names = [f"rollout_data_{i}.pt" for i in range(count)]
    missing = [name for name in names if not (directory / name).is_file()]
    if missing:
        yield Problem(
            key,
            f"'{source}' is no earlier stage, and the directory lacks {', '.join(missing[:3])}"
            + (f" (+{len(missing) - 3} more)" if len(missing) > 3 else ""),
            fix="name an earlier rollout_only stage, or a directory written by one",
        )


def stage_sections_valid(ctx: Context) -> Iterator[Problem]:
    """A train stage's env / reward overrides merge into valid sections; env.data is the run's."""
    for name, stage in ctx.run.stages.items():
        if not isinstance(stage, TrainStage) or not (stage.env or stage.reward):
            continue
        if "data" in stage.env:
            yield Problem(
                f"stages.{name}.env.data",
                "the prepared data is the run's: a stage cannot change env.data",
                fix=f"choose the stage's data with stages.{name}.curriculum.train_split",
            )
            continue
        for section in ("env", "reward"):
            if not getattr(stage, section):
                continue
            alone = stage.model_copy(update={"reward" if section == "env" else "env": {}})
            try:
                stage_sections(ctx.run, alone)
            except ValidationError as err:
                yield from _stage_section_problems(ctx, err, name, section, alone)
            except ValueError as err:
                yield Problem(
                    f"stages.{name}.{section}",
                    f"the stage's {section} override is invalid: {' '.join(str(err).splitlines()[:3])}",
                    fix=f"see conf/{section}/*.yaml for its fields",
                )


def _stage_section_problems(
    ctx: Context, error: ValidationError, stage: str, section: str, spec: TrainStage
) -> Iterator[Problem]:
    """A stage's section override that does not validate, judged as the root section it merges into
    (its field names, domains and fixes), each problem then moved under `stages.<stage>.<section>`: the
    key the user set there, blamed on the override or file that set it."""
    merged = overlay(getattr(ctx.run, section).model_dump(), getattr(spec, section))
    if section == "reward" and spec.reward.get("name", ctx.run.reward.name) != ctx.run.reward.name:
        merged = dict(spec.reward)  # another reward: the root's fields are not its own (stage_sections)
    here = f"stages.{stage}.{section}"
    key_of, quoted = rf"(?<![\w.]){section}\b", rf"'{section}(?=['.])"
    for problem in problems_from_validation(error, merged, ctx.provenance, prefix=section, root=ctx.data):
        moved = re.sub(key_of, here, problem.key, count=1)
        message = re.sub(quoted, f"'{here}", problem.message)
        fix = re.sub(key_of, here, problem.fix)
        # a key the section does not hold yet is added with '+' (Hydra's struct mode)
        fix = re.sub(rf"(?<![\w.+])({re.escape(here)}\.[\w.]+)=", lambda m: _added(ctx, m[1]), fix)
        typed = re.match(r"override `(\+[^`]*)`", ctx.provenance.source(moved))
        if typed and not re.search(r"\b[\w.]+=", fix.split("; ")[0]):
            fix = f"drop `{typed[1]}`; or {fix}"  # what the user added, undone
        yield Problem(moved, message, "", fix)


def _added(ctx: Context, key: str) -> str:
    """`key=` as an override writes it: with '+' when the config does not hold it."""
    node: Any = ctx.data
    for part in key.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return f"{key}=" if node is not None else f"+{key}="


def services_fit(ctx: Context) -> Iterator[Problem]:
    """A service names existing stages, one GPU per tensor-parallel rank on this node's GPUs, and a
    key the env has."""
    hardware = ctx.run.hardware
    for name, service in ctx.run.services.items():
        key = f"services.{name}"
        for stage in service.stages or []:
            if stage not in ctx.run.stages:
                guess = did_you_mean(stage, list(ctx.run.stages))
                yield Problem(
                    f"{key}.stages",
                    f"no stage named '{stage}'",
                    fix=f"did you mean {guess}?" if guess else f"use one of {', '.join(ctx.run.stages)}",
                )
        if service.kind == "sglang" and service.gpus and len(service.gpus) != service.tp:
            yield Problem(
                f"{key}.gpus",
                f"{len(service.gpus)} GPUs for a server with tp {service.tp}",
                fix=f"give {service.tp} GPU ids, or set {key}.tp={len(service.gpus)}",
            )
        have = node_gpus(hardware)
        outside = [gpu for gpu in service.gpus if not 0 <= gpu < have]
        if outside:
            yield Problem(
                f"{key}.gpus",
                f"GPU ids {outside} do not exist on a {have}-GPU node (hardware.node_gpus)",
                fix=f"use ids 0..{have - 1}",
            )
        if service.env_url_key is not None:
            node: Any = ctx.run.env.model_dump()
            for part in service.env_url_key.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                yield Problem(
                    f"{key}.env_url_key",
                    f"the env ({ctx.run.env.name}) has no key '{service.env_url_key}'",
                    fix=f"set {key}.env_url_key to a key of env (tau2's LLM user: user.base_url), or null",
                )


def next_experiment_exists(ctx: Context) -> Iterator[Problem]:
    """next_experiment names an experiment on the search path."""
    name = ctx.run.next_experiment
    if name is None:
        return

    if on_search_path(f"experiment/{name}", ctx.config_dirs):
        return  # found without importing Hydra; otherwise Hydra's listing decides and suggests
    # lazy: Hydra lists the options, only when the experiment is not found
    from launch.config.compose import group_options

    options = group_options("experiment", ctx.config_dirs)
    if name not in options:
        guess = did_you_mean(name, options)
        yield Problem(
            "next_experiment",
            f"no experiment '{name}'",
            fix=f"did you mean next_experiment={guess}?" if guess else f"use one of {', '.join(options)}",
        )


RULES = (
    stage_names_are_path_safe,
    references_name_earlier_stages,
    init_from_run_usable,
    stages_have_their_inputs,
    eval_settings_valid,
    debug_stages_consistent,
    stage_sections_valid,
    services_fit,
    next_experiment_exists,
)
