"""Trajectory lines read back exactly as `json.dumps(record, default=str)` would have written them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from t3rl_core import secret
from t3rl_core.eval.jsonl import record_line
from t3rl_core.secret import Secret


def _same_as_json(record: dict) -> None:
    line = record_line(record)
    assert line.endswith("}\n") and "\n" not in line[:-1]
    back, expected = json.loads(line), json.loads(json.dumps(record, default=str))
    assert json.dumps(back, sort_keys=True) == json.dumps(expected, sort_keys=True)


def test_token_lists_and_the_rest_read_back_unchanged() -> None:
    _same_as_json(
        {
            "task_id": "multi_turn_base_0",
            "reward": 0.5,
            "progress": None,
            "messages": [{"role": "user", "content": 'ünïcödé "quoted" \n'}],
            "prompt_ids": list(range(5000)),
            "response_ids": [7, 8],
            "loss_mask": [0, 1],
            "log_probs": [0.0, -1.25e-05, -3.0],
            "outcome": {1: "int key", "path": Path("/tmp/x")},
        }
    )


def test_lists_orjson_would_write_otherwise_go_through_json() -> None:
    record = {
        "log_probs": [float("nan"), -math.inf, -0.5],
        "response_ids": [1, None, 2**70],
        "loss_mask": [Path("odd")],
        "prompt_ids": [],
    }
    _same_as_json(record)
    assert "NaN" in record_line(record) and "-Infinity" in record_line(record)


def test_records_without_token_lists() -> None:
    _same_as_json({})
    _same_as_json({"task_id": "t", "status": "failed", "error": "boom"})


def test_a_token_list_holding_text_is_written_as_json_writes_it() -> None:
    # orjson writes text as UTF-8 where json escapes it: a list whose orjson text holds an "n" (only
    # text or a null does, never a number) is written by json.
    record = {"prompt_ids": ["ünï", 1], "response_ids": [1, 2]}
    assert '"prompt_ids": ["\\u00fcn\\u00ef", 1]' in record_line(record)
    _same_as_json(record)


def test_an_episodes_own_text_keeps_the_tasks_data_and_loses_real_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A BFCL task gives the model a made-up password that it passes on: the record's messages keep it
    (the official checker replays the calls from them), while a token known by its issuer's form, a
    value a Secret revealed and a name's value in an error are masked."""
    monkeypatch.setenv("T3RL_TEST_JSONL_KEY", "Zq8-revealed-value")
    monkeypatch.setattr(secret, "_REVEALED", set())  # this process's other tests never see the value
    Secret("env:T3RL_TEST_JSONL_KEY").reveal()
    call = json.dumps({"name": "authenticate_twitter", "arguments": {"password": "securePass123"}})
    token = "hf_" + "Ab1" * 12
    record = {
        "task_id": "multi_turn_base_8",
        "error": "login refused: password=hunter2024x",
        "messages": [
            {"role": "assistant", "content": f"<tool_call>{call}</tool_call>"},
            {"role": "tool", "content": f"echo {token} Zq8-revealed-value"},
        ],
        "response_text": call,
        "response_ids": [1, 2],
    }
    line = record_line(record)
    back = json.loads(line)
    assert back["messages"][0] == record["messages"][0] and back["response_text"] == call
    assert back["messages"][1]["content"] == "echo *** ***"
    assert "hunter2024x" not in line and back["task_id"] == "multi_turn_base_8"
    _same_as_json({key: value for key, value in record.items() if key not in ("error", "messages")})
