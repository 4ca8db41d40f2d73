"""A secret flag's value inside an override's text is remembered as a credential; a path that merely
holds `-credentials` (`~/.git-credentials`) makes nothing after it one. Before the flag had to start a
token, `env.sandbox.hidden_paths=[~/.git-credentials,~/.docker]` masked `~/.docker` in every message
(its fix too: `['~/.git-credentials',***]`), and pre-flight refused later configs of the same process
that held that path."""

from __future__ import annotations

import pytest

from launch.config import secrets


@pytest.fixture
def remembered(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    fresh: set[str] = set()
    monkeypatch.setattr(secrets, "_REMEMBERED", fresh)
    monkeypatch.setattr(secrets, "hide_from_own_command_line", lambda: False)
    return fresh


@pytest.mark.parametrize(
    "override",
    [
        "env.sandbox.hidden_paths=[~/.ssh,~/.git-credentials,~/.docker]",
        "env.sandbox.hidden_paths=['/home/u/.git-credentials', '/home/u/.docker']",
        "+stages.eval.eval.server.extra_args=[--port,30000,--log-file,/var/log/my-token-cache]",
        "name=run-password-free",
    ],
)
def test_a_flag_inside_a_word_makes_no_credential(override: str, remembered: set[str]) -> None:
    secrets.remember_overrides([override])
    assert remembered == set()


@pytest.mark.parametrize(
    ("override", "value"),
    [
        ("+stages.eval.eval.server.extra_args=[--api-key,abcdefgh123]", "abcdefgh123"),
        ("+stages.eval.eval.server.extra_args=['--api-key', 'abcdefgh123']", "abcdefgh123"),
        ("+stages.eval.eval.server.extra_args=[--api-key=abcdefgh123]", "abcdefgh123"),
        ("+services.x.extra_args='--port 1 --token abcdefgh123'", "abcdefgh123"),
        ("+services.x.extra_args=(-password,abcdefgh123)", "abcdefgh123"),
    ],
)
def test_a_secret_flags_value_is_remembered(override: str, value: str, remembered: set[str]) -> None:
    secrets.remember_overrides([override])
    assert value in remembered
    assert "***" in secrets.scrub_text(f"command {value} ran")
