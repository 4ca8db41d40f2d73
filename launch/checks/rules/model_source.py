"""Where the run's base model comes from, before the stages that load it.

A synthetic model (`model.synthetic`: tiny_qwen3 and options built on it) is no download: a prepare_model
stage builds it at `model.hf_checkpoint`. A run whose stages load the base model (a conversion, a train
stage, an eval of the base checkpoint) with no prepare_model stage before them (`model=tiny_qwen3` under a
GPU experiment, or the stage added after them) has nothing that makes it; `t3rl run` refuses it before any
stage starts, and the download hint of a released model does not apply (its hub id names nothing). The
probe of model directories (`probes.model_dirs_required`) leaves the synthetic model to its builder; this
rule says when there is none. A directory built by an earlier run is used as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from launch.checks.context import Context
from launch.checks.model_options import model_options
from launch.config.errors import Problem
from launch.config.schema import PrepareDataStage, PrepareModelStage
from t3rl_core.home_paths import expand_home


def synthetic_model_is_built_first(ctx: Context) -> Iterator[Problem]:
    """A synthetic base model is built by a prepare_model stage before the first stage that loads it,
    unless it is built here already."""
    model = ctx.run.model
    if not model.synthetic or (Path(expand_home(model.hf_checkpoint)) / "config.json").is_file():
        return
    loading: list[str] = []
    for name, stage in ctx.run.stages.items():
        if isinstance(stage, PrepareModelStage):
            break
        if not isinstance(stage, PrepareDataStage):
            loading.append(name)
    if not loading:
        return
    released = sorted(
        name
        for name, option in model_options(ctx.config_dirs).items()
        if not option.synthetic and option.family == model.family
    )
    instead = f"set model={released[0]} (a released {model.family} model); or " if released else ""
    yield Problem(
        "model.name",
        f"{model.name} is built offline (model.synthetic) by a prepare_model stage, and this run has none "
        f"before stage(s) {', '.join(loading)}, which load it from {model.hf_checkpoint} (no config.json "
        "there yet): t3rl run refuses it before any stage starts, and it cannot be downloaded",
        fix=f"{instead}build it first with a run that has a prepare_model stage (t3rl run "
        "+experiment=quickstart builds it there)",
        severity="warning",
    )


RULES = (synthetic_model_is_built_first,)
