"""algorithm.credit=turn in plans and pre-flight: the hooks and runtime section it plans, and the
combinations its declaration (t3rl_core.credit.TurnCredit) says it cannot run."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError

TURN = "stages.train.curriculum.algorithm.credit=turn"


def test_turn_credit_plans_both_hooks_and_the_runtime_section(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from launch.cli.app import app

    out = tmp_path / "plan"
    result = CliRunner().invoke(app, ["plan", "+experiment=stage1_bfcl", TURN, "--out", str(out)])
    assert result.exit_code == 0, result.output
    command = (out / "stages" / "train" / "command.sh").read_text()
    assert "--custom-reward-post-process-path t3rl_core.hooks.advantage.turn_level_rewards" in command
    assert "--custom-advantage-function-path t3rl_core.hooks.advantage.turn_level_advantages" in command
    runtime = yaml.safe_load((out / "runtime" / "train.yaml").read_text())["t3rl"]
    assert runtime["turn_credit"] == {"outcome_weight": 1.0}
    assert yaml.safe_load((out / "runtime" / "eval.yaml").read_text())["t3rl"]["turn_credit"] is None


def test_trajectory_credit_plans_neither() -> None:
    run = resolve(["+experiment=stage1_bfcl"]).run
    assert run.stages["train"].curriculum.algorithm.credit == "trajectory"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        (["+experiment=toolrl_grpo", f"+{TURN}"], "both replace slime's advantages"),
        (["+experiment=retool", "+stages.rl.curriculum.algorithm.credit=turn"], "turn_rewards"),
        (["+experiment=stage1_bfcl", TURN, "stages.train.curriculum.algorithm.advantage_estimator=gspo"],
         "not gspo's"),
        (["+experiment=stage1_bfcl", TURN, "stages.train.curriculum.n_samples_per_prompt=1",
          "stages.train.curriculum.global_batch_size=32"], "nothing to compare"),
    ],
)  # fmt: skip
def test_unsupported_combinations_are_refused(overrides: list[str], words: str) -> None:
    with pytest.raises(ConfigError, match=words) as refused:
        resolve(overrides)
    (problem,) = [p for p in refused.value.problems if words in p.message]
    assert problem.key.endswith("algorithm.credit") or "credit" in problem.fix
