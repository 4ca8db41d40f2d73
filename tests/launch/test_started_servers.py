"""A server an env starts itself listens where the env calls it (`EnvConfig.started_server()`): the
command's --port and the URL's port are one setting said twice, refused when they disagree."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_preflight import _errors, _invoke, sandbox  # noqa: F401  (sandbox is a fixture)

from tests.support.fix_applier import apply_first_fix

HUB = ["+experiment=hub_env_grpo", "env=openenv"]
APP = "'t3rl_core.envs.openenv.counter_example:app'"


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("env.url=http://127.0.0.1:9000", "env.url"),
        (f"env.command=[python3,-m,uvicorn,{APP},--port,'9001']", "env.command"),
        (f"env.command=[python3,-m,uvicorn,{APP},'--port=9002']", "env.command"),
        ("env.data.train_episodes=8", "env.data.train_episodes"),  # fewer tasks than a batch of prompts
    ],
)
def test_a_disagreement_is_refused_and_the_fix_validates(override: str, key: str, sandbox: Path) -> None:  # noqa: F811
    overrides = [*HUB, override]
    code, out = _invoke("validate", *overrides)
    assert code == 2, out
    (error,) = [e for e in _errors(out) if e["key"] == key]
    fixed = apply_first_fix(overrides, error)
    assert fixed is not None, error
    code, after = _invoke("validate", *fixed)
    assert code == 0, f"after {fixed}:\n{after}"


def test_both_moved_together_are_accepted(sandbox: Path) -> None:  # noqa: F811
    moved = ["env.url=http://127.0.0.1:9010", f"env.command=[python3,-m,uvicorn,{APP},--port,'9010']"]
    code, out = _invoke("validate", *HUB, *moved)
    assert code == 0, out


def test_a_command_service_with_a_literal_port_elsewhere_is_refused(sandbox: Path) -> None:  # noqa: F811
    def service(port: str) -> str:
        command = f"[python3, -m, uvicorn, {APP}, --port, '{port}']"
        fields = f"kind: command, command: {command}, port: 8765, env_url_key: url, url_path: ''"
        return f"+services.env_server={{{fields}}}"

    overrides = [*HUB, "env.command=null", service("8766")]
    code, out = _invoke("validate", *overrides)
    assert code == 2, out
    (error,) = [e for e in _errors(out) if e["key"] == "services.env_server.port"]
    code, after = _invoke("validate", *apply_first_fix(overrides, error))
    assert code == 0, after
    code, out = _invoke("validate", *HUB, "env.command=null", service("{port}"))  # the port said once
    assert code == 0, out
