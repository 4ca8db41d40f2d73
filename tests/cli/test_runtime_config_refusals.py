"""`t3rl eval --runtime-config FILE` that cannot be read names what is wrong and where: each invalid key
(was: "4 validation errors for RuntimeConfig", no key named), a YAML error's line and column (was: "while
parsing a flow sequence", no place)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_app import invoke


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("env: {name: bfcl}\n", ["env: Value error, unknown env 'bfcl'", "reward: Field required"]),
        ("a: [1\n", ["at line 2, column 1"]),
        ("- 1\n", ["not a mapping"]),
    ],
    ids=["invalid-keys", "yaml-error", "a-list"],
)
def test_an_unreadable_runtime_config_is_explained(here: Path, text: str, named: list[str]) -> None:
    (here / "r.yaml").write_text(text)
    result = invoke(["eval", "--runtime-config", "r.yaml"], COLUMNS="1000")
    assert result.exit_code == 2, result.output
    for words in named:
        assert words in result.output, result.output
    assert sorted(p.name for p in here.iterdir()) == ["r.yaml"]
