"""A newcomer's first hour, second pass: mistakes whose answer named the wrong key, quoted Hydra or no
fix, or blamed the wrong override (docs/reference/cli-behaviour.md, "Mistakes in the first hour").
Each fix printed is run again and must validate.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from tests.support.cli_app import fix_of, invoke, refused, validates

REPO = Path(__file__).resolve().parents[2]


# ------------------------------------------------- a misspelt group is answered with the group, not a key


@pytest.mark.parametrize(
    "typed",
    [
        ["+experimnt=quickstart"],
        ["experimnt=quickstart"],
        ["+experiment_=quickstrt"],
        ["--experiment", "quickstart"],
        ["--experiment=quickstart"],
    ],
    ids=["plus", "no-plus", "option-misspelt-too", "dash-option", "dash-option-equals"],
)
def test_a_misspelt_experiment_group_is_answered_with_the_group(here: Path, typed: list[str]) -> None:
    """`+experimnt=quickstart` was answered "did you mean 'next_experiment'?", a key that takes the name of
    the experiment to plan next, not the one to run."""
    output = refused(typed)
    fix = fix_of(output)
    assert "next_experiment" not in output and "+experiment=quickstart" in fix, output
    validates(["+experiment=quickstart"])


def test_a_misspelt_top_level_key_still_gets_the_key(here: Path) -> None:
    output = refused(["+experiment=quickstart", "rewrd=binary"])
    assert "reward=binary" in fix_of(output), output
    output = refused(["+experiment=quickstart", "+nam=mine"])
    assert "name=mine" in fix_of(output) and "config group" not in output, output


# ------------------------------------------------- a group added with '+' that the defaults list holds


@pytest.mark.parametrize(
    ("typed", "key", "fixed"),
    [
        ("+reward=binary", "reward", "reward=binary"),
        ("+model=qwen3_8b", "model", "model=qwen3_8b"),
        ("++reward=binary", "reward", "reward=binary"),
        ("+user_sim=llm", "user_sim", "user_sim=llm"),
        ("++experiment=quickstart", "experiment", "+experiment=quickstart"),
    ],
)
def test_a_group_added_again_names_the_override_and_drops_the_plus(
    here: Path, typed: str, key: str, fixed: str
) -> None:
    """Hydra's "Multiple values for reward. To override a value use 'override reward: binary'" (a defaults
    list's syntax), blamed on "(schema default)" with no fix."""
    base = {"experiment": [], "user_sim": ["+experiment=tau2_pipeline"]}.get(key, ["+experiment=quickstart"])
    output = refused([*base, typed])
    assert f"error {key}:" in output and f"set in: override `{typed}`" in output, output
    assert "schema default" not in output and "Multiple values" not in output, output
    fix = fix_of(output)
    assert fix.endswith(fixed), output
    validates([*base, fix.rpartition(" ")[2]])


# ------------------------------------------------- the last of two choices of a group is the one named


def test_the_override_that_chose_a_group_is_the_last_one_given(here: Path) -> None:
    """`model=qwen3_8b model=qwen3_4b` composes qwen3_4b (Hydra applies the last), but `validate` and
    `show --explain` said it was "chosen by override `model=qwen3_8b`"."""
    result = invoke(
        ["show", "--explain", "model.name", "+experiment=stage1_bfcl", "model=qwen3_8b", "model=qwen3_4b"]
    )
    assert result.exit_code == 0, result.output
    assert "qwen3_4b" in result.output and "chosen by override `model=qwen3_4b`" in result.output, (
        result.output
    )
    # named only by the warning that it was replaced (tests/cli/test_override_effects.py)
    assert "chosen by override `model=qwen3_8b`" not in result.output, result.output
    assert "chosen by: override `model=qwen3_8b`" not in result.output, result.output


# ------------------------------------------------- --config-dir given wrong


def test_a_misspelt_config_dir_is_answered_with_the_nearest_one(here: Path) -> None:
    (here / "my_configs" / "model").mkdir(parents=True)
    output = refused(["--config-dir", "my_cofigs", "+experiment=quickstart"])
    assert fix_of(output) == f"did you mean --config-dir {here / 'my_configs'}?", output
    validates(["--config-dir", str(here / "my_configs"), "+experiment=quickstart"])


@pytest.fixture
def own_experiment(here: Path) -> Path:
    folder = here / "mine" / "experiment"
    folder.mkdir(parents=True)
    (folder / "mine.yaml").write_text("# @package _global_\ndefaults:\n  - quickstart\nname: mine\n")
    return folder


