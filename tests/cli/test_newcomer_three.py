"""A newcomer's first hour, third pass: experiment files written by hand (the `# @package` header, the
defaults list's order, a tab), guesses at the command line (a flag other tools have, a key by its last
name, a list where one option goes) and help read at 80 columns (docs/reference/cli-behaviour.md,
"Mistakes in the first hour"). Each fix printed is applied as printed and must validate.
"""

from __future__ import annotations

import itertools
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer

from launch.cli.app import app
from tests.support.cli_app import invoke


def fix_of(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip().startswith("fix:")]
    assert len(lines) == 1, output
    return lines[0].removeprefix("fix:").strip()


def refused(argv: list[str]) -> str:
    result = invoke(["validate", *argv])
    assert result.exit_code == 2, result.output
    return result.output


def validates(argv: list[str]) -> None:
    result = invoke(["validate", *argv])
    assert result.exit_code == 0, result.output


def experiment(here: Path, name: str, content: bytes) -> list[str]:
    """`content` as mine/experiment/NAME.yaml; the arguments that choose it."""
    path = here / "mine" / "experiment" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return ["--config-dir", "mine", f"+experiment={name}"]


def run_fix(command: str, here: Path) -> None:
    """The shell command a fix prints, run as pasted."""
    done = subprocess.run(["bash", "-c", command], cwd=here, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


# ------------------------------------------------- an experiment's `# @package _global_` header

BODY = b"defaults:\n  - quickstart\nname: mine\n"


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (BODY, "has no `# @package _global_` line"),
        (b"# @package _global\n" + BODY, "says `# @package _global`"),
        (b"# @package: _global_\n" + BODY, "says `# @package: _global_`"),
        (b"# my first experiment\n# @package _global_\n" + BODY, "after other lines"),
        (BODY + b"# @package _global_\n", "after other lines"),
        (b"\xef\xbb\xbf# @package _global_\n" + BODY, "byte-order mark"),
    ],
    ids=["missing", "misspelt", "colon", "after-a-comment", "at-the-end", "bom"],
)
def test_an_experiment_whose_header_hydra_did_not_read_gets_the_header(
    here: Path, content: bytes, says: str
) -> None:
    """Hydra put the file's keys under `experiment.`: "unknown key 'experiment' at the top level", fixed
    by `+experiment=<…>` (already typed), or for `_global` the top-level keys listed."""
    argv = experiment(here, "mine", content)
    output = refused(argv)
    assert says in output and "mine/experiment/mine.yaml" in output, output
    assert "+experiment=<" not in output and "known keys" not in output, output
    run_fix(fix_of(output).partition(": ")[2], here)
    validates(argv)
    assert invoke(["show", *argv, "--explain", "name"]).output.startswith("name = mine")


def test_an_unknown_key_of_an_experiment_with_its_header_is_still_the_key(here: Path) -> None:
    output = refused(experiment(here, "mine", b"# @package _global_\n" + BODY + b"sed: 3\n"))
    assert "did you mean 'seed'?" in output and "@package" not in output, output


# ------------------------------------------------- --explain a key by its last name


def test_explain_of_a_key_by_its_last_name_names_the_whole_key(here: Path) -> None:
    """`--explain lr` listed the top-level keys: the learning rate is stages.train.curriculum.optimizer.lr."""
    result = invoke(["show", "+experiment=stage1_bfcl", "--explain", "lr"])
    assert result.exit_code == 2, result.output
    fix = fix_of(result.output)
    assert fix == "did you mean --explain stages.train.curriculum.optimizer.lr?", result.output
    shown = invoke(["show", "+experiment=stage1_bfcl", "--explain", fix.split()[-1].rstrip("?")])
    assert shown.exit_code == 0 and "optimizer.lr = " in shown.output, shown.output


# ------------------------------------------------- help read at 80 columns (a pipe, a narrow terminal)


def _commands(command: object, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(typer.main.get_command(app)))


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) or "t3rl" for p in COMMANDS])
def test_help_prose_is_wrapped_by_the_terminal_not_the_source(path: tuple[str, ...]) -> None:
    """Each line break of the docstring was kept: at 80 columns a line wrapped at 110 in the source
    printed as a full line and a stub (`/get_model_info); an engine` / `that does not answer, …`)."""
    output = invoke([*path, "--help"], COLUMNS="80").output
    prose = output.partition("╭")[0].splitlines()
    for line, following in itertools.pairwise(prose):
        continued = following.startswith(" ") and following.strip() and not following.startswith("  ")
        example = line.strip().startswith("t3rl ")  # rich takes a wrapped example's indent away
        if line.startswith(" ") and not line.startswith("  ") and continued and not example:
            assert len(line.strip()) >= 50, f"{line!r} is followed by {following!r}\n{output}"
