"""The seeds slime's processes derive from `seed`, each inside numpy's seed domain [0, 2**32).

`seed` itself is declared in that domain (`t3rl_core.fields.Seed`), but a train job seeds each process
with an offset added (slime at the pinned commit):

- Megatron's `_set_random_seed` (slime/backends/megatron_utils/initialize.py): seed + 100 × the
  pipeline rank, + 10 × the data-parallel rank under `--data-parallel-random-init`;
- slime's SGLang engines (`_compute_server_args`): `random_seed` = seed + engine rank ×
  `--num-gpus-per-node`.

Both hand it to `np.random.seed`, which raises for 2**32 and above: the train stage would stop at
start-up, after the data and the conversions ran. The offsets are declared here, per process kind.
"""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context, Scope
from launch.config.argv_tokens import argv_flags
from launch.config.errors import Problem
from launch.config.schema import TrainStage

SEEDS = 2**32  # np.random.seed takes [0, 2**32)
DP_RANDOM_INIT = "--data-parallel-random-init"


def _offsets(scope: Scope, ctx: Context) -> Iterator[tuple[int, str]]:
    """(the largest offset a process kind adds to `seed` in this train stage, which process it is)."""
    hw = scope.hardware
    passed = {flag for _, flag, _ in argv_flags(ctx.run.model.architecture.extra_args)}
    megatron = 100 * (hw.pipeline_parallel - 1)
    why = f"Megatron seeds pipeline rank {hw.pipeline_parallel - 1} with seed + 100 × that rank"
    if DP_RANDOM_INIT in passed and scope.data_parallel > 1:
        megatron += 10 * (scope.data_parallel - 1)
        why += f", + 10 × data-parallel rank {scope.data_parallel - 1} ({DP_RANDOM_INIT})"
    yield megatron, why
    stage = ctx.run.stages.get(scope.stage or "")
    rollouts = isinstance(stage, TrainStage) and stage.curriculum.mode == "rl" and stage.debug != "train_only"
    engines = scope.rollout_gpus // hw.gpus_per_engine if rollouts else 0
    if engines > 1:
        yield (
            (engines - 1) * hw.gpus_per_node,
            f"slime seeds SGLang engine {engines - 1} with seed + that rank × --num-gpus-per-node "
            f"{hw.gpus_per_node}",
        )


def derived_seeds_in_domain(ctx: Context) -> Iterator[Problem]:
    """Every seed a train stage's processes derive from `seed` is one numpy accepts."""
    found = [
        (offset, why, scope.stage)
        for scope in ctx.scopes
        if scope.stage is not None
        for offset, why in _offsets(scope, ctx)
    ]
    if not found:
        return
    offset, why, stage = max(found, key=lambda f: f[0])
    if ctx.run.seed + offset < SEEDS:
        return
    yield Problem(
        "seed",
        f"seed {ctx.run.seed}: {why} (stage {stage}), {ctx.run.seed + offset}, and np.random.seed refuses "
        f"seeds from 2**32 = {SEEDS} on: the stage would stop at start-up",
        fix=f"set seed={SEEDS - 1 - offset}",
    )


RULES = (derived_seeds_in_domain,)
