"""Hunt wave seven (docs/explanation/sandbox.md, "Hunt wave seven"): what a cell inherits is one rule.

A credential of t3rl's environment (`DB_PASSWORD`) reached cells, and a `command` service, inside
another variable in any form but as it is: base64 of `user:V` (a registry's auth, HTTP Basic), hex,
percent-encoded or JSON-escaped when it holds a sign. The environment's rule (`holds_credential`) now
asks what the masking of text asks (`mask_values`: every form of a known value), so a form a file may
not show is a form a child may not inherit. In-process: `cell_env` is what the zygote is given.
"""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

import pytest
from pydantic import ValidationError

from t3rl_core.sandbox.config import LocalSandboxConfig
from t3rl_core.sandbox.local import cell_env
from t3rl_core.secret_env import environment_for_untrusted

PASSWORD = 'p@ss"w0rd&tulip7'
FORMS = {
    "basic auth": base64.b64encode(f"alice:{PASSWORD}".encode()).decode(),
    "registry": json.dumps(
        {"auths": {"reg.example.com": {"auth": base64.b64encode(PASSWORD.encode()).decode()}}}
    ),
    "hex": PASSWORD.encode().hex(),
    "percent-encoded": "https://example.com/?q=" + quote(PASSWORD, safe=""),
    "json-escaped": json.dumps({"note": PASSWORD}),
}
PLAIN = {"GREETING": "hello 1234", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"}


@pytest.fixture
def environ(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("DB_PASSWORD", PASSWORD)
    variables = {f"FORM_{i}": form for i, form in enumerate(FORMS.values())} | PLAIN
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    return variables


def test_an_allow_listed_variable_holding_a_credential_in_another_form_does_not_reach_cells(
    environ: dict[str, str],
) -> None:
    env = cell_env(LocalSandboxConfig(env_allowlist=sorted(environ)))
    assert not any(name.startswith("FORM_") for name in env), env
    assert all(env[name] == value for name, value in PLAIN.items())


@pytest.mark.parametrize("form", FORMS, ids=list(FORMS))
def test_a_configured_variable_holding_one_is_refused_without_quoting_it(
    environ: dict[str, str], form: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        LocalSandboxConfig(env={"NOTE": FORMS[form]})
    assert "NOTE" in str(refused.value) and FORMS[form] not in str(refused.value)


def test_a_command_service_does_not_inherit_one(environ: dict[str, str]) -> None:
    import os

    env = environment_for_untrusted(["python", "-m", "server"], dict(os.environ))
    assert not any(name.startswith("FORM_") for name in env)
    assert all(env[name] == value for name, value in PLAIN.items())


def test_plain_variables_beside_a_known_credential_stay(environ: dict[str, str]) -> None:
    """No over-refusal: text sharing no form of the value is configuration."""
    config = LocalSandboxConfig(env={"GREETING": "hello 1234", "DATA": "/data/tulip", "SEED": "7"})
    assert cell_env(config)["DATA"] == "/data/tulip"
