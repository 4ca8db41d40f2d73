"""ToolRL world: rlla parquet conversion (the provided 80-row test split), the single-turn env, the parser."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from t3rl_core.envs.toolrl.config import ToolRLEnvConfig
from t3rl_core.registries import ACTION_PARSERS, DATASETS, ENVS, REWARDS
from t3rl_core.rewards.base import RewardInput
from t3rl_core.types import AnswerAction

TEST_PARQUET = Path(__file__).resolve().parents[2] / "fixtures" / "toolrl" / "rlla_4k_test.parquet"


def config(tools_in_metadata: bool = False) -> ToolRLEnvConfig:
    assert TEST_PARQUET.is_file(), f"the provided ToolRL test split is expected at {TEST_PARQUET}"
    splits = {"toolrl_test": str(TEST_PARQUET)}
    return ToolRLEnvConfig(data={"splits": splits, "tools_in_metadata": tools_in_metadata})


def prepare(tmp_path: Path, **kw: bool) -> list[dict]:
    written = DATASETS.factory("toolrl_single_turn")(config(**kw), tmp_path)
    assert set(written) == {"toolrl_test"}
    return [json.loads(line) for line in written["toolrl_test"].read_text(encoding="utf-8").splitlines()]


def test_converter_rows_and_ground_truth_types(tmp_path):
    rows = prepare(tmp_path)
    assert len(rows) == 80
    kinds = Counter(("<tool_call>" in r["label"], "<response>" in r["label"]) for r in rows)
    assert kinds == {(True, False): 71, (False, True): 9}
    first = rows[0]
    assert [m["role"] for m in first["prompt"]] == ["system", "user"]
    assert first["prompt"][0]["content"].startswith("You are a helpful multi-turn dialogue assistant")
    assert first["prompt"][1]["content"].startswith("**Dialogue Records History**")
    assert first["metadata"] == {"data_source": "rlla", "split": "test", "index": 0, "tools": []}
    assert first["label"].endswith('{"name": "GetNews", "parameters": {"page": "1"}}\n</tool_call>')
    assert sorted(r["metadata"]["index"] for r in rows) == list(range(80))


def test_converter_is_byte_deterministic(tmp_path):
    digests = []
    for run in ("a", "b"):
        out = DATASETS.factory("toolrl_single_turn")(config(), tmp_path / run)
        digests.append(hashlib.sha256(out["toolrl_test"].read_bytes()).hexdigest())
    assert digests[0] == digests[1]


def test_converter_can_list_the_prompt_tools(tmp_path):
    rows = prepare(tmp_path, tools_in_metadata=True)
    tools = rows[0]["metadata"]["tools"]
    names = [t["function"]["name"] for t in tools]
    assert names == ["GetPowerBINews", "SingleOffer", "Domain WHOIS Lookup API", "GetNews"]
    assert tools[3]["function"]["parameters"]["properties"]["page"]["type"] == "int"
    # Every tool the system prompts enumerate ends up in metadata.
    listed = sum(r["prompt"][0]["content"].count("\nDescription: ") for r in rows)
    assert sum(len(r["metadata"]["tools"]) for r in rows) == listed > 80


def test_missing_parquet_is_a_clear_error(tmp_path):
    cfg = ToolRLEnvConfig(data={"splits": {"toolrl_train": str(tmp_path / "train.parquet")}})
    with pytest.raises(FileNotFoundError, match=r"env\.data\.splits"):
        DATASETS.factory("toolrl_single_turn")(cfg, tmp_path)


def test_oracle_answers_score_the_published_maximum(tmp_path):
    """The ground truth emitted by the reference engine scores 4 on tool rows and 1 on response rows."""
    rows = prepare(tmp_path)
    factory = ENVS.build(config())
    parser = ACTION_PARSERS.factory("toolrl")(None, [])
    reward = REWARDS.build(REWARDS.validate({"name": "toolrl"}))

    async def episode(row: dict) -> float:
        env = factory(row, "eval")
        assert env.action_format == "toolrl" and env.stop == ()
        oracle = env.oracle()
        assert isinstance(oracle, AnswerAction) and oracle.text == row["label"]
        transition = await env.step(parser.parse(oracle.text))
        assert transition.done and transition.inline is None and not transition.messages
        assert env.oracle() is None
        return reward(RewardInput(outcome=env.outcome())).value

    async def all_episodes() -> list[float]:
        values = [await episode(r) for r in rows]
        await factory.aclose()
        return values

    assert Counter(asyncio.run(all_episodes())) == {4.0: 71, 1.0: 9}


def test_env_scores_the_raw_text_including_thinking():
    label = "<think> x </think>\n<response> hi </response>"
    env = ENVS.build(config())({"prompt": [], "label": label}, "train")
    text = "<think> let me think </think>\n<response> hello </response><|im_end|>"
    parsed = ACTION_PARSERS.factory("toolrl")(None, []).parse(text)
    assert parsed == AnswerAction(text=text)
    asyncio.run(env.step(parsed))
    assert env.outcome() == {"response": text, "ground_truth": env.ground_truth, "answered": True}
    with pytest.raises(RuntimeError, match="after the episode ended"):
        asyncio.run(env.step(parsed))


def test_task_without_label_is_rejected():
    with pytest.raises(ValueError, match="label"):
        ENVS.build(config())({"prompt": []}, "train")
