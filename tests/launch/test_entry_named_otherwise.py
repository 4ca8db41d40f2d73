"""An override of a group's entry under a name the defaults list does not give it (`model@model=x`,
`model@foo=x`, a file's `override /model@foo: x`): Hydra's "Could not override 'model@model'. Did you
mean to override model? To append to your default list use +model@model=x" was shown as it is, blamed
on "(schema default)" and with no fix. The answer names the override (or the file), the entry meant
and a fix that validates."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_app import fix_of, refused, validates
from tests.support.fix_applier import apply_first_fix

BASE = ["+experiment=stage1_bfcl"]


def _error(output: str) -> dict[str, str]:
    lines = [line.strip() for line in output.splitlines()]
    first = next(i for i, line in enumerate(lines) if line.startswith("error "))
    return {
        "message": lines[first].partition(": ")[2],
        "source": lines[first + 1].removeprefix("set in: "),
        "fix": fix_of(output),
    }


@pytest.mark.parametrize(
    "typed",
    [
        ["model@model=qwen3_4b"],
        ["model@foo=qwen3_4b"],
        ["model@model=qwen3_4b", "model=qwen3_8b"],
        ["model=qwen3_8b", "model@model=qwen3_4b"],
        ["reward@reward=binary"],
    ],
)
def test_an_entry_overridden_under_another_name_is_answered_with_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, typed: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = [*BASE, *typed]
    output = refused(argv)
    wrong = next(t for t in typed if "@" in t)
    assert "schema default" not in output and "To append" not in output, output
    assert f"set in: override `{wrong}`" in output, output
    assert "names no entry of the defaults list" in output, output
    fixed = apply_first_fix(argv, _error(output))
    assert fixed is not None and wrong not in fixed, output
    validates(fixed)


def test_a_files_defaults_list_is_blamed_with_the_entrys_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    own = tmp_path / "conf" / "experiment"
    own.mkdir(parents=True)
    mine = own / "mine.yaml"
    mine.write_text(
        "# @package _global_\ndefaults:\n  - /experiment/stage1_bfcl\n  - override /model@foo: qwen3_4b\n"
    )
    argv = ["--config-dir", str(tmp_path / "conf"), "+experiment=mine"]
    output = refused(argv)
    assert "schema default" not in output and "set in: experiment/mine.yaml" in output, output
    fix = fix_of(output)
    assert "`override /model: <option>`" in fix, output
    mine.write_text(mine.read_text().replace("/model@foo:", "/model:"))
    validates(argv)
