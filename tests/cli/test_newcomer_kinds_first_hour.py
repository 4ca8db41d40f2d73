"""A newcomer's first hour, kinds the earlier passes left: a path typed where a command group's command
goes (`t3rl runs runs/quickstart`), a config file given as if it were an override (`t3rl validate
conf/experiment/quickstart.yaml`), a directory the command cannot write told to choose another the way
that command takes one, a command group's help without an example, and TAB offering nothing for a
world, an engine, a status or a metric. Each answer names the smallest
fix, applied here as printed; each failed before.
"""

from __future__ import annotations

import errno
import shlex
from pathlib import Path

import pytest

from launch.cli.failures import exit_code_for
from tests.launch.test_cli_help import complete
from tests.support.cli_app import fix_of, invoke, refused, validates

REPO = Path(__file__).resolve().parents[2]


# ------------------------------------------- a path where the group's command goes


@pytest.mark.parametrize(
    ("group", "expected"),
    [
        ("runs", ["t3rl runs --runs-dir {p}", "t3rl runs show {p}", "t3rl runs diff {p} B"]),
        ("rollouts", ["t3rl rollouts show {p}"]),
        ("data", ["t3rl data bfcl --out {p}"]),
    ],
)
def test_a_path_given_as_a_command_names_the_lines_that_take_it(
    here: Path, group: str, expected: list[str]
) -> None:
    """Before: `No such command 'runs/quickstart'.` and nothing else."""
    result = invoke([group, "runs/quickstart"])
    text = " ".join(result.output.replace("│", " ").split())
    assert result.exit_code == 2, result.output
    assert f"'runs/quickstart' is a path, not a command of `t3rl {group}`" in text, text
    for line in expected:
        assert f"`{line.format(p='runs/quickstart')}`" in text, text


def test_the_suggested_runs_dir_line_lists_the_runs(here: Path) -> None:
    (here / "elsewhere").mkdir()
    result = invoke(["runs", "elsewhere/"])
    assert "`t3rl runs --runs-dir elsewhere/`" in " ".join(result.output.replace("│", " ").split())
    listed = invoke(["runs", "--runs-dir", "elsewhere/"])
    assert listed.exit_code == 0 and "0 runs in elsewhere" in listed.output, listed.output


def test_a_command_name_is_still_told_apart_from_a_misspelt_one(here: Path) -> None:
    result = invoke(["runs", "dif"])
    assert result.exit_code == 2 and "Did you mean 'diff'?" in result.output, result.output


# ------------------------------------------- a config file given as an override


def test_a_shipped_experiment_file_given_as_an_argument_is_chosen_by_its_name(here: Path) -> None:
    """Before: "fix: give it a value: conf/experiment/quickstart.yaml=<value>", which Hydra refuses."""
    output = refused([str(REPO / "conf" / "experiment" / "quickstart.yaml")])
    assert "is a config file, not an override" in output, output
    fix = fix_of(output)
    assert fix == "+experiment=quickstart", output
    validates([fix])


def test_an_own_experiment_file_given_as_an_argument_is_chosen_with_its_config_dir(here: Path) -> None:
    own = here / "mine" / "experiment" / "my_quickstart.yaml"
    own.parent.mkdir(parents=True)
    own.write_text("# @package _global_\ndefaults:\n  - quickstart\nname: mine\n")
    output = refused(["mine/experiment/my_quickstart.yaml"])
    assert "is a config file, not an override" in output, output
    fix = fix_of(output)
    assert fix == "--config-dir mine +experiment=my_quickstart", output
    validates(shlex.split(fix))


# ------------------------------------------- a directory the command cannot write


