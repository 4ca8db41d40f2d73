"""+experiment=bfcl_env_tuning_4stage: the paper's curriculum built from config (format reward first,
augmentation in the first three stages and not the last, each stage from the previous), against a
golden plan."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
import yaml

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError
from launch.plan.build import PlanContext, build_plan

GOLDEN = Path(__file__).with_name("golden") / "bfcl_env_tuning_4stage.plan.sh"
ENV_FREE = ("T3RL_RUNS_DIR", "T3RL_CHECKPOINTS_DIR", "T3RL_MODELS_DIR", "SLIME_ROOT", "MEGATRON_ROOT")
CTX = PlanContext(Path("/RUN"), Path("/BASE"), "/T3RL", "/venv/bin/python", "four", {})
STAGES = ("format", "basic", "complex", "aligned")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ENV_FREE:
        monkeypatch.delenv(name, raising=False)


def plan_of(*overrides: str):
    return build_plan(resolve(["+experiment=bfcl_env_tuning_4stage", *overrides]).run, CTX)


def test_plan_matches_its_golden_file() -> None:
    # The shared data cache lives under $T3RL_CACHE_DIR, which the test session sets per run.
    script = re.sub(r"cache=\S+/data/", "cache=<cache>/data/", plan_of().render_script())
    assert script == GOLDEN.read_text()


def test_curriculum_stages_from_config() -> None:
    plan = plan_of()
    runtime = {n: yaml.safe_load(plan.files[f"/RUN/runtime/{n}.yaml"])["t3rl"] for n in STAGES}
    assert [runtime[n]["reward"]["name"] for n in STAGES] == [
        "bfcl_format",
        "progress",
        "progress",
        "progress",
    ]
    assert [runtime[n]["env"]["augmentation"]["enabled"] for n in STAGES] == [True, True, True, False]
    argv = {n: list(plan.stage(n).slime_job.argv) for n in STAGES}
    for before, after in itertools.pairwise(STAGES):
        assert argv[after][argv[after].index("--ref-load") + 1] == f"/RUN/stages/{before}/checkpoint"
    data = [argv[n][argv[n].index("--prompt-data") + 1].rsplit("/", 1)[1] for n in STAGES]
    assert data == ["bfcl_train_base.jsonl"] * 2 + ["bfcl_train.jsonl"] * 2
    assert resolve(["+experiment=bfcl_env_tuning_4stage"]).run.model.name == "qwen2_5_7b_instruct"


def test_a_stage_override_that_does_not_validate_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as caught:
        plan_of("+stages.format.env.augmentation.probability=2")
    # each problem at its own key under the stage's section (its domain, its fix)
    assert any(p.key == "stages.format.env.augmentation.probability" for p in caught.value.problems)
    with pytest.raises(ConfigError) as caught:
        plan_of("stages.format.reward.name=no_such_reward")
    assert any(p.key == "stages.format.reward.name" for p in caught.value.problems)
    with pytest.raises(ConfigError) as caught:
        plan_of("+stages.basic.env.data.seed=7")
    assert any(p.key == "stages.basic.env.data" for p in caught.value.problems)
