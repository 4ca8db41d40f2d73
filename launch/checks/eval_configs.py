"""The eval settings each eval stage runs with (the root `eval` section with the stage's overrides), and
the key a person would change for one of its fields."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from launch.config.overlay import overlay
from launch.config.schema import EvalStage, RunConfig
from t3rl_core.eval.config import EvalConfig


def eval_config_of(run: RunConfig, spec: EvalStage) -> EvalConfig | None:
    """The stage's effective eval config; None when its overrides do not validate (another rule says so)."""
    if not spec.eval:
        return run.eval
    try:
        return EvalConfig.model_validate(overlay(run.eval.model_dump(), spec.eval))
    except ValidationError:
        return None


def eval_configs(run: RunConfig) -> Iterator[tuple[str | None, EvalConfig, Mapping[str, Any]]]:
    """(eval stage name, or None for the root section of a run without eval stages; its effective config;
    the stage's overrides) for every eval stage whose overrides validate."""
    evals = [(n, s) for n, s in run.stages.items() if isinstance(s, EvalStage)]
    if not evals:
        yield None, run.eval, {}
    for name, stage in evals:
        config = eval_config_of(run, stage)
        if config is not None:
            yield name, config, stage.eval


def eval_key(stage: str | None, overrides: Mapping[str, Any], field: str) -> str:
    """`stages.<stage>.eval.<field>` when the stage overrides the field's section, else `eval.<field>`."""
    top = field.split(".")[0]
    return f"stages.{stage}.eval.{field}" if stage and top in overrides else f"eval.{field}"
