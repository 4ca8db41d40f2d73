"""The eval settings each eval stage runs with (the root `eval` section with the stage's overrides), and
the key a person would change for one of its fields."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from launch.config.overlay import overlay
from launch.config.schema import EvalStage, RunConfig
from t3rl_core.eval.config import EvalConfig

# Effective eval configs by (run, stage), each held with its run and stage so that their ids stay
# theirs: a dozen rules ask for each stage's (~8 M instructions of a cold validate of stage2_bfcl when
# each was validated again). Both are frozen, so the config is the same whenever it is asked for.
_VALIDATED: dict[tuple[int, int], tuple[RunConfig, EvalStage, EvalConfig | None]] = {}
# More runs than a command checks at once (a fix search's candidates): the oldest are let go.
_HELD = 64


def eval_config_of(run: RunConfig, spec: EvalStage) -> EvalConfig | None:
    """The stage's effective eval config; None when its overrides do not validate (another rule says so)."""
    if not spec.eval:
        return run.eval
    key = (id(run), id(spec))
    held = _VALIDATED.get(key)
    if held is None:
        if len(_VALIDATED) >= _HELD:
            del _VALIDATED[next(iter(_VALIDATED))]
        held = _VALIDATED[key] = (run, spec, _validated(run, spec))
    return held[2]


def _validated(run: RunConfig, spec: EvalStage) -> EvalConfig | None:
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