def test_a_group_dir_given_as_the_config_dir_names_the_dir_above(here: Path, own_experiment: Path) -> None:
    """`--config-dir mine/experiment +experiment=mine`: "unknown option 'mine'", with the shipped options
    listed, though mine.yaml was right there."""
    output = refused(["--config-dir", str(own_experiment), "+experiment=mine"])
    assert "directory of group 'experiment'" in output, output
    fix = fix_of(output)
    assert fix == f"--config-dir {own_experiment.parent} +experiment=mine", output
    validates(fix.split())


def test_a_config_file_given_as_the_config_dir_names_the_dir_and_the_option(
    here: Path, own_experiment: Path
) -> None:
    output = refused(["--config-dir", str(own_experiment / "mine.yaml"), "+experiment=mine"])
    fix = fix_of(output)
    assert fix.startswith(f"--config-dir {own_experiment.parent} +experiment=mine "), output
    validates(fix.split()[:3])


# ------------------------------------------------- started without setup, or by a Python too old


def test_python_m_launch_without_the_stack_says_to_run_setup(tmp_path: Path) -> None:
    """`python3 -m launch …` from a checkout, in a Python without t3rl's stack: a traceback ending in
    "No module named 'rich'", raised again while reporting the first one."""
    bare = subprocess.run(
        [sys.executable, "-S", "-m", "launch", "validate", "+experiment=quickstart"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": os.environ.get("PATH", "")},
    )
    assert bare.returncode == 1, bare.stderr
    assert "Traceback" not in bare.stderr and "./scripts/setup.sh" in bare.stderr, bare.stderr
    assert "is not installed in" in bare.stderr, bare.stderr


@pytest.fixture
def setup_copy(tmp_path: Path) -> Path:
    """scripts/setup.sh beside the files it reads, nothing installed."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    for name in ("pyproject.toml", "setup.py"):
        shutil.copy(REPO / name, tmp_path / name)
    return tmp_path


def _python_reporting(tmp_path: Path, version: str) -> Path:
    fake = tmp_path / f"python{version}"
    fake.write_text(f"#!/bin/sh\necho {version}\n")
    fake.chmod(0o755)
    return fake


@pytest.mark.parametrize("version", ["3.10", "3.9", "2.7"])
def test_setup_refuses_a_python_older_than_requires_python(setup_copy: Path, version: str) -> None:
    """setup.sh made a venv of any Python and spent minutes installing before pip said "requires a
    different Python" (or a pinned wheel was not found)."""
    fake = _python_reporting(setup_copy, version)
    done = subprocess.run(
        ["bash", "scripts/setup.sh"],
        cwd=setup_copy,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHON": str(fake)},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"is Python {version}; t3rl needs 3.11 or newer: PYTHON=python3.11" in done.stderr, done.stderr
    assert not (setup_copy / ".venv").exists()


def test_setup_names_a_python_that_does_not_run(setup_copy: Path) -> None:
    done = subprocess.run(
        ["bash", "scripts/setup.sh"],
        cwd=setup_copy,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHON": str(setup_copy / "no-such-python")},
    )
    assert done.returncode == 1 and "does not run here" in done.stderr, done.stderr
    assert not (setup_copy / ".venv").exists()


# ------------------------------------------------- a group whose key only another kind of env has


@pytest.mark.parametrize(
    ("typed", "field", "kind_option"),
    [("user_sim=llm", "user", "env=tau2"), ("sandbox=local", "sandbox", "env=retool_python")],
)
def test_a_group_for_another_env_kind_names_the_kind_and_the_override(
    here: Path, typed: str, field: str, kind_option: str
) -> None:
    """`user_sim=llm` with the BFCL env: "unknown key 'user' under 'env'", fixed by the BFCL env's own
    keys, none of which is what was meant."""
    output = refused(["+experiment=quickstart", typed])
    fix = fix_of(output)
    assert fix.startswith(f"drop `{typed}`") and fix.endswith(kind_option), output
    assert f"'{field}' is a field of the env kind" in fix, output
    validates(["+experiment=quickstart"])


# ------------------------------------------------- the command not first


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        (
            ["+experiment=quickstart", "validate"],
            "the command comes first: t3rl validate +experiment=quickstart",
        ),
        (
            ["--config-dir", "cfg", "validate", "+experiment=quickstart"],
            "the command comes first: t3rl validate --config-dir cfg +experiment=quickstart",
        ),
        (
            ["-m", "validate", "+experiment=quickstart", "reward=progress,binary"],
            "the command comes first: t3rl validate -m +experiment=quickstart reward=progress,binary",
        ),
        (["+experiment=quickstart"], "overrides follow a command: t3rl run +experiment=quickstart"),
        (["help"], "that is an option of t3rl: t3rl --help"),
        (["version"], "that is an option of t3rl: t3rl --version"),
    ],
    ids=["override-first", "option-first", "sweep-flag-first", "no-command", "help-word", "version-word"],
)
def test_a_command_line_whose_command_is_not_first_gets_the_line_that_works(
    here: Path, typed: list[str], says: str
) -> None:
    """Click said "No such command '+experiment=quickstart'" or "No such option: --config-dir"."""
    (here / "cfg" / "model").mkdir(parents=True)
    result = CliRunner().invoke(app, typed, env={"COLUMNS": "300"})
    assert result.exit_code == 2, result.output
    assert says in " ".join(result.output.split()), result.output
    line = says.partition(": t3rl ")[2].removesuffix(" (or plan, validate, show)").split()
    if line[0] == "run":
        line[0] = "validate"  # the same arguments, checked instead of run
    again = CliRunner().invoke(app, line, env={"COLUMNS": "300"})
    assert again.exit_code == 0, again.output


