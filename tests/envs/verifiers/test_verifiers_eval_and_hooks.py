"""A verifiers environment in `t3rl eval` (the reference policy answers with the dataset's answer) and
in training through slime's generate hook (a scripted SGLang stand-in as slime's router)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from tests.envs.verifiers.conftest import CALCULATOR
from tests.envs.verifiers.openai_standin import reply
from tests.envs.verifiers.test_verifiers_world import call, library_rollout, prepared, runtime
from tests.support.scripted_sglang import generate_with_router
from tests.support.slime_sample import Sample

pytestmark = pytest.mark.slow


def test_t3rl_eval_with_the_reference_policy(tmp_path: Path) -> None:
    config = runtime(CALCULATOR, {"num_examples": 3})
    runtime_file = tmp_path / "runtime.yaml"
    runtime_file.write_text(config.to_yaml())
    out = tmp_path / "eval"
    result = CliRunner().invoke(
        app,
        ["eval", "--runtime-config", str(runtime_file), "--engine", "reference", "--split", "verifiers_eval",
         "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    episodes = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert len(episodes) == 2  # the environment's eval_dataset
    rows = prepared(config, tmp_path / "data")["verifiers_eval"]
    for row in rows:
        # verifiers' own rollout of the same answer (no tool call: correct_answer 1, used_tool 0).
        library = library_rollout(config, row, [reply(row["label"])])
        (episode,) = [e for e in episodes if e["index"] == row["metadata"]["index"]]
        assert episode["reward"] == library["reward"] == 1.0


def test_slime_generate_hook_trains_on_the_environment(tmp_path: Path) -> None:
    config = runtime(CALCULATOR, {"num_examples": 2})
    row = prepared(config, tmp_path)["verifiers_train"][0]
    chat = ChatFormat.from_pretrained(shared_tokenizer_dir("qwen3"), "qwen3")
    script = [call("add", a=3, b=4), "The sum is 7."]
    library = library_rollout(config, row, [reply(calls=[("add", {"a": 3, "b": 4})]), reply("The sum is 7.")])

    sample = Sample(index=0, prompt=row["prompt"], label=row["label"], metadata=dict(row["metadata"]))
    sample = generate_with_router(config, chat, script, sample)
    assert sample.status == Sample.Status.COMPLETED
    assert sample.reward == library["reward"] == 1.5
    assert sample.metadata["reward_metrics"] == pytest.approx(library["metrics"])
    # Model tokens trained (mask 1, their log-probs), the tool result and template tokens not.
    trained = [lp for lp, m in zip(sample.rollout_log_probs, sample.loss_mask, strict=True) if m]
    assert trained and set(trained) == {-0.5} and 0 in sample.loss_mask
    assert [m["content"] for m in sample.metadata["messages"] if m["role"] == "tool"] == ["7"]
