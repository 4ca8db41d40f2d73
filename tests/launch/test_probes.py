"""Probes at pre-flight: a user's dataset file is read against the columns its env declares (the file
and line named), the interpreter stages use here imports t3rl, and an endpoint the plan calls answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError, Problem

RETOOL = "+experiment=retool"


def _problems(overrides: list[str]) -> tuple[list[Problem], list[Problem]]:
    """(errors, warnings) of a config."""
    try:
        resolved = resolve(overrides)
    except ConfigError as error:
        return error.problems, error.warnings
    return [], resolved.warnings


def _about_sizes(problem: Problem) -> bool:
    """A refusal of the one-row files' sizes (a split, or prepare_data's test rows), not of their columns."""
    return "holds" in problem.message or "prepare_data" in problem.message


def _jsonl(path: Path, rows: list[object]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture
def sft(tmp_path: Path) -> str:
    return _jsonl(tmp_path / "sft.jsonl", [{"messages": [{"role": "user", "content": "hi"}]}])


def test_a_problems_file_without_the_question_column_names_file_line_and_column(
    tmp_path: Path, sft: str
) -> None:
    rows = [{"prompt": "1+1", "target": "2"}, {"question": "2+2", "target": "4"}]
    source = _jsonl(tmp_path / "p.jsonl", rows)
    errors, _ = _problems([RETOOL, f"env.data.source={source}", f"env.data.sft_source={sft}"])
    (problem,) = [p for p in errors if p.key.startswith("env.data") and not _about_sizes(p)]
    assert f"{source}:2" in problem.message and "'prompt'" in problem.message
    # The row's one unread column is proposed as the question key; applied, the file is read as it is.
    assert problem.fix == "set env.data.question_key=question"


def test_a_renamed_column_is_fixed_by_the_env_key_that_names_it(tmp_path: Path, sft: str) -> None:
    source = _jsonl(tmp_path / "p.jsonl", [{"question": "1+1", "target": "2"}])
    overrides = [RETOOL, f"env.data.source={source}", f"env.data.sft_source={sft}"]
    errors, _ = _problems(overrides)
    (problem,) = [p for p in errors if p.key.startswith("env.data") and not _about_sizes(p)]
    assert problem.key == "env.data.question_key"
    # Holding out test_size=100 of one problem is blamed on what it reads, not the SFT file typed after it.
    assert [p.key for p in errors if "prepare_data" in p.message] == ["env.data.source"]
    errors, _ = _problems([*overrides, problem.fix.removeprefix("set ")])
    assert not [p for p in errors if p.key.startswith("env.data") and not _about_sizes(p)]


def test_messages_that_are_not_a_list_and_a_file_that_is_not_json_are_refused(tmp_path: Path) -> None:
    source = _jsonl(tmp_path / "p.jsonl", [{"prompt": "1+1", "target": "2"}])
    flat = _jsonl(tmp_path / "sft.jsonl", [{"messages": "hello"}])
    errors, _ = _problems([RETOOL, f"env.data.source={source}", f"env.data.sft_source={flat}"])
    assert [p for p in errors if p.key == "env.data.sft_source" and "not a list" in p.message]
    (tmp_path / "bad.jsonl").write_text('{"prompt": 1,\n')
    errors, _ = _problems(
        [RETOOL, f"env.data.source={tmp_path / 'bad.jsonl'}", f"env.data.sft_source={flat}"]
    )
    assert [p for p in errors if p.key == "env.data.source" and "line 1 is not JSON" in p.message]


def test_a_file_not_downloaded_yet_is_a_warning(tmp_path: Path) -> None:
    errors, warnings = _problems([RETOOL, f"env.data.source={tmp_path / 'later.parquet'}"])
    assert not [p for p in errors if p.key == "env.data.source"]
    assert [p for p in warnings if p.key == "env.data.source" and "does not exist" in p.message]


def test_a_parquet_file_is_probed_by_its_first_rows(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "train.parquet"
    pq.write_table(
        pa.table({"data_source": ["x"], "prompt": ["not a list"], "extra_info": [{"index": 0}]}), path
    )
    overrides = ["+experiment=toolrl_grpo", f"env.data.splits.toolrl_train={path}"]
    errors, _ = _problems(overrides)
    assert [p for p in errors if p.key == "env.data.splits.toolrl_train" and "reward_model" in p.message]


def test_an_interpreter_here_that_cannot_import_t3rl_is_refused(tmp_path: Path) -> None:
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named t3rl_core' >&2\nexit 1\n")
    python.chmod(0o755)
    errors, _ = _problems(["+experiment=quickstart", f"paths.cluster_python={python}"])
    (problem,) = [p for p in errors if p.key == "paths.cluster_python"]
    assert "cannot import t3rl_core" in problem.message
    errors, _ = _problems(["+experiment=quickstart", problem.fix.split(" (")[0].removeprefix("set ")])
    assert not [p for p in errors if p.key == "paths.cluster_python"]


def test_an_endpoint_that_does_not_answer_is_a_warning() -> None:
    url = "http://127.0.0.1:9"  # discard: nothing answers HTTP there
    errors, warnings = _problems(["+experiment=stage1_bfcl", f"eval.engine.url={url}"])
    assert not [p for p in errors if p.key == "eval.engine.url"]
    assert [p for p in warnings if p.key == "eval.engine.url" and "does not answer" in p.message]


def test_a_host_whose_name_never_resolves_does_not_hold_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket
    import threading

    from launch.checks import probes

    blocked = threading.Event()

    def never_resolves(*args: object, **kwargs: object) -> object:
        blocked.wait()
        raise socket.gaierror("resolver gone")

    monkeypatch.setattr(socket, "getaddrinfo", never_resolves)
    monkeypatch.setattr(probes, "ENDPOINT_TIMEOUT_S", 0.2)
    assert "no answer within" in (probes._unanswered("http://nowhere.invalid:30000/health") or "")
    blocked.set()


def test_a_missing_model_is_warned_about_by_the_stages_that_load_it_and_only_then(tmp_path: Path) -> None:
    """`t3rl run` refuses a model dir without config.json only when a stage `requires` it (the executor's
    preflight): a config of the data stage alone was warned 't3rl run refuses it' and ran."""
    missing = f"model.hf_checkpoint={tmp_path / 'no-model'}"
    _, warned = _problems(["+experiment=stage1_bfcl", missing])
    (model,) = [w for w in warned if w.key == "model.hf_checkpoint"]
    assert "stage(s) to_torch_dist, train, to_hf load" in model.message, model
    data_only = ["~stages.to_torch_dist", "~stages.train", "~stages.to_hf", "~stages.eval"]
    _, warned = _problems(["+experiment=stage1_bfcl", missing, *data_only])
    assert not [w for w in warned if w.key == "model.hf_checkpoint"], warned
