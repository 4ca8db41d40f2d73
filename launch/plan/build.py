"""RunConfig → Plan: every stage with its exact commands, and the runtime files they read.

Building a plan does no I/O: the run directory, working directory, interpreter and environment come
in through `PlanContext`, and the files the stages read (runtime YAMLs, eval configs) come out as
`Plan.files` for `launch.run.rundir` to write. Stage order is the config's; a stage may only use the
outputs of stages before it. Each stage kind's builder, with the commands it writes, is in
`launch.plan.builders`.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from launch.config.schema import RunConfig
from launch.plan.builders.builder import PlanBuilder
from launch.plan.builders.convert import convert_hf_to_torch_dist, convert_torch_dist_to_hf
from launch.plan.builders.evaluation import evaluate
from launch.plan.builders.prepare import prepare_data, prepare_model
from launch.plan.builders.train import train
from launch.plan.context import PlanContext
from launch.plan.ray_head import RayHead
from launch.plan.services import services_of, wrap
from launch.plan.stages import OutputRef, Stage
from t3rl_core.records import Record

# The builder of each stage kind: (builder, stage name, stage spec) → Stage.
STAGE_BUILDERS: dict[str, Callable[[PlanBuilder, str, Any], Stage]] = {
    "prepare_data": prepare_data,
    "prepare_model": prepare_model,
    "convert_hf_to_torch_dist": convert_hf_to_torch_dist,
    "train": train,
    "convert_torch_dist_to_hf": convert_torch_dist_to_hf,
    "eval": evaluate,
}


# The stores a plan's commands name entries of by what each holds (its key in its name), shared by runs:
# where a store is (another machine, the setting changed) is not part of a stage's identity, what its
# entry holds is (`Stage.fingerprint`). `paths.checkpoints_dir`: the HF -> torch_dist conversion cache.
CONTENT_STORES = ("checkpoints_dir",)


class Plan(Record):
    """The stages of one run, in order, with the files they read."""

    name: str
    run_dir: Path
    stages: tuple[Stage, ...]
    ray_head: RayHead = RayHead()
    # (name, absolute root) of each of CONTENT_STORES for this run.
    stores: tuple[tuple[str, str], ...] = ()

    @property
    def files(self) -> dict[str, str]:
        """Every config file the stages read (absolute path → content)."""
        return {path: text for stage in self.stages for path, text in stage.files.items()}

    def stage(self, name: str) -> Stage:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise KeyError(f"no stage '{name}' in the plan (stages: {', '.join(s.name for s in self.stages)})")

    def names(self) -> list[str]:
        return [s.name for s in self.stages]

    def resolve(self, ref: OutputRef) -> str:
        return self.stage(ref.stage).outputs[ref.key]

    def render_script(self) -> str:
        """plan.sh: every stage's exact commands in order, runnable by hand from any directory."""
        out = [
            "#!/usr/bin/env bash",
            f"# Plan of run '{self.name}' ({self.run_dir}), written by t3rl. Each stage's own copy is",
            "# stages/<name>/command.sh; `t3rl run --run-dir <this dir>` runs them with resume and logs.",
            "set -euo pipefail",
        ]
        for stage in self.stages:
            out += [
                "",
                f"# ---- stage {stage.name} ({stage.kind}){': ' + stage.summary if stage.summary else ''}",
            ]
            out += [f"# {note}" for note in stage.notes]
            if stage.complete_when:
                out.append("# skipped by t3rl when these exist: " + " ".join(stage.complete_when))
            body = stage.script().replace("set -euo pipefail\n", "")
            if stage.needs_ray_head:
                out.append(shlex.join(self.ray_head.start_argv(stage.gpus)))
                out.append(f"trap {shlex.quote(shlex.join(RayHead.stop_argv()))} EXIT")
            out.append("(\n" + body.rstrip("\n") + "\n)")
            if stage.needs_ray_head:
                out += [shlex.join(RayHead.stop_argv()), "trap - EXIT"]
        return "\n".join(out) + "\n"


def build_plan(run: RunConfig, ctx: PlanContext) -> Plan:
    """The plan of `run` (ConfigError when a stage cannot be built)."""
    builder = PlanBuilder(run, ctx)
    for name, spec in run.stages.items():
        builder.files = {}
        stage = STAGE_BUILDERS[spec.kind](builder, name, spec)
        stage = stage._replace(files=builder.files)
        services = services_of(run, name, spec.kind)
        builder.stages[name] = wrap(stage, services, builder.cluster_python(), str(ctx.run_dir), ctx.base_dir)
    executor = run.executor
    default = RayHead()  # the local executor's ports, for an executor that has none (dry, ray)
    head = RayHead(
        getattr(executor, "ray_port", default.port),
        getattr(executor, "dashboard_port", default.dashboard_port),
    )
    stores = tuple((key, builder.abs(getattr(run.paths, key))) for key in CONTENT_STORES)
    return Plan(run.name, ctx.run_dir, tuple(builder.stages.values()), head, stores)
