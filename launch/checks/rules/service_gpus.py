"""Managed services' GPUs against the GPUs of the stages they run with, on the node that runs the stage.

A service (t3rl_core.services) starts on the machine that runs its stage's script, which is also a node
of the stage's job: the local executor's Ray head, a Slurm job's first node. On that node:

- a train stage's Ray claims `gpus_per_node` training GPUs (colocated SGLang engines share them) plus
  its share of any separate rollout GPUs, and Ray numbers them from 0 (`ray start --num-gpus N` hands
  out ids 0..N-1), so they are ids 0..N-1 (a `rollout_only` debug stage: its rollout GPUs alone; a
  `train_only` one: its training GPUs alone);
- an eval stage that serves its checkpoint itself starts SGLang with `eval.server.tp` ranks, which
  SGLang places from id 0;
- a service sees the ids in its `gpus` (CUDA_VISIBLE_DEVICES), or, with none, the stage's own GPUs
  from id 0, where SGLang puts its tp ranks.

A service cannot be placed on another node (the schema has no such field): to serve it elsewhere, drop
the service and point the env at that server's URL.
"""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context, Scope
from launch.checks.rules.layouts import passes
from launch.checks.rules.resources import node_gpus
from launch.config.errors import Problem
from launch.config.model_size import data_parallel, server_tp
from launch.config.overlay import overlay
from launch.config.schema import EvalStage, ServiceConfig, TrainStage
from t3rl_core.eval.config import EvalConfig
from t3rl_core.records import Record


class Occupant(Record):
    """What a stage itself runs on the service's node."""

    stage: str
    what: str
    used: int  # GPU ids 0..used-1
    have: int  # GPUs of the node
    scope: Scope | None  # the train stage's topology (None for an eval stage)


