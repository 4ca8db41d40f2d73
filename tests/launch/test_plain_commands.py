"""`t3rl plan|run|validate OVERRIDES…` without options skips the Typer app (a cold-start cost); it must
behave exactly as the Typer command does: same output, same errors, same exit code."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

import launch.cli as cli
from launch.cli import is_plain

REPO = Path(__file__).resolve().parents[2]
# Prints whether Typer was imported, after the command ran (atexit), on stderr's last line.
PROBE = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('typer imported:', 'typer' in sys.modules, file=sys.stderr))\n"
)


@pytest.mark.parametrize(
    ("args", "plain"),
    [
        (["validate", "+experiment=stage2_bfcl"], True),
        (["plan", "+experiment=stage2_bfcl", "hardware.tensor_parallel=2"], True),
        (["run"], True),
        (["validate", "+experiment=stage2_bfcl", "--config-dir", "x"], False),
        (["plan", "-m", "reward=progress,binary"], False),
        (["plan", "--help"], False),
        (["show", "+experiment=stage2_bfcl"], False),
        (["--version"], False),
        ([], False),
    ],
)
def test_only_option_free_plan_run_validate_are_plain(args: list[str], plain: bool) -> None:
    assert is_plain(args) is plain


def test_a_completion_request_goes_through_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_T3RL_COMPLETE", "complete_bash")
    assert not is_plain(["validate", "+experiment=stage2_bfcl"])


def _run(code: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_")}
    env |= {"PYTHONPATH": str(REPO), "T3RL_NO_CACHE": "1", "COLUMNS": "200"}
    argv = [sys.executable, "-c", PROBE + code, *args]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def _plain(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return _run("sys.argv[0] = 't3rl'\nfrom launch.cli import main\nmain()", args, cwd)


def _typer(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return _run("sys.argv[0] = 't3rl'\nfrom launch.cli.app import app\napp()", args, cwd)


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "+experiment=stage2_bfcl"],
        # a cross-field error, a schema error and an unknown experiment: exit code 2, the same report
        ["validate", "+experiment=stage2_bfcl", "hardware.tensor_parallel=3"],
        ["plan", "+experiment=stage2_bfcl", "model.nonexistent=1"],
        ["run", "+experiment=stage2_bfcl", "hardware.nodes=0"],
        ["validate", "+experiment=no_such_experiment"],
    ],
)
def test_the_plain_path_answers_as_the_typer_command_does(args: list[str], tmp_path: Path) -> None:
    plain, typer = _plain(args, tmp_path), _typer(args, tmp_path)
    assert plain.returncode == typer.returncode, (plain.stderr, typer.stderr)
    assert plain.stdout == typer.stdout
    *plain_err, plain_probe = plain.stderr.splitlines()
    *typer_err, typer_probe = typer.stderr.splitlines()
    assert plain_err == typer_err
    assert plain_probe == "typer imported: False" and typer_probe == "typer imported: True"


def test_a_plain_plan_writes_the_same_plan(tmp_path: Path) -> None:
    args = ["plan", "+experiment=stage2_bfcl"]
    plain = _plain([*args], tmp_path)
    first = set((tmp_path / "plans" / "stage2_bfcl").iterdir())
    typer = _typer([*args], tmp_path)
    assert plain.returncode == typer.returncode == 0, (plain.stderr, typer.stderr)
    (a,) = first
    (b,) = set((tmp_path / "plans" / "stage2_bfcl").iterdir()) - first
    assert (a / "plan.sh").read_text().replace(str(a), "<plan>") == (b / "plan.sh").read_text().replace(
        str(b), "<plan>"
    )
    files = [sorted(p.relative_to(d) for p in d.rglob("*")) for d in (a, b)]
    assert files[0] == files[1]


def test_a_plain_plan_or_validate_runs_without_the_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    """They end without starting a stage; a plain run keeps the collector for its stages."""
    collecting: dict[str, bool] = {}

    def run_plain(command: str, overrides: list[str]) -> int:
        collecting[command] = gc.isenabled()
        return 0

    monkeypatch.setattr(cli, "run_plain", run_plain)
    monkeypatch.setattr(gc, "freeze", lambda: None)  # main() freezes this process's heap at its end
    try:
        for command in ("plan", "validate", "run"):
            monkeypatch.setattr(sys, "argv", ["t3rl", command, "+experiment=stage2_bfcl"])
            with pytest.raises(SystemExit):
                cli.main()
            gc.enable()
    finally:
        gc.enable()
    assert collecting == {"plan": False, "validate": False, "run": True}
