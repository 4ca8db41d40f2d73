"""`t3rl validate` with no experiment says that, and only that: it also warned that the default model's
checkpoint was not downloaded, for stages that do not exist (helper-134's first-hour hunt)."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli_app import invoke, warnings_of


def test_no_experiment_is_the_one_warning(here: Path) -> None:
    result = invoke(["validate"], COLUMNS="400")
    assert result.exit_code == 0, result.output
    assert [w["key"] for w in warnings_of(result.output)] == ["stages"], result.output


def test_a_stage_that_loads_the_model_still_warns_about_it(here: Path) -> None:
    result = invoke(["validate", "+experiment=stage1_bfcl"], COLUMNS="400")
    assert "warning model.hf_checkpoint: models/Qwen3-4B-Instruct-2507 holds no config.json" in result.output
