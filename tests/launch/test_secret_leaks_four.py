"""Credentials under a name that is not quite a credential's: a misspelt key (`eval.engine.api_kee=V`,
`tracking.api_kye=V`, in an override or a config file) and a secret flag given with its value as the
next argument (`--api-key V`, `--hf-token V`). The value has no issuer's prefix and the name is not a
secret name, so the refusal quoted it in "set in" and offered it back in its fix as a literal of the
credential field (docs/how-to/secrets.md, "Where a secret could leave"). And credentials inside text
that names them (`HF_TOKEN=V` in a child's error, `?private_token=V`, `https://V@github.com`) or whose
issuer's prefix was not known (Groq, xAI, npm, …), which the masking of every written line let through.

Each test plants its own value: values this process has masked once stay masked, so a value shared
between tests could pass a test that no longer masks it.
"""

from __future__ import annotations

import base64
import binascii
import re
import string
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from launch.config.misspelt_secrets import spelt_like_secret
from launch.config.secrets import scrub_text
from t3rl_core.secret import mask_text
from t3rl_core.secret_shapes import credentials_in
from tests.support.draws import SeededDraws
from tests.support.no_slime import cli_workdir

ALPHABET = string.ascii_letters + string.digits
random_source = SeededDraws(__name__)  # the same values every run: tests/support/draws.py


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


# ------------------------------------------------- credentials given away by their name inside text


def _value() -> str:
    return planted() + "7"  # a digit, whatever was drawn


@pytest.mark.parametrize(
    "template",
    [
        "Traceback … ValueError: bad header: HF_TOKEN={v}",
        "export MY_SERVICE_TOKEN={v}",
        "client = OpenAI(api_key='{v}', base_url='http://x')",
        '{{"wandb_key": "{v}", "project": "p"}}',
        "error: slime exited 1: --api-key {v} is not a flag",
        "PRIVATE-TOKEN: {v}",
        "GET https://gitlab.example/api?private_token={v}&page=2",
        "GET https://hub.example/x?hf_token={v}",
        "GET https://store.example/o?X-Goog-Signature={v}",
        "clone https://{v}@github.com/org/repo.git failed",
        "db password: {v}",
    ],
)
def test_a_credential_named_in_text_is_masked_by_its_name(template: str) -> None:
    """A child's error, a repr in a traceback or a dumped env names the credential it prints; the value
    has no issuer's prefix and this process never saw it, so it was printed and written whole."""
    value = _value()
    text = template.format(v=value)
    assert value not in mask_text(text) and "***" in mask_text(text), mask_text(text)
    assert value in credentials_in(text)


@pytest.mark.parametrize(
    "token",
    [
        "gsk_" + "Ab3dE" * 10,
        "xai-" + "Ab3dE" * 10,
        "pplx-" + "Ab3dE" * 10,
        "npm_" + "Ab3dE" * 8,
        "pypi-AgEIcHlwaS5vcmc" + "Ab3dE" * 10,
        "r8_" + "Ab3dE" * 8,
        "dop_v1_" + "ab3de" * 12 + "abcd",
        "ya29." + "Ab3dE" * 6,
    ],
)
def test_keys_of_more_issuers_are_known_by_their_prefix(token: str) -> None:
    assert mask_text(f"retry with {token} (401)") == "retry with *** (401)"
    assert mask_text(f"cut: {token[:12]}…") == "cut: ***…"


@pytest.mark.parametrize(
    "text",
    [
        "eos_token: <|im_end|>",
        "pad_token=151643",
        "max_tokens=4096 max_new_tokens: 8192",
        "tokenizer=Qwen/Qwen3-8B",
        "num_tokens: 12345678",
        "--fim-pad-token <fim_pad>",
        "sort_key=abc123def reward_key=score1234 input_key: prompt12345",
        "password: hunter2",
        "token=env:HF_TOKEN api_key=${oc.env:MY_KEY1}",
        "https://git@github.com/org/repo.git https://user1@example.com",
        '"tokens": [151644, 872, 198]',
        "http://h/search?sort_key=date2024abc&q=x",
    ],
)
def test_text_that_names_no_credential_is_left_as_it_is(text: str) -> None:
    assert mask_text(text) == text and credentials_in(text) == []


# ------------------------------------------------- a config dir whose path holds a credential


def test_a_config_dir_whose_path_holds_a_credential_is_refused(here: Path) -> None:
    """Planned before, with manifest.json's config_dirs and the "run it:" line masked (`/tmp/x/***`), so
    `t3rl run --run-dir` of the run looked for a directory that does not exist."""
    token = "hf_" + planted() + "Ab3dE7Ab3d"
    (here / token / "model").mkdir(parents=True)
    result = CliRunner().invoke(
        app, ["plan", "--config-dir", str(here / token), "+experiment=quickstart"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 2, result.output
    assert "error --config-dir: the config dir's path holds a credential" in result.output, result.output
    assert token not in result.output and not (here / "plans").exists()


# ------------------------------------------------- a known credential inside base64


@pytest.mark.parametrize("before", ["", "u:", "ab:", "user:"])
@pytest.mark.parametrize("after", ["", "x", "xy"])
def test_a_known_credential_inside_base64_is_masked(
    monkeypatch: pytest.MonkeyPatch, before: str, after: str
) -> None:
    """HTTP Basic's `Authorization: Basic <base64 of user:key>` is masked as a header; the same base64 in
    a registry's `"auth"` or a Kubernetes secret a job dumps carried a known key (WANDB_API_KEY's value)
    readable by anyone who decodes it."""
    value = planted() + planted()
    monkeypatch.setenv("WANDB_API_KEY", value)
    blob = (before + value + after).encode()
    text = (
        f'{{"auths": {{"registry": {{"auth": "{base64.b64encode(blob).decode()}"}}}}}} '
        f"data: {base64.urlsafe_b64encode(blob).decode().rstrip('=')}"
    )
    masked = scrub_text(text)
    for word in re.findall(r"[A-Za-z0-9+/_=-]{8,}", masked):
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                assert value.encode() not in decode(word + "=" * (-len(word) % 4)), masked
            except (ValueError, binascii.Error):
                continue
    assert masked.count("***") == 2, masked
