"""`t3rl_core.score.toolrl` agrees with the env's episode path (ToolRLEnv → outcome → toolrl reward) on
the provided test split, for every published variant at several training steps; a variant name gives
the same config as its conf/reward/toolrl_<variant>.yaml."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from t3rl_core import score
from t3rl_core.envs.toolrl.config import ToolRLEnvConfig
from t3rl_core.registries import DATASETS, ENVS, REWARDS
from t3rl_core.rewards.base import RewardInput
from t3rl_core.rewards.toolrl import ToolRLRewardConfig
from t3rl_core.types import AnswerAction

REPO = Path(__file__).resolve().parents[3]
TEST_PARQUET = REPO / "tests" / "fixtures" / "toolrl" / "rlla_4k_test.parquet"
VARIANT_FILES = sorted((REPO / "conf" / "reward").glob("toolrl_*.yaml"))


@pytest.mark.parametrize("path", VARIANT_FILES, ids=lambda p: p.stem)
def test_a_variant_name_is_its_conf_file(path):
    fields = {k: v for k, v in yaml.safe_load(path.read_text()).items() if k != "defaults"}
    assert score.toolrl_config(path.stem.removeprefix("toolrl_")) == ToolRLRewardConfig(**fields)


def test_unknown_variants_are_refused():
    with pytest.raises(ValueError, match="unknown ToolRL variant"):
        score.toolrl_config("coarser")


def responses(rows: list[dict]) -> list[tuple[dict, str]]:
    """Each row's own answer, a neighbour's answer, the answer without its reasoning, and a cut one."""
    out = []
    for i, row in enumerate(rows):
        label, other = row["label"], rows[(i + 1) % len(rows)]["label"]
        out += [(row, label), (row, other), (row, label.split("</think>")[-1].lstrip()), (row, label[:-12])]
    return out


@pytest.mark.parametrize("variant", [None, "coarse", "refined", "max1_step30_max3", "schedule_length"])
def test_scoring_a_response_gives_the_episode_reward(tmp_path, variant):
    env_config = ToolRLEnvConfig(data={"splits": {"toolrl_test": str(TEST_PARQUET)}})
    split = DATASETS.factory("toolrl_single_turn")(env_config, tmp_path)["toolrl_test"]
    rows = [json.loads(line) for line in split.read_text().splitlines()]
    factory = ENVS.build(env_config)
    config = score.toolrl_config(variant)
    reward = REWARDS.build(config)
    seen = set()
    for step in (0, 40, 200):
        for row, text in responses(rows):
            env = factory(row, "train")
            asyncio.run(env.step(AnswerAction(text=text)))
            expected = reward(
                RewardInput(outcome=env.outcome(), response=text, label=row["label"], step=step)
            )
            verdict = score.toolrl(text, row["label"], step=step, variant=variant)
            assert verdict.reward == expected.value and verdict.details == expected.metrics
            assert verdict.success == bool(expected.metrics["accuracy"])
            seen.add(verdict.success)
    assert seen == {True, False}
