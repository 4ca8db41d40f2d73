"""A plugin's contract (its Config's OUTCOME_FIELDS / NEEDS_OUTCOME) takes part in the cross-group
checks exactly as a built-in's: a reward that reads fields the env does not provide is refused, both
ways round, before anything runs."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from tests.support.plugin_example import EXAMPLE_CONF

CONF = ["--config-dir", str(EXAMPLE_CONF)]


def validate(*overrides: str):
    return CliRunner().invoke(
        app, ["validate", *CONF, "+experiment=counter", *overrides], catch_exceptions=False
    )


@pytest.fixture(autouse=True)
def on_path(example_on_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def test_the_plugin_pair_keeps_its_contract():
    assert validate().exit_code == 0


def test_a_built_in_reward_on_the_plugin_env_is_refused():
    result = validate("reward=progress")
    assert result.exit_code == 2
    assert "reward progress reads outcome fields" in result.output
    assert "that env t3rl_counter.world:CounterWorld does not provide" in result.output


def test_the_plugin_reward_on_a_built_in_env_is_refused():
    result = validate("env=toolrl_single_turn", "reward.max_add=5", "eval.split=toolrl_test")
    assert result.exit_code == 2
    assert "reads outcome fields ['calls', 'target', 'value'] that env toolrl_single_turn" in result.output
