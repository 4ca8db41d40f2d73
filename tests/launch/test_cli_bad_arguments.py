"""Every subcommand given no arguments, a path that does not exist, a garbage file or a bad option value
ends with a message and an exit code (docs/reference/cli-behaviour.md), never a traceback, and leaves
nothing behind: no run dir, no plan dir, no eval record, no empty `runs/`.

In process through the Typer app (CliRunner), plus the plain `t3rl run|plan|validate` path that
`launch.cli.main` takes without Typer. None of these commands gets far enough to prepare data or load a
model: each case costs a composition at most.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch import cli
from launch.cli.app import app
from tests.support.no_slime import no_slime_workdir

GARBAGE = "garbage{{\n\x00not json, yaml, torch or a config\n"
# Where each case's files live, relative to its working directory (each test starts in an empty one).
NOWHERE = "no/such/path"

# (id, argv, expected exit code, what the message must say). "{garbage}" is a garbage file here.
CASES: list[tuple[str, list[str], int, str]] = [
    # ---- no arguments
    ("run", ["run"], 2, "no stages"),
    ("plan", ["plan"], 2, "no stages"),
    ("validate", ["validate"], 0, "no stages"),  # a valid config; the warning says run would refuse it
    ("data", ["data"], 2, "Usage"),
    ("data-bfcl", ["data", "bfcl"], 2, "--out"),
    ("eval", ["eval"], 2, "eval.engine.url"),
    ("runs-show", ["runs", "show"], 2, "RUN_DIR"),
    ("runs-diff", ["runs", "diff"], 2, "A"),
    ("rollouts", ["rollouts"], 2, "Usage"),
    ("rollouts-show", ["rollouts", "show"], 2, "FILE|DIR"),
    ("score", ["score"], 2, "WORLD"),
    ("check-template", ["check-template"], 2, "MODEL"),
    # ---- a path that does not exist
    ("run-run-dir", ["run", "--run-dir", NOWHERE], 1, "not a run dir"),
    ("plan-run-dir", ["plan", "--run-dir", NOWHERE], 1, "not a run dir"),
    ("run-config-dir", ["run", "--config-dir", NOWHERE, "+experiment=quickstart"], 2, "does not exist"),
    ("validate-config-dir", ["validate", "--config-dir", NOWHERE], 2, "does not exist"),
    ("show-config-dir", ["show", "--config-dir", NOWHERE], 2, "does not exist"),
    ("ls-config-dir", ["ls", "--config-dir", NOWHERE], 2, "does not exist"),
    ("data-config-dir", ["data", "bfcl", "--out", "d", "--config-dir", NOWHERE], 2, "does not exist"),
    (
        "eval-data",
        ["eval", "+experiment=quickstart", "--engine", "reference", "--data", NOWHERE],
        2,
        "no eval data",
    ),
    (
        "eval-runtime-config",
        ["eval", "--runtime-config", NOWHERE, "--engine", "reference"],
        2,
        "does not exist",
    ),
    ("runs-runs-dir", ["runs", "--runs-dir", NOWHERE], 2, "no runs dir"),
    ("runs-show-path", ["runs", "show", NOWHERE], 1, "not a t3rl run dir"),
    ("runs-diff-path", ["runs", "diff", NOWHERE, NOWHERE], 1, "not a t3rl run dir"),
    ("rollouts-show-path", ["rollouts", "show", NOWHERE], 2, "does not exist"),
    ("score-path", ["score", "bfcl", NOWHERE], 2, "is not a file"),
    ("score-data", ["score", "bfcl", "{garbage}", "--data", NOWHERE], 2, "is not a file"),
    ("check-template-tokenizer", ["check-template", "qwen3_8b", "--tokenizer", NOWHERE], 2, "tokenizer"),
    # ---- a garbage file where a path is expected
    ("run-run-dir-file", ["run", "--run-dir", "{garbage}"], 1, "not a run dir"),
    ("plan-out-file", ["plan", "--out", "{garbage}", "+experiment=quickstart"], 1, "is a file"),
    ("validate-config-dir-file", ["validate", "--config-dir", "{garbage}"], 2, "is a file"),
    ("data-out-file", ["data", "bfcl", "--out", "{garbage}"], 2, "is a file"),
    (
        "eval-runtime-config-file",
        ["eval", "--runtime-config", "{garbage}", "--engine", "reference"],
        2,
        "runtime",
    ),
    (
        "eval-data-file",
        ["eval", "+experiment=quickstart", "--engine", "reference", "--data", "{garbage}"],
        2,
        "not JSON",
    ),
    (
        "eval-out-file",
        ["eval", "+experiment=quickstart", "--engine", "reference", "--out", "{garbage}"],
        2,
        "is a file",
    ),
    ("runs-runs-dir-file", ["runs", "--runs-dir", "{garbage}"], 2, "no runs dir"),
    ("runs-show-file", ["runs", "show", "{garbage}"], 1, "not a t3rl run dir"),
    ("rollouts-show-file", ["rollouts", "show", "{garbage}"], 2, "not a file torch.save wrote"),
    (
        "rollouts-show-trusted-file",
        ["rollouts", "show", "{garbage}", "--trust"],
        2,
        "not a file torch.save wrote",
    ),
    ("score-file", ["score", "bfcl", "{garbage}", "--out", "scored"], 1, "line 1"),
    ("check-template-file", ["check-template", "{garbage}"], 2, "model"),
    # ---- a bad option value
    ("run-from", ["run", "+experiment=quickstart", "--from", "nosuch"], 2, "no such stage"),
    ("run-preflight", ["run", "+experiment=stage1_bfcl"], 1, "cannot run the plan"),  # no slime here
    ("plan-only", ["plan", "+experiment=quickstart", "--only", "nosuch"], 2, "no such stage"),
    (
        "run-override",
        ["run", "+experiment=quickstart", "hardware.tensor_parallel=many"],
        2,
        "tensor_parallel",
    ),
    ("show-explain", ["show", "+experiment=quickstart", "--explain", "nosuch.key"], 2, "no such key"),
    ("ls-group", ["ls", "nosuch"], 2, "no config group"),
    ("data-override", ["data", "bfcl", "--out", "d", "env.data.seed=many"], 2, "env.data.seed"),
    ("eval-k", ["eval", "+experiment=quickstart", "--engine", "reference", "--k", "0"], 2, "--k"),
    (
        "eval-limit",
        ["eval", "+experiment=quickstart", "--engine", "reference", "--limit-per-category", "-1"],
        2,
        "--limit-per-category",
    ),
    ("eval-engine", ["eval", "+experiment=quickstart", "--engine", "nosuch"], 2, "--engine"),
    ("eval-url", ["eval", "+experiment=quickstart", "--url", "not a url"], 2, "--url"),
    ("eval-stage", ["eval", "+experiment=quickstart", "--stage", "nosuch"], 2, "--stage"),
    ("runs-status", ["runs", "--status", "sucess"], 2, "did you mean 'succeeded'"),
    ("runs-where", ["runs", "--where", "nonsense"], 2, "--where"),
    ("runs-metric", ["runs", "--metric", "overall.acuracy"], 2, "did you mean"),
    ("rollouts-limit", ["rollouts", "show", "{garbage}", "--limit", "-1"], 2, "--limit"),
    ("rollouts-width", ["rollouts", "show", "{garbage}", "--width", "0"], 2, "--width"),
    ("score-world", ["score", "nosuch", "{garbage}"], 2, "WORLD"),
    ("score-mode", ["score", "bfcl", "{garbage}", "--mode", "nosuch"], 2, "--mode"),
    ("check-template-override", ["check-template", "qwen3_8b", "model.chat.nosuch=1"], 2, "nosuch"),
]

# What a case may leave besides the garbage file: `score` keeps its verdicts (which lines failed).
KEPT = {"score-file": {"scored", "scored/verdicts.jsonl", "scored/summary.json"}}


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working dir with the default runs and plans dirs under it, and no slime checkout."""
    return no_slime_workdir(tmp_path / "work", monkeypatch)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _argv(argv: list[str], here: Path) -> list[str]:
    if any("{garbage}" in a for a in argv):
        (here / "garbage.txt").write_text(GARBAGE)
    return [a.replace("{garbage}", "garbage.txt") for a in argv]


