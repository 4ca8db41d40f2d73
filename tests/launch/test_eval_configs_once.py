"""A stage's effective eval config (`launch.checks.eval_configs.eval_config_of`) is validated once per run
and stage, however many rules ask for it, and is the one a fresh validation gives; another run (a fix
search's candidate, sharing the stage) gets its own."""

from __future__ import annotations

import pytest

from launch.checks import eval_configs
from launch.config.overlay import overlay
from launch.config.resolved import composed_plain
from launch.config.schema import EvalStage, RunConfig
from t3rl_core.eval.config import EvalConfig
from t3rl_core.home_paths import expand_home
from tests.support.recorded_calls import calls_of


def test_each_stage_s_eval_config_is_validated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    run = RunConfig.model_validate(expand_home(composed_plain(["+experiment=stage2_bfcl"]).data))
    stages = {name: s for name, s in run.stages.items() if isinstance(s, EvalStage) and s.eval}
    assert stages  # stage2_bfcl's eval stage overrides the root eval section
    original = EvalConfig.model_validate
    validated = calls_of(monkeypatch, EvalConfig, "model_validate")
    for _ in range(3):
        found = {name: config for name, config, _ in eval_configs.eval_configs(run)}
    assert len(validated) == len(stages)
    for name, stage in stages.items():
        assert found[name] == original(overlay(run.eval.model_dump(), stage.eval))

    other = run.model_copy(update={"eval": run.eval.model_copy(update={"seed": run.eval.seed + 1})})
    name, stage = next(iter(stages.items()))
    assert eval_configs.eval_config_of(other, stage).seed == run.eval.seed + 1  # type: ignore[union-attr]
