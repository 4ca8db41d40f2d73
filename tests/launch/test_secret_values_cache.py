"""`secret_values()` reads the environment's credentials once while the environment stays the same
(every printed line asks for them), and again as soon as a variable is set, changed or removed."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from launch.config import secrets

TOKEN = "hf_cache_test_value_51c0a9e2"


def test_the_environment_is_read_once_while_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    inner = secrets._environment_credentials

    def counting(env: Mapping[str, str]) -> frozenset[str]:
        reads.append(1)
        return inner(env)

    monkeypatch.setattr(secrets, "_environment_credentials", counting)
    monkeypatch.setenv("T3RL_CACHE_TEST_UNRELATED", "1")  # whatever an earlier test left cached
    for _ in range(3):
        secrets.secret_values()
    assert len(reads) == 1


def test_a_change_of_the_environment_is_seen_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    assert TOKEN not in secrets.secret_values()
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    assert TOKEN in secrets.secret_values()
    assert secrets.scrub_text(f"token {TOKEN}") == "token ***"
    monkeypatch.setenv("HF_TOKEN", TOKEN + "x")
    assert TOKEN + "x" in secrets.secret_values()
    monkeypatch.delenv("HF_TOKEN")
    assert not {TOKEN, TOKEN + "x"} & secrets.secret_values()


def test_a_given_environment_is_read_as_given() -> None:
    assert TOKEN in secrets.secret_values({"HF_TOKEN": TOKEN})
    assert TOKEN not in secrets.secret_values({"PATH": TOKEN})