# ------------------------------------------------- --run-dir of the experiment's dir, or misspelt


@pytest.fixture
def two_runs(here: Path) -> list[Path]:
    runs = [here / "runs" / "quickstart" / stamp for stamp in ("20261127-060552", "20261127-071010")]
    for run in runs:
        run.mkdir(parents=True)
        (run / "config.yaml").write_text("name: quickstart\n")
    return runs


@pytest.mark.parametrize("argv", [["run", "--run-dir"], ["plan", "--run-dir"], ["runs", "show"]])
def test_the_experiments_dir_given_for_a_run_dir_names_its_latest_run(
    here: Path, two_runs: list[Path], argv: list[str]
) -> None:
    """`t3rl run --run-dir runs/quickstart` (the dir above the run dirs) said only "no config.yaml"."""
    result = invoke([*argv, "runs/quickstart"])
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert f"it holds run dirs; the latest is {two_runs[1].relative_to(here)}" in text.replace(
        f"{here}/", ""
    ), result.output


@pytest.mark.parametrize("argv", [["run", "--run-dir"], ["runs", "show"]])
def test_a_misspelt_run_dir_names_the_nearest_one(here: Path, two_runs: list[Path], argv: list[str]) -> None:
    result = invoke([*argv, "runs/quickstart/2026112-060552"])
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split()).replace(f"{here}/", "")
    assert "did you mean runs/quickstart/20261127-060552?" in text, result.output


# ------------------------------------------------- an option in capitals, or with its folders


@pytest.mark.parametrize(
    ("typed", "fixed"),
    [
        ("+experiment=QUICKSTART", "experiment=quickstart"),
        ("model=QWEN3_8B", "model=qwen3_8b"),
        ("+experiment=experiment/quickstart", "+experiment=quickstart"),
        ("+experiment=conf/experiment/quickstart", "+experiment=quickstart"),
        ("model=model/qwen3_8b", "model=qwen3_8b"),
    ],
)
def test_an_option_in_capitals_or_under_its_folders_gets_its_name(here: Path, typed: str, fixed: str) -> None:
    """Capitals got "choose one of: …" (every letter counted as a mismatch); folders before the name
    got "unknown option 'quickstart' for config group 'experiment/experiment'", set in config.yaml, fixed
    by `experiment/experiment=quickstart`, which does not compose either."""
    base = [] if "experiment" in typed else ["+experiment=quickstart"]
    output = refused([*base, typed])
    assert f"set in: override `{typed}`" in output, output
    fix = fix_of(output)
    assert fix.endswith((fixed, f"{fixed}?")), output
    validates([*base, fixed])


def test_the_override_blamed_for_a_missing_option_is_the_one_that_chose_it(here: Path) -> None:
    """`model=qwen3_8b model=qwen3_8` blamed `model=qwen3_8b`, the first override of the group."""
    output = refused(["+experiment=quickstart", "model=qwen3_8b", "model=qwen3_8"])
    assert "set in: override `model=qwen3_8`" in output, output
