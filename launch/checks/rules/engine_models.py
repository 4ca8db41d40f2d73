"""The model an HF eval engine loads (`eval.engine.model_path`, a local directory) is there.

The HF engine loads the directory where the eval stage runs. When that is here, a directory without a
config.json fails the stage at its first episode, after the stages before it ran; `t3rl run` refuses
it before any stage starts (the stage `requires` it), and validate warns, as for a base model not
downloaded yet (it may be by then).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from launch.checks.context import Context
from launch.checks.eval_configs import eval_configs, eval_key
from launch.config.errors import Problem


def hf_engine_models_present(ctx: Context) -> Iterator[Problem]:
    """An HF engine's model_path of an eval stage run here holds a config.json."""
    if not ctx.stages_run_here:
        return
    for stage, config, overrides in eval_configs(ctx.run):
        path = getattr(config.engine, "model_path", None)
        if config.engine.name != "hf" or not path or (Path(path).expanduser() / "config.json").is_file():
            continue
        key = eval_key(stage, overrides, "engine.model_path")
        yield Problem(
            key,
            f"{path} holds no config.json here: the eval stage's HF engine would fail to load it "
            "(t3rl run refuses it before any stage starts)",
            fix=f"set {key}=null (the run's own model), or download the model to {path}",
            severity="warning",
        )


RULES = (hf_engine_models_present,)