def _train_occupant(scope: Scope, stage: TrainStage) -> Occupant:
    hw = scope.hardware
    cur = scope.curriculum
    if stage.debug == "rollout_only":  # slime runs only the rollout engines, on the rollout GPUs
        engines = scope.world_size if hw.colocate else (hw.rollout_gpus or scope.world_size)
        used = min(engines, node_gpus(hw))
        return Occupant(
            scope.stage or "train", f"{used} rollout GPUs (rollout_only)", used, node_gpus(hw), None
        )
    separate = 0 if hw.colocate or cur is None or cur.mode == "sft" or stage.debug else scope.rollout_gpus
    per_node = -(-separate // hw.nodes)
    what = f"{hw.gpus_per_node} training GPUs" + (
        f" + {per_node} rollout GPUs" if per_node else ", SGLang engines colocated"
    )
    return Occupant(scope.stage or "train", what, hw.gpus_per_node + per_node, node_gpus(hw), scope)


def _eval_occupant(name: str, stage: EvalStage, ctx: Context) -> Occupant:
    hw = ctx.run.hardware
    try:
        config = EvalConfig.model_validate(overlay(ctx.run.eval.model_dump(), stage.eval))
    except ValueError:  # reported by eval_settings_valid
        config = ctx.run.eval
    serves_itself = config.engine.name == "sglang" and getattr(config.engine, "url", None) is None
    tp = server_tp(ctx.run.model.architecture, hw, config.server.tp)
    used = tp * data_parallel(config.server.extra_args) if serves_itself else 0
    return Occupant(name, f"its SGLang server's {used} GPU(s)", used, node_gpus(hw), None)


def _occupants(ctx: Context, service: ServiceConfig) -> list[Occupant]:
    scopes = {scope.stage: scope for scope in ctx.scopes}
    found = []
    for name, stage in ctx.run.stages.items():
        if not service.serves(name, stage.kind):
            continue
        if isinstance(stage, TrainStage) and name in scopes:
            found.append(_train_occupant(scopes[name], stage))
        elif isinstance(stage, EvalStage):
            found.append(_eval_occupant(name, stage, ctx))
    return found


def _ids(first: int, count: int) -> str:
    return "[" + ",".join(str(i) for i in range(first, first + count)) + "]"


def _span(used: int) -> str:
    return "GPU 0" if used == 1 else f"GPUs 0-{used - 1}"


def services_leave_stage_gpus_free(ctx: Context) -> Iterator[Problem]:
    """Each service's GPUs are GPUs its stages do not use, and the node has enough for both."""
    taken: dict[str, list[tuple[str, set[int]]]] = {}  # stage → (service, its ids) seen so far
    for name, service in ctx.run.services.items():
        key = f"services.{name}"
        if service.kind == "command" and not service.gpus:
            continue  # a CPU server: no GPU to share
        occupants = _occupants(ctx, service)
        if not occupants:
            continue
        ids = set(service.gpus) if service.gpus else set(range(service.tp))
        worst = max(occupants, key=lambda o: (o.used, -o.have))
        have = min(o.have for o in occupants)
        given = f"GPUs {sorted(ids)}" if service.gpus else f"no `gpus` (GPUs 0-{service.tp - 1} of the stage)"
        gpus_key = ctx.latest(f"{key}.gpus", f"{key}.tp", f"{key}.model_path")
        if worst.used + service.tp > have:
            yield _oversubscribed(ctx, key, name, service, worst, have)
            continue
        clash = [o for o in occupants if ids & set(range(o.used))]
        if clash:
            first = clash[0]
            names = ", ".join(o.stage for o in clash)
            stages = f"stages {names} use" if len(clash) > 1 else f"stage {names} uses"
            yield Problem(
                gpus_key,
                f"{key} runs on {given}, but {stages} {_span(first.used)} of the node ({first.what})",
                fix=f"set {key}.gpus={_ids(worst.used, service.tp)} (the first GPUs no stage of it uses)",
            )
            continue
        shared: dict[str, list[str]] = {}  # another service on some of these GPUs → the stages
        for occupant in occupants:
            for other, other_ids in taken.get(occupant.stage, []):
                if ids & other_ids:
                    shared.setdefault(other, []).append(occupant.stage)
            taken.setdefault(occupant.stage, []).append((name, ids))
        for other, stages in shared.items():
            other_ids = set(ctx.run.services[other].gpus or range(ctx.run.services[other].tp))
            free = sorted(set(range(worst.used, have)) - other_ids)[: service.tp]
            fix = (
                f"set {key}.gpus=[{','.join(map(str, free))}]"
                if len(free) == service.tp
                else f"give services.{other} and {key} different stages ({key}.stages)"
            )
            yield Problem(
                gpus_key,
                f"{key} and services.{other} both run on GPUs {sorted(ids & other_ids)} in stage(s) "
                f"{', '.join(stages)}",
                fix=fix,
            )


def _oversubscribed(
    ctx: Context, key: str, name: str, service: ServiceConfig, worst: Occupant, have: int
) -> Problem:
    free = have - worst.used
    message = (
        f"stage {worst.stage} uses {worst.used} of a node's {have} GPUs ({worst.what}), "
        f"which leaves {free} for {key} (tp {service.tp})"
    )
    fixes = []
    if free >= 1:
        fixes.append(f"set {key}.tp={free} {key}.gpus={_ids(worst.used, free)} (the GPUs left)")
    scope = worst.scope
    if scope is not None:
        hw = scope.hardware
        room = worst.used - hw.gpus_per_node  # the stage's rollout share stays
        # node_gpus unset means "= gpus_per_node": pin it first, or training fewer GPUs shrinks the node
        pinned = scope._replace(hardware=hw.model_copy(update={"node_gpus": have}))
        smaller = [
            g
            for g in range(hw.gpus_per_node - 1, 0, -1)
            if g + room + service.tp <= have and passes(pinned, ctx, "hardware", "gpus_per_node", g)
        ]
        if smaller:
            g = smaller[0]
            pin = f"{scope.hw('node_gpus')}={have} " if hw.node_gpus is None else ""
            fixes.append(
                f"set {pin}{scope.hw('gpus_per_node')}={g} {key}.gpus={_ids(g + room, service.tp)} "
                f"(train on fewer GPUs of the node)"
            )
    if not fixes:
        fixes.append(f"serve the model elsewhere: remove {key} (~{key}) and set the env's URL key to it")
    source = ctx.latest(f"{key}.tp", f"{key}.gpus", f"{key}.model_path")
    if scope is not None:
        layout = (scope.hw("gpus_per_node"), scope.hw("node_gpus"), scope.hw("rollout_gpus"))
        source = ctx.latest(source, *layout)
    return Problem(source, message, fix="; or ".join(fixes))


RULES = (services_leave_stage_gpus_free,)
