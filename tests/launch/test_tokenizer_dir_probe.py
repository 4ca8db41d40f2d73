"""A tokenizer given as a directory here holds a tokenizer: a directory of other files given by mistake
(`model.chat.tokenizer=/etc`) is refused at the key, before any stage loads it; an empty one (a download
not made yet) warns, as a model directory without config.json does; the tiny model t3rl builds itself is
made again by its own stage, whatever its directory holds now."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_app import invoke

KEY = "model.chat.tokenizer"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("T3RL_CACHE_DIR", str(cache))
    monkeypatch.chdir(tmp_path)
    return cache


def _validate(*overrides: str) -> tuple[int, str]:
    result = invoke(["validate", "+experiment=stage1_bfcl", *overrides], COLUMNS="250")
    return result.exit_code, result.output


def test_a_directory_of_other_files_is_refused_at_the_key_with_a_fix_that_validates(tmp_path: Path) -> None:
    given = tmp_path / "etc"
    given.mkdir()
    (given / "passwd").write_text("root:x:0:0\n")
    code, out = _validate(f"{KEY}={given}")
    assert code == 2, out
    assert f"error {KEY}: {given} holds passwd but no tokenizer" in out, out
    assert "fix: set model.chat.tokenizer=models/Qwen3-4B-Instruct-2507 (its value without" in out, out
    assert _validate(f"{KEY}=models/Qwen3-4B-Instruct-2507")[0] == 0


def test_an_empty_directory_warns(tmp_path: Path) -> None:
    (tmp_path / "later").mkdir()
    code, out = _validate(f"{KEY}={tmp_path / 'later'}")
    assert code == 0 and f"warning {KEY}: {tmp_path / 'later'} is empty: no tokenizer" in out, out


@pytest.mark.parametrize("name", ["tokenizer_config.json", "tokenizer.json", "config.json"])
def test_a_directory_holding_a_tokenizer_file_is_accepted(tmp_path: Path, name: str) -> None:
    (tmp_path / "tok").mkdir()
    (tmp_path / "tok" / name).write_text("{}")
    (tmp_path / "tok" / "vocab.json").write_text("{}")
    code, out = _validate(f"{KEY}={tmp_path / 'tok'}")
    assert code == 0 and f" {KEY}:" not in out, out


def test_the_tiny_model_t3rl_builds_is_not_judged_by_what_its_directory_holds(_cache: Path) -> None:
    built = _cache / "models" / "tiny_qwen3"
    built.mkdir(parents=True)
    (built / "model.safetensors.partial").write_text("")  # a build stopped half-way
    result = invoke(["validate", "+experiment=quickstart"], COLUMNS="250")
    assert result.exit_code == 0 and f" {KEY}:" not in result.output, result.output