@pytest.mark.parametrize(("argv", "code", "says"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_command_line_says_why_and_leaves_nothing(
    here: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    code: int,
    says: str,
) -> None:
    # No synthetic model is built in this session's cache (the check has its own test): the eval's own
    # refusal is what is checked.
    monkeypatch.setattr("launch.cli.eval_command._check_tokenizer", lambda *args: None)
    argv = _argv(argv, here)
    before = _files(here)
    result = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), (
        f"{type(result.exception).__name__}: {result.exception}\n{result.output}"
    )
    assert "Traceback" not in result.output, result.output
    assert result.exit_code == code, result.output
    assert says in result.output, result.output
    assert _files(here) - before <= KEPT.get(request.node.callspec.id, set()), result.output


@pytest.mark.parametrize(
    ("argv", "code"), [(["run"], 2), (["plan"], 2), (["validate"], 0), (["run", "name=x"], 2)]
)
def test_the_plain_path_says_the_same(
    here: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], argv: list[str], code: int
) -> None:
    """`t3rl run|plan|validate OVERRIDES…` skips Typer (launch.cli.run_plain): same message, same code."""
    monkeypatch.setenv("T3RL_COMPOSE_AHEAD", "0")
    monkeypatch.setattr(sys, "argv", ["t3rl", *argv])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    out, err = capfd.readouterr()
    assert exit_.value.code == code and "no stages" in out + err and "Traceback" not in out + err
    assert os.listdir(here) == []


def test_eval_of_a_synthetic_model_not_built_yet_exits_2_naming_the_stage(tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from launch.cli.app import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "empty-cache"))
    result = CliRunner().invoke(app, ["eval", "+experiment=quickstart", "--engine", "hf"])
    assert result.exit_code == 2, result.output
    assert "does not exist yet" in result.output and "t3rl run +experiment=quickstart" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "runs").exists()
