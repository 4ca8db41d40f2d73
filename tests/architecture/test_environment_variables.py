"""t3rl_core.environment_variables is the one list of the T3RL_* variables t3rl reads: every name the
sources read is in it, every name in it is read, docs/reference/environment.md shows it, and a T3RL_*
variable set in the environment that nothing reads is warned about with the name meant."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from t3rl_core.environment_variables import VARIABLES
from tests.support.cli_app import invoke

REPO = Path(__file__).resolve().parents[2]
# A name read as a variable: quoted, after `$`/`${` (shell) or `oc.env:` (a config file), never a
# Python constant spelt alike (`_T3RL_STAGES = (…)`).
READ = re.compile(r"""(?:["'{$]|oc\.env:)(T3RL_[A-Z0-9_]+)""")
SOURCES = ("launch", "t3rl_core", "conf", "scripts", "benchmarks")


def _read_names() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder in SOURCES:
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix in (".py", ".yaml", ".sh") and "__pycache__" not in path.parts:
                for name in READ.findall(path.read_text(encoding="utf-8")):
                    found.setdefault(name, path.relative_to(REPO))
    return found


def test_every_variable_the_sources_read_is_declared_and_every_declared_one_is_read() -> None:
    read = _read_names()
    assert {name: str(path) for name, path in read.items() if name not in VARIABLES} == {}
    assert sorted(set(VARIABLES) - set(read)) == []


def test_the_reference_page_is_the_list() -> None:
    page = (REPO / "docs" / "reference" / "environment.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(T3RL_[A-Z0-9_]+)` \| (.*) \|$", page, re.MULTILINE))
    assert rows == VARIABLES


def test_a_variable_nothing_reads_is_warned_with_the_one_meant(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("T3RL_RUN_DIR", "elsewhere")
    monkeypatch.setenv("T3RL_RUNS_DIR", "runs")
    result = invoke(["validate", "+experiment=quickstart"])
    assert result.exit_code == 0, result.output
    says = "t3rl reads no environment variable T3RL_RUN_DIR (it changes nothing); it reads T3RL_RUNS_DIR"
    assert f"warning $T3RL_RUN_DIR: {says}" in result.output, result.output
    assert "fix: export T3RL_RUNS_DIR=<what T3RL_RUN_DIR says> and unset T3RL_RUN_DIR" in result.output
    assert "$T3RL_RUNS_DIR" not in result.output  # a variable t3rl reads is no warning


def test_a_name_of_ones_own_is_no_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's credential variable (`env:T3RL_HF_TOKEN`) or a test's is read by what names it."""
    monkeypatch.setenv("T3RL_HF_TOKEN", "hf_not_a_real_token_0123456789")
    monkeypatch.setenv("T3RL_TEST_SHARED_DIR", "/tmp/x")
    result = invoke(["validate", "+experiment=quickstart"])
    assert result.exit_code == 0 and "environment variable" not in result.output, result.output
