"""Credentials under a name that is not quite a credential's: a misspelt key (`eval.engine.api_kee=V`,
`tracking.api_kye=V`, in an override or a config file) and a secret flag given with its value as the
next argument (`--api-key V`, `--hf-token V`). The value has no issuer's prefix and the name is not a
secret name, so the refusal quoted it in "set in" and offered it back in its fix as a literal of the
credential field (docs/how-to/secrets.md, "Where a secret could leave").

Each test plants its own value: values this process has masked once stay masked, so a value shared
between tests could pass a test that no longer masks it.
"""

from __future__ import annotations

import secrets as random_source
import string
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from launch.config.misspelt_secrets import spelt_like_secret
from tests.support.no_slime import cli_workdir

ALPHABET = string.ascii_letters + string.digits


def planted() -> str:
    """A random value of no known form, never seen by this process before."""
    return "".join(random_source.choice(ALPHABET) for _ in range(24))


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return cli_workdir(tmp_path / "work", monkeypatch)


def refused(argv: list[str]) -> Any:
    result = CliRunner().invoke(app, ["validate", *argv], env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    return result


def no_trace(value: str, output: str, here: Path) -> None:
    assert value not in output, output
    for path in here.rglob("*"):
        if path.is_file():
            assert value not in path.read_text(errors="replace"), path


@pytest.mark.parametrize("plus", ["", "+"])
@pytest.mark.parametrize("key", ["eval.engine.api_kee", "eval.engine.apikey_", "eval.engine.api_key.value"])
def test_a_misspelt_credential_key_keeps_its_value_out_and_fixes_with_a_reference(
    here: Path, key: str, plus: str
) -> None:
    value = planted()
    result = refused(["+experiment=quickstart", f"{plus}{key}={value}"])
    no_trace(value, result.output, here)
    if not key.endswith(".value"):
        assert "eval.engine.api_key=env:NAME" in result.output, result.output


@pytest.mark.parametrize(
    "key",
    ["tracking.api_kye", "tracking.wandb_api_kye", "tracking.pasword", "tracking.secert", "tracking.tokn"],
)
def test_a_misspelt_credential_key_with_no_near_field_keeps_its_value_out(here: Path, key: str) -> None:
    value = planted()
    for typed in (f"{key}={value}", f"+{key}={value}"):
        no_trace(value, refused(["+experiment=quickstart", typed]).output, here)


def test_a_misspelt_credential_key_in_a_config_file_keeps_its_value_out(here: Path) -> None:
    value = planted()
    (here / "cfg" / "experiment").mkdir(parents=True)
    (here / "cfg" / "experiment" / "mine.yaml").write_text(
        f"# @package _global_\ndefaults:\n  - quickstart\neval:\n  engine:\n    api_kee: {value}\n"
    )
    result = refused(["--config-dir", str(here / "cfg"), "+experiment=mine"])
    assert value not in result.output and "eval.engine.api_key=env:NAME" in result.output, result.output
    shown = CliRunner().invoke(app, ["show", "--config-dir", str(here / "cfg"), "+experiment=mine"])
    assert value not in shown.output, shown.output


@pytest.mark.parametrize("flag", ["--api-key", "--hf-token", "--wandb-key", "--tokn", "--password"])
def test_a_secret_flag_with_its_value_as_the_next_argument_keeps_it_out(here: Path, flag: str) -> None:
    """`--api-key=V` was masked; `--api-key V` (two arguments) was quoted whole and offered back as
    `eval.engine.api_key=V`."""
    value = planted()
    result = refused(["+experiment=quickstart", flag, value])
    no_trace(value, result.output, here)
    assert f"={value}" not in result.output


@pytest.mark.parametrize(
    "name",
    [
        "max_tokens",
        "tokenizer",
        "top_k",
        "concurrency",
        "path",
        "reward_key",
        "keep",
        "passes",
        "token_budget",
    ],
)
def test_an_ordinary_key_is_not_taken_for_a_misspelt_credential(name: str) -> None:
    """Only names a letter away from a credential's are: an unknown `eval.max_tokenz` quotes its value."""
    assert not spelt_like_secret(f"eval.{name}")


@pytest.mark.parametrize("name", ["api_kye", "apikye", "pasword", "passwrd", "secert", "tokn", "acess_key"])
def test_a_name_a_letter_away_from_a_credentials_is_taken_for_one(name: str) -> None:
    assert spelt_like_secret(f"tracking.{name}") and spelt_like_secret(f"tracking.my_{name}")
