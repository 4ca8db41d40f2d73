"""Credentials that reached places they should not, sixth round (docs/how-to/secrets.md, "Where a secret
could leave"): a credential pasted where its variable's name goes (`eval.engine.api_key=env:<the key>`,
`'${oc.env:<the key>}'`). A reference was taken for where a credential lives, whatever it named, so the
key itself was kept in clear in config.yaml, overrides.yaml, manifest.json, provenance.json and every
printed command, and an error about it quoted it. Each with its unmasked neighbour: a variable's name
stays visible.

Each test plants its own value: values this process has masked once stay masked.
"""

from __future__ import annotations

import string
from pathlib import Path

import pytest

from t3rl_core.secret_names import looks_like_credential
from tests.support.cli_app import invoke
from tests.support.draws import SeededDraws
from tests.support.planted import isolate, leaks

ALPHABET = string.ascii_letters + string.digits
random_source = SeededDraws(__name__)  # the same values every run: tests/support/draws.py


def planted() -> str:
    """A random key that is also a valid variable name (a letter first), never seen by this process. One
    in 6 to 100 random runs has too little entropy or too few changes of letter case and digit to look
    random (t3rl_core.secret_names, docs/how-to/secrets.md "Limits"): those are drawn again."""
    while True:
        key = "K" + "".join(random_source.choice(ALPHABET) for _ in range(23))
        if looks_like_credential(key):
            return key


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate(tmp_path, monkeypatch, {})


@pytest.mark.parametrize(
    "written",
    ["env:{key}", "${{oc.env:{key}}}", "${{oc.env:{key}-x}}", "${{oc.env:{key},}}"],
    ids=["env", "oc-env", "oc-env-not-a-name", "oc-env-default"],
)
def test_a_credential_pasted_as_the_variables_name_of_a_secret_field_is_refused_unquoted(
    here: Path, written: str
) -> None:
    """`eval.engine.api_key=env:<the key>` validated (and planned it in clear); with a character no
    name has, the refusal quoted the key in its `set in:` and `fix:` lines."""
    key = planted()
    result = invoke(["validate", "+experiment=quickstart", f"eval.engine.api_key={written.format(key=key)}"])
    assert result.exit_code == 2, result.output
    assert key not in result.output, result.output
    assert "eval.engine.api_key=env:NAME" in result.output, result.output


@pytest.mark.parametrize("variable", ["HF_TOKEN", "MODEL_OPTS"])
def test_a_credential_pasted_as_the_variables_name_of_a_job_variable_is_masked(
    here: Path, variable: str
) -> None:
    """`++hardware.env_vars.HF_TOKEN='${oc.env:<the key>}'`: kept as a reference, so in clear in the
    plan's files and the printed commands, under a credential's name as under any other."""
    key = planted()
    result = invoke(["plan", "+experiment=quickstart", f"++hardware.env_vars.{variable}=${{oc.env:{key}}}"])
    assert result.exit_code == 0, result.output
    assert key not in result.output, result.output
    assert leaks({"the key": key}, here) == []
    assert (here / "plans").is_dir()


def test_a_variables_name_stays_visible(here: Path) -> None:
    """The neighbours: names, however long, with digits or in lower case, are references."""
    names = ["MY_HF_TOKEN_2024", "SGLANG_API_KEY", "wandb_api_key_v2", "TOKENFORPROJECT20240101"]
    overrides = [f"++hardware.env_vars.V{i}=${{oc.env:{name}}}" for i, name in enumerate(names)]
    result = invoke(["plan", "+experiment=quickstart", "eval.engine.api_key=env:SGLANG_API_KEY", *overrides])
    assert result.exit_code == 0, result.output
    (config,) = (here / "plans").rglob("config.yaml")
    text = config.read_text()
    assert all(f"${{oc.env:{name}}}" in text for name in names), text
    assert "env:SGLANG_API_KEY" in text, text


def test_a_credential_pasted_as_a_variables_name_in_an_own_experiment_file_is_masked(here: Path) -> None:
    """The same in a config file of one's own: `HF_TOKEN: ${oc.env:<the key>}` under `hardware.env_vars`."""
    key = planted()
    experiment = here / "mine" / "experiment" / "mine.yaml"
    experiment.parent.mkdir(parents=True)
    experiment.write_text(
        "# @package _global_\ndefaults:\n  - quickstart\nname: mine\n"
        f"hardware:\n  env_vars:\n    HF_TOKEN: ${{oc.env:{key}}}\n"
    )
    result = invoke(["plan", "--config-dir", "mine", "+experiment=mine"])
    assert result.exit_code == 0, result.output
    assert key not in result.output, result.output
    assert leaks({"the key": key}, here / "plans", here / "cache") == []
