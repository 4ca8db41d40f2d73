"""`t3rl plan|run|validate OVERRIDES…` without options skips the Typer app (a cold-start cost); it must
behave exactly as the Typer command does: same output, same errors, same exit code."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import launch.cli as cli
from launch.cli import is_plain

REPO = Path(__file__).resolve().parents[2]
# One fresh interpreter runs a command line twice: first the plain path, as `t3rl` runs it, reading and
# writing the process's own stdout and stderr (pipes to the test); then, in the same process, the Typer
# app, its stdout and stderr moved onto the files named by argv[1] and argv[2] (its exit code, and
# whether Typer is imported then, go to argv[3]). The plain path must not import Typer, so whether it
# did is asked between the two, on stderr's last line. One process for both paths, not one each: the
# Typer path reuses what the plain one imported (the module's CPU 8.9 -> 4.4 s), and the plain path,
# the one whose start-up is at stake, still runs in a fresh interpreter.
BOTH = """\
import os, sys

def ended(done):
    # The exit code `sys.exit(done.code)` gives a process; a text is printed and means 1, as there.
    if done.code is None or isinstance(done.code, int):
        return done.code or 0
    print(done.code, file=sys.stderr)
    return 1

out, err, code_file, *args = sys.argv[1:]
sys.argv = ['t3rl', *args]
from launch.cli import main
try:
    main()
except SystemExit as done:
    plain = ended(done)
print('typer imported:', 'typer' in sys.modules, file=sys.stderr)
sys.stdout.flush()
sys.stderr.flush()
for fd, path in ((1, out), (2, err)):
    os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
sys.argv = ['t3rl', *args]
from launch.cli.app import app
try:
    app()
    typer = 0
except SystemExit as done:
    typer = ended(done)
sys.stdout.flush()
sys.stderr.flush()
open(code_file, 'w').write(f"{typer} {'typer' in sys.modules}")
sys.exit(plain)
"""


@dataclass(frozen=True)
class Answer:
    """What one path of a command line wrote and how it ended."""

    returncode: int
    stdout: str
    stderr: str


def _plain_and_typer(args: list[str], cwd: Path) -> tuple[Answer, Answer]:
    """The command line's answer on the plain path (its stderr ending with whether Typer was imported)
    and on the Typer app's, from one fresh interpreter in `cwd`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_")}
    env |= {"PYTHONPATH": str(REPO), "T3RL_NO_CACHE": "1", "COLUMNS": "200"}
    typer_files = [cwd.parent / f"{cwd.name}.typer.{name}" for name in ("out", "err", "code")]
    argv = [sys.executable, "-c", BOTH, *map(str, typer_files), *args]
    plain = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    out, err, code = typer_files
    assert code.exists(), f"the Typer path ended without its exit code:\n{err.read_text()[-3000:]}"
    ended, imported = code.read_text().split()
    assert imported == "True"  # the question the plain path is asked sees Typer once it is imported
    return Answer(plain.returncode, plain.stdout, plain.stderr), Answer(
        int(ended), out.read_text(), err.read_text()
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
    work = tmp_path / "work"
    work.mkdir()
    plain, typer = _plain_and_typer(args, work)
    assert plain.returncode == typer.returncode, (plain.stderr, typer.stderr)
    assert plain.stdout == typer.stdout
    *plain_err, plain_probe = plain.stderr.splitlines()
    assert plain_err == typer.stderr.splitlines()
    assert plain_probe == "typer imported: False"


def test_a_plain_plan_writes_the_same_plan(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    plain, typer = _plain_and_typer(["plan", "+experiment=stage2_bfcl"], work)
    assert plain.returncode == typer.returncode == 0, (plain.stderr, typer.stderr)
    a, b = (work / "plans" / "stage2_bfcl").iterdir()
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