@pytest.mark.parametrize(
    ("command", "choice"),
    [("eval", "--out DIR"), ("data", "--out DIR"), ("plan", "--out DIR"), ("run", "paths.runs_dir=")],
)
def test_an_unwritable_directory_is_answered_with_the_way_this_command_chooses_another(
    command: str, choice: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: every command was told `paths.runs_dir=…`, which `t3rl eval --out DIR` never reads."""
    for code in (errno.EACCES, errno.EPERM, errno.EROFS):
        error = OSError(code, "refused", "/somewhere/out")
        assert exit_code_for(error, command) == 1
        said = capsys.readouterr().err
        assert "/somewhere/out" in said and choice in said, said


def test_t3rl_data_into_a_directory_it_cannot_make_names_its_out_option(here: Path) -> None:
    """End to end through the Typer app: the command's name reaches the answer."""
    target = Path("/sys/t3rl-newcomer")  # sysfs takes no new directory, root included
    try:
        target.mkdir()
    except OSError as error:
        if error.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            pytest.skip(f"this system answers {errno.errorcode.get(error.errno or 0)} there")
    else:
        target.rmdir()
        pytest.skip("this system lets a directory be made there")
    result = invoke(["data", "bfcl", "--out", str(target)])
    text = " ".join(result.output.split())
    # A bad --out, refused before any work (launch/cli/out_option.py), as every command's --out DIR.
    assert result.exit_code == 2, result.output
    assert "Invalid value for --out" in text and "choose a directory you can write" in text, text


# ------------------------------------------- every command group's help teaches by example


@pytest.mark.parametrize("group", ["data", "rollouts"])
def test_a_command_groups_help_shows_an_example(group: str) -> None:
    output = invoke([group, "--help"]).output
    assert "Examples:" in output and f"t3rl {group} " in output.partition("Examples:")[2], output


def test_an_absolute_path_that_is_no_config_file_is_refused_not_a_crash(here: Path) -> None:
    """Before: `t3rl validate /tmp/notes` ended in "t3rl failed unexpectedly: TypeError" (a fix quoted
    before it was known to exist)."""
    output = refused(["/tmp/notes"])
    assert "cannot parse override '/tmp/notes'" in output and "fix: write overrides as key=value" in output


# ------------------------------------------- TAB completes what an argument names


@pytest.mark.parametrize(
    ("line", "offered"),
    [
        ("t3rl score b", ["bfcl"]),
        ("t3rl eval --engine re", ["reference"]),
        ("t3rl runs --status f", ["failed"]),
        ("t3rl runs --metric overall.acc", ["overall.accuracy", "overall.accuracy_without_user_simulator"]),
        ("t3rl runs diff a b --metric overall.pass@4", ["overall.pass@4"]),
    ],
)
def test_tab_completes_the_words_an_argument_takes(line: str, offered: list[str]) -> None:
    """Before: nothing was offered for a world, an engine, a status or a metric."""
    assert complete(line) == offered


# ------------------------------------------- a mapping's keys set on a mapping a config file sets


@pytest.mark.parametrize(
    "typed",
    [
        "model.chat.chat_template_kwargs={enable_thinking:false}",  # the model file's `{}`, set directly
        "+model.chat_template_kwargs={enable_thinking:false}",  # the key under the wrong section
    ],
)
def test_template_variables_set_as_a_mapping_get_a_fix_that_validates(here: Path, typed: str) -> None:
    """Before: the first was refused with Hydra's 'Could not override' and no fix; the second's fix
    (`set it where it lives: model.chat.chat_template_kwargs={…}`) was that same refused line."""
    fix = fix_of(refused(["+experiment=quickstart", typed]))
    applied = fix.rpartition(": ")[2]
    assert applied == "+model.chat.chat_template_kwargs={enable_thinking:false}", fix
    validates(["+experiment=quickstart", applied])


# ------------------------------------------- another command's output option


@pytest.mark.parametrize("typed", [["--out", "elsewhere"], ["--output-dir=elsewhere"], ["-o", "elsewhere"]])
def test_an_output_option_of_another_command_says_where_runs_go(here: Path, typed: list[str]) -> None:
    """`t3rl eval`, `data` and `plan` take --out; `t3rl run --out DIR` was answered with "write it as an
    override without dashes; `t3rl show` prints every key" (no key named out)."""
    output = refused(["+experiment=quickstart", *typed])
    assert "a run's dir is made under paths.runs_dir" in output, output
    assert fix_of(output) == "paths.runs_dir=elsewhere", output
    validates(["+experiment=quickstart", fix_of(output)])


def test_a_field_to_add_with_a_value_of_spaces_gets_a_fix_the_shell_keeps_whole(here: Path) -> None:
    """`'eval.published.target=T3RL stage 1'` (a field the config leaves unset): the fix read
    `add it with '+': +eval.published.target=T3RL stage 1`, which the shell split into three words."""
    argv = [
        "+experiment=quickstart",
        "+published@eval.published=t3rl_bfcl",
        "eval.published.target=T3RL stage 1",
    ]
    fix = fix_of(refused(argv)).removeprefix("add it with '+': ")
    validates([*argv[:2], *shlex.split(fix)])
