"""Attribution through a real tau2 eval: the reference engine plays the gold plan, and the scripted customer
either behaves, or ends the call in its opening message. The record carries the attribution and its
evidence; the summary counts the failure against the user simulator and leaves it out of the accuracy
without user-simulator failures."""

from __future__ import annotations

import asyncio

import pytest

from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RuntimeConfig
from t3rl_core.eval.config import EvalConfig
from t3rl_core.eval.runner import run_eval

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rows():
    from t3rl_core.envs.tau2.config import Tau2EnvConfig
    from t3rl_core.envs.tau2.data import rows as tau2_rows

    by_task = {
        (r["metadata"]["domain"], r["metadata"]["task_id"]): r for r in tau2_rows(Tau2EnvConfig(), "base")
    }
    return [by_task[("airline", "2")]]  # its gold plan writes (send_certificate)


@pytest.fixture(scope="module")
def runtime() -> RuntimeConfig:
    return RuntimeConfig.model_validate(
        {
            "env": {"name": "tau2"},
            "reward": {"name": "tau2_shaped"},
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen3")), "chat_template": "qwen3"},
            "parsers": {"tool_call_parser": "hermes"},
            "rollout": {"max_num_steps": 100, "max_new_tokens": 4096},
        }
    )


def _eval(runtime, rows, out):
    config = EvalConfig(split="tau2_test", concurrency=1)
    return asyncio.run(run_eval(runtime, config, rows, out, show_progress=False))


def test_a_user_ending_the_call_at_once_is_the_simulators_fault(runtime, rows, tmp_path, monkeypatch) -> None:
    from t3rl_core.envs.tau2.users import ScriptedUserSession, UserTurn

    good = _eval(runtime, rows, tmp_path / "good")
    assert good["overall"]["accuracy"] == 1.0 and good["identity"]["user_simulator"]["name"] == "scripted"

    async def hang_up(self, incoming):
        return UserTurn(text="Never mind. ###STOP###")

    monkeypatch.setattr(ScriptedUserSession, "reply", hang_up)
    summary = _eval(runtime, rows, tmp_path / "rude")
    import json

    (record,) = [
        json.loads(line) for line in (tmp_path / "rude" / "trajectories.jsonl").read_text().splitlines()
    ]
    assert record["success"] is False
    assert record["attribution"]["party"] == "user_simulator"
    assert record["attribution"]["kind"] == "ended_early"
    assert "###STOP###" in record["attribution"]["evidence"]
    overall = summary["overall"]
    assert overall["failures"]["user_simulator"] == 1 and overall["accuracy"] == 0.0
    assert overall["accuracy_without_user_simulator"] is None  # no episode left to score
