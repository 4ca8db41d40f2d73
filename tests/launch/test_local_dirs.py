"""A directory t3rl writes into (an `OutputDir` field) that cannot be created or written is refused at
pre-flight, when the stages run on this machine; a directory it uploads (an `UploadDir`) must be here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import typer
from test_preflight import _errors, _invoke, sandbox  # noqa: F401  (sandbox is a fixture)

from launch.cli.app import app
from launch.config.schema import PathsConfig
from t3rl_core.fields import StrKind
from tests.support.fix_applier import apply_first_fix

QS = "+experiment=quickstart"


def test_the_directories_t3rl_writes_are_declared_as_such() -> None:
    kinds = {
        name: next(m.name for m in field.metadata if isinstance(m, StrKind))
        for name, field in PathsConfig.model_fields.items()
        if any(isinstance(m, StrKind) for m in field.metadata)
    }
    assert {n for n, k in kinds.items() if k == "output dir"} == {
        "runs_dir",
        "plans_dir",
        "checkpoints_dir",
        "cache_dir",
    }


@pytest.mark.parametrize(
    "key", ["paths.runs_dir", "paths.plans_dir", "paths.checkpoints_dir", "paths.cache_dir"]
)
@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_a_file_where_a_directory_is_written_is_refused(key: str, where: str, sandbox: Path) -> None:  # noqa: F811
    blocker = sandbox / "blocker"
    blocker.write_text("not a directory\n")
    target = blocker if where == "a file" else blocker / "sub" / "dir"
    overrides = [QS, f"{key}={target}"]
    # A plan's dir is judged by the command that writes it; validate judges what a run writes.
    command = "plan" if key == "paths.plans_dir" else "validate"
    code, out = _invoke(command, *overrides)
    assert code == 2, out
    (error,) = [e for e in _errors(out) if e["key"] == key]
    assert str(blocker) in error["message"], out
    fixed = apply_first_fix(overrides, error)
    assert fixed is not None
    code, after = _invoke(command, *fixed)
    assert code == 0, f"after {fixed}:\n{after}"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_tree_is_refused(sandbox: Path) -> None:  # noqa: F811
    locked = sandbox / "locked"
    locked.mkdir(mode=0o555)
    code, out = _invoke("validate", QS, f"paths.runs_dir={locked / 'runs'}")
    assert code == 2 and "is not writable" in out, out


def test_missing_directories_that_can_be_created_and_cluster_paths_are_accepted(sandbox: Path) -> None:  # noqa: F811
    code, out = _invoke("validate", QS, f"paths.checkpoints_dir={sandbox / 'new' / 'a' / 'b'}")
    assert code == 0, out
    blocker = sandbox / "blocker"
    blocker.write_text("x")
    # Under slurm the paths are the cluster's: nothing here says whether they can be written there.
    code, out = _invoke(
        "validate", "+experiment=stage1_bfcl", "executor=slurm", f"paths.checkpoints_dir={blocker}"
    )
    assert not [e for e in _errors(out) if e["key"] == "paths.checkpoints_dir"], out


@pytest.mark.parametrize("what", ["missing", "a file"])
def test_a_working_dir_to_upload_must_be_here(what: str, sandbox: Path) -> None:  # noqa: F811
    path = sandbox / "code"
    if what == "a file":
        path.write_text("x")
    overrides = ["+experiment=stage1_bfcl", "executor=ray", f"executor.working_dir={path}"]
    code, out = _invoke("validate", *overrides)
    assert code == 2, out
    (error,) = [e for e in _errors(out) if e["key"] == "executor.working_dir"]
    code, after = _invoke("validate", *apply_first_fix(overrides, error))
    assert code == 0, after


def test_a_working_dir_that_is_here_or_remote_is_accepted(sandbox: Path) -> None:  # noqa: F811
    (sandbox / "code").mkdir()
    for value in (str(sandbox / "code"), "s3://bucket/code.zip"):
        code, out = _invoke(
            "validate", "+experiment=stage1_bfcl", "executor=ray", f"executor.working_dir={value}"
        )
        assert code == 0, out


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="no /proc here")
@pytest.mark.parametrize(
    "overrides",
    [["paths.runs_dir=/proc/t3rl-runs"], ["tracking=tensorboard", "tracking.dir=/proc/t3rl-events/tb"]],
    ids=["runs_dir", "tracking.dir"],
)
def test_a_directory_the_kernel_refuses_is_refused_whatever_its_mode_says(
    overrides: list[str],
    sandbox: Path,  # noqa: F811
) -> None:
    # /proc's mode lets root write (access() says yes), but nothing can be made in it: only making a
    # directory there tells, as the run's first write would.
    key = overrides[-1].split("=")[0]
    given = [QS, *overrides]
    code, out = _invoke("validate", *given)
    assert code == 2, out
    (error,) = [e for e in _errors(out) if e["key"] == key]
    assert "/proc" in error["message"] and "cannot be created" in error["message"], out
    fixed = apply_first_fix(given, error)
    assert fixed is not None
    code, after = _invoke("validate", *fixed)
    assert code == 0, f"after {fixed}:\n{after}"


def test_the_write_probe_leaves_nothing_behind(sandbox: Path) -> None:  # noqa: F811
    # One directory that is missing (probed in its parent), one that exists (probed in itself).
    missing_parent, existing = sandbox / "parent", sandbox / "checkpoints"
    for directory in (missing_parent, existing):
        directory.mkdir()
        (directory / "kept").write_text("x")
    code, out = _invoke(
        "validate", QS, f"paths.runs_dir={missing_parent / 'runs'}", f"paths.checkpoints_dir={existing}"
    )
    assert code == 0, out
    for directory in (missing_parent, existing):
        assert sorted(p.name for p in directory.iterdir()) == ["kept"]


def test_a_tracking_dir_no_tracker_reads_is_not_probed(sandbox: Path) -> None:  # noqa: F811
    code, out = _invoke("validate", QS, "tracking.dir=/proc/t3rl-events")
    assert code == 0, out
    assert not [e for e in _errors(out) if e["key"] == "tracking.dir"], out


def _commands_with_out() -> set[str]:
    """Every `t3rl` command (as typed) that has an --out option."""
    found = set()

    def walk(command: Any, path: str) -> None:
        if hasattr(command, "list_commands"):  # a group (Typer's own click, not the click package's)
            context = type(command).context_class(command)
            for name in command.list_commands(context):
                walk(command.get_command(context, name), f"{path} {name}".strip())
        elif any("--out" in param.opts for param in command.params):
            found.add(path)

    walk(typer.main.get_command(app), "")
    return found


# Each command with --out DIR, as a newcomer types it with a directory that cannot be made: the
# arguments before --out, the exit code, and what the message says. A new command with --out fails
# test_every_out_option_is_probed until it is added here.
OUT_COMMANDS = {
    "eval": (
        ["eval", QS, "--engine", "reference", "--limit-per-category", "1"],
        2,
        "Invalid value for --out",
    ),
    "score": (["score", "bfcl", "{file}"], 2, "Invalid value for --out"),
    "data bfcl": (["data", "bfcl"], 2, "Invalid value for --out"),
    # The plain path of `t3rl plan` (no Typer): exit 1, "the plan dir cannot be used" (its --help).
    "plan": (["plan", QS], 1, "--out /proc/t3rl-out"),
}


def test_every_out_option_is_probed() -> None:
    assert _commands_with_out() == set(OUT_COMMANDS)


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="no /proc here")
@pytest.mark.parametrize("command", sorted(OUT_COMMANDS))
def test_an_out_dir_the_kernel_refuses_is_named_before_any_work(command: str, sandbox: Path) -> None:  # noqa: F811
    # Before, each ended on its first mkdir with "No such file or directory … check the path", naming
    # neither the option nor what refused it.
    scored = sandbox / "trajectories.jsonl"
    scored.write_text('{"task_id": "x"}\n')
    # What the command may write before it reads --out: the compose cache (`t3rl plan`'s config).
    cache = sandbox / "cache"
    before = {str(p) for p in sandbox.rglob("*") if p != cache and cache not in p.parents}
    args, code, said = OUT_COMMANDS[command]
    exit_code, out = _invoke(*(a.format(file=scored) for a in args), "--out", "/proc/t3rl-out")
    assert exit_code == code, out
    assert said in out and "cannot be created: making a directory in /proc fails" in out, out
    assert {str(p) for p in sandbox.rglob("*") if p != cache and cache not in p.parents} == before, out


def test_scores_written_next_to_a_file_in_a_directory_that_refuses_them_are_refused_first(
    sandbox: Path,  # noqa: F811
) -> None:
    # No --out: the verdicts go next to FILE (/proc/self/…, where nothing can be made).
    code, out = _invoke("score", "bfcl", "/proc/self/environ")
    assert code == 2 and "Invalid value for --out" in out and "/proc/self/environ.scored" in out, out
