"""The generic prepare-data entry: runtime-config dispatch, manifest, CLI arguments."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from t3rl_core.config import RuntimeConfig
from t3rl_core.data import default_env_config, prepare_from_runtime, read_manifest
from t3rl_core.data.__main__ import main
from t3rl_core.envs.bfcl.config import BFCLEnvConfig

BASE_ONLY = {
    "env": {"name": "bfcl_multi_turn", "data": {"categories": ["multi_turn_base"]}},
    "reward": {"name": "progress"},
    "chat": {"tokenizer": "unused-for-data"},
    "parsers": {"tool_call_parser": "qwen25"},
}


def _write_runtime(tmp_path: Path) -> Path:
    path = tmp_path / "runtime.yaml"
    path.write_text(yaml.safe_dump({"t3rl": BASE_ONLY}))
    return path


def test_prepare_from_runtime_dispatches_by_env_and_writes_manifest(tmp_path: Path):
    runtime = RuntimeConfig.from_yaml(_write_runtime(tmp_path))
    paths = prepare_from_runtime(runtime, tmp_path / "data")
    manifest = read_manifest(tmp_path / "data")
    assert manifest["env"] == "bfcl_multi_turn"
    assert manifest["env_config"]["data"]["categories"] == ["multi_turn_base"]
    rows = {name: info["rows"] for name, info in manifest["splits"].items()}
    expected = {
        "bfcl_train_base": 100,
        "bfcl_train": 100,
        "bfcl_val": 25,
        "bfcl_test": 75,
        "bfcl_unseen": 100,
    }
    expected["bfcl_all"] = 200
    assert rows == expected
    for name, info in manifest["splits"].items():
        assert info["sha256"] == hashlib.sha256(paths[name].read_bytes()).hexdigest()
        assert info["file"] == paths[name].name


def test_cli_with_runtime_config(tmp_path: Path):
    assert main(["--runtime-config", str(_write_runtime(tmp_path)), "--out", str(tmp_path / "out")]) == 0
    first_row = json.loads((tmp_path / "out" / "bfcl_val.jsonl").open().readline())
    assert first_row["metadata"]["split"] == "val"


def test_cli_needs_exactly_one_source(tmp_path: Path):
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        main(["bfcl", "--runtime-config", str(_write_runtime(tmp_path)), "--out", str(tmp_path)])
    assert main(["no_such_dataset", "--out", str(tmp_path)]) == 2


def test_bfcl_alias_uses_the_default_config():
    assert default_env_config("bfcl") == BFCLEnvConfig()
