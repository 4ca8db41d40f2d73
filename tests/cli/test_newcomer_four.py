"""A newcomer's first hour, fourth pass: files of one's own config dir that t3rl never read (named like a
shipped option), a group's option written as a plain key of an experiment, a value an environment
variable set, and `t3rl help COMMAND` (docs/reference/cli-behaviour.md, "Mistakes in the first hour").
Each fix printed is applied as printed and must validate.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer

from launch.cli.app import app
from launch.run.search import _database_storage_broken
from tests.support.cli_app import fix_of, invoke, refused, validates

REPO = Path(__file__).resolve().parents[2]


def own_file(here: Path, relative: str, content: str) -> Path:
    path = here / "mine" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    return path


def run_fix_command(command: str, here: Path) -> None:
    """The shell command part of a fix (before ' and choose it with'), run as pasted."""
    done = subprocess.run(["bash", "-c", command], cwd=here, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


# ------------------------------------------- an option of one's own named like one of t3rl's


def test_an_own_experiment_named_like_a_shipped_one_is_never_read_and_says_so(here: Path) -> None:
    """`mine/experiment/quickstart.yaml`: Hydra composed t3rl's quickstart (first on the search path) and
    validated it; the file was never read and `t3rl ls` did not list it."""
    own_file(
        here, "experiment/quickstart.yaml", "# @package _global_\ndefaults:\n  - stage1_bfcl\nname: mine\n"
    )
    argv = ["--config-dir", "mine", "+experiment=quickstart"]
    output = refused(argv)
    assert "mine/experiment/quickstart.yaml is never read" in output, output
    assert "conf/experiment/quickstart.yaml has the same name" in output, output
    listed = invoke(["ls", "experiment", "--config-dir", "mine"])
    assert "mine/experiment/quickstart.yaml is never read" in listed.output, listed.output

    command, _, choice = (
        fix_of(output).removeprefix("give yours a name of its own: ").partition(" and choose it with ")
    )
    assert choice == "+experiment=my_quickstart", output
    run_fix_command(command, here)
    validates(["--config-dir", "mine", choice])
    assert "name: mine" in invoke(["show", "--config-dir", "mine", choice]).output


def test_an_own_model_named_like_a_shipped_one_is_named_when_chosen_only(here: Path) -> None:
    """A copy of t3rl's tiny_qwen3 edited in one's own config dir: the quickstart (which chooses
    tiny_qwen3) composed t3rl's file; a config that does not choose it is not refused for it."""
    copy = (REPO / "conf/model/tiny_qwen3.yaml").read_text()
    own_file(here, "model/tiny_qwen3.yaml", copy.replace("name: tiny_qwen3", "name: tiny_qwen3_mine"))
    validates(["--config-dir", "mine", "+experiment=quickstart", "model=qwen3_8b"])
    output = refused(["--config-dir", "mine", "+experiment=quickstart"])
    assert "mine/model/tiny_qwen3.yaml is never read" in output, output
    command, _, choice = (
        fix_of(output).removeprefix("give yours a name of its own: ").partition(" and choose it with ")
    )
    assert choice == "model=my_tiny_qwen3", output
    run_fix_command(command, here)
    validates(["--config-dir", "mine", "+experiment=quickstart", choice])


# ------------------------------------------- a group's option as a plain key of an experiment


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("model: qwen3_8b", "section 'model' became the word 'qwen3_8b'"),
        ("hardware: h100x8", "section 'hardware' became the word 'h100x8'"),
    ],
    ids=["model", "hardware"],
)
def test_a_group_option_written_as_a_key_is_answered_with_the_defaults_entry(
    here: Path, line: str, says: str
) -> None:
    """`model: qwen3_8b` beside `name:` broke the env's `${model.parsers.think_tags}` (blamed on
    conf/env/bfcl_multi_turn.yaml); `hardware: h100x8` was "a valid dictionary (got 'h100x8')", fix
    "see the field's comment". Also when the line sits in an own base experiment."""
    group, option = line.split(": ")
    own_file(
        here, "experiment/base.yaml", f"# @package _global_\ndefaults:\n  - quickstart\nname: base\n{line}\n"
    )
    own_file(here, "experiment/mine.yaml", "# @package _global_\ndefaults:\n  - base\nname: mine\n")
    output = refused(["--config-dir", "mine", "+experiment=mine"])
    assert says in output and "set in: mine/experiment/base.yaml" in output, output
    assert fix_of(output).startswith(
        f"in mine/experiment/base.yaml, delete `{line}` and add `- override /{group}: {option}`"
    ), output

    base = here / "mine/experiment/base.yaml"
    text = base.read_text().replace(f"{line}\n", "")
    base.write_text(text.replace("  - quickstart\n", f"  - quickstart\n  - override /{group}: {option}\n"))
    validates(["--config-dir", "mine", "+experiment=mine"])
    shown = invoke(["show", "--config-dir", "mine", "+experiment=mine", "--explain", group]).output
    assert f"conf/{group}/{option}.yaml" in shown, shown


# ------------------------------------------- a value the environment set


@pytest.mark.parametrize(
    ("variable", "value", "argv", "says"),
    [
        ("T3RL_RUNS_DIR", "", ["+experiment=quickstart"], "from $T3RL_RUNS_DIR (set, empty)"),
        ("SLIME_ROOT", "slime", ["+experiment=stage1_bfcl"], "from $SLIME_ROOT (set in the environment)"),
    ],
    ids=["empty", "relative"],
)
def test_a_value_an_environment_variable_set_names_the_variable(
    here: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, argv: list[str], says: str
) -> None:
    """`export T3RL_RUNS_DIR=$UNSET` left paths.runs_dir empty: the error said "set in:
    conf/paths/default.yaml", a file that only names the variable."""
    monkeypatch.setenv(variable, value)
    output = refused(argv)
    assert says in output and "conf/paths/default.yaml" in output, output
    validates([*argv, fix_of(output).removeprefix("set ").partition(" ")[0]])


# ------------------------------------------- `t3rl help COMMAND`


@pytest.mark.parametrize(
    ("typed", "line"),
    [(["help", "run"], ["run", "--help"]), (["help", "runs", "show"], ["runs", "show", "--help"])],
    ids=["run", "runs-show"],
)
def test_help_of_a_command_as_a_word_gets_its_help_option(typed: list[str], line: list[str]) -> None:
    """`t3rl help run` said "that is an option of t3rl: t3rl --help", the help of t3rl, not of run."""
    result = invoke(typed)
    assert result.exit_code == 2, result.output
    assert f"t3rl {' '.join(line)}" in " ".join(result.output.split()), result.output
    assert invoke(line).exit_code == 0


# ------------------------------------------- a search kept in the database its docs name


def test_a_search_storage_this_environment_cannot_keep_is_refused_with_a_fix_that_can(here: Path) -> None:
    """`hydra.sweeper.storage=sqlite:///study.db`, as conf/hparams_search's comment and the storage
    refusal's own fix suggested: Optuna 2.10 under SQLAlchemy 2 ended in "t3rl failed unexpectedly:
    AssertionError" after composing every trial's base config."""
    argv = ["-m", "+experiment=stage1_bfcl", "hparams_search=bfcl_lr_kl_reward", "hydra.sweeper.n_trials=1"]
    result = invoke(["run", *argv, "hydra.sweeper.storage=sqlite:///study.db"])
    if not _database_storage_broken():  # another stack: the search starts (its trial is refused later)
        assert "could not create a study" not in result.output, result.output
        return
    assert result.exit_code == 2, result.output
    assert "Optuna cannot keep a study in 'sqlite:///study.db'" in result.output, result.output
    fix = result.output.partition("error hydra.sweeper.storage")[2].partition("fix: ")[2].splitlines()[0]
    assert fix.startswith("set hydra.sweeper.storage=null") and "sqlite" not in fix, result.output
    assert not (here / "runs").exists() and not (here / "study.db").exists()


# ------------------------------------------- the line to run after previewing a plan's record


def test_the_run_line_of_a_plans_record_starts_a_run_that_validates(here: Path) -> None:
    """`t3rl plan --run-dir <a plan dir> seed=3` printed `run it: t3rl run --run-dir <the plan> seed=3`,
    which `t3rl run` refuses (a plan is not a run); the refusal's own `t3rl run …` left out the plan's
    --config-dir, so its experiment was unknown."""
    own_file(here, "experiment/mine.yaml", "# @package _global_\ndefaults:\n  - quickstart\nname: mine\n")
    assert invoke(["plan", "--config-dir", "mine", "+experiment=mine"]).exit_code == 0
    (plan_dir,) = (here / "plans" / "mine").iterdir()
    preview = invoke(["plan", "--run-dir", str(plan_dir), "seed=3"])
    assert preview.exit_code == 0, preview.output
    (line,) = [row for row in preview.output.splitlines() if row.startswith("run it:")]
    refusal = invoke(["run", "--run-dir", str(plan_dir), "seed=3"])
    assert refusal.exit_code == 1, refusal.output
    pasted = " ".join(refusal.output.split()).partition("start the run with `")[2].partition("`")[0]
    for command in (line.removeprefix("run it:").strip(), pasted):
        argv = shlex.split(command)
        assert argv[:2] == ["t3rl", "run"] and "--run-dir" not in argv, command
        validates(argv[2:])
        assert invoke(["show", *argv[2:], "--explain", "seed"]).output.startswith("seed = 3"), command


# ------------------------------------------- a run name that cannot be a directory's


@pytest.mark.parametrize(
    ("name", "fixed"),
    [("a" * 300, "a" * 200), ("'café run'", "cafe_run")],
    ids=["300-characters", "accents"],
)
def test_a_name_no_directory_can_have_is_refused_by_validate_with_one_that_can(
    here: Path, name: str, fixed: str
) -> None:
    """A 300-character name validated, then `t3rl plan` failed with "File name too long" (exit 1);
    `name='café run'` was answered `name=caf_run`, and "use letters" for a letter it refused."""
    output = refused(["+experiment=quickstart", f"name={name}"])
    assert f"set name={fixed}" in output, output
    validates(["+experiment=quickstart", f"name={fixed}"])
    assert invoke(["plan", "+experiment=quickstart", f"name={fixed}"]).exit_code == 0


# ------------------------------------------- the examples of --help, pasted from an 80-column terminal


def _commands(command: object, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(typer.main.get_command(app)))
# Commands whose examples' overrides compose a config `t3rl validate` checks the same way.
COMPOSING = {"run", "plan", "validate", "show", "eval", "data"}


def pasted_examples(output: str) -> list[str]:
    """The commands of a help's `Examples:` block as a shell reads the block pasted: continuation lines
    joined, comment lines skipped; anything else is a line of its own."""
    block = output.partition("Examples:")[2].partition("╭")[0]
    commands, pending = [], ""
    for line in block.splitlines():
        text = pending + line.strip()
        if text.endswith("\\"):
            pending = text[:-1]
            continue
        pending = ""
        if text and not text.startswith("#"):
            commands.append(text)
    return commands


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) or "t3rl" for p in COMMANDS])
def test_every_help_example_pasted_at_80_columns_is_one_command_that_validates(path: tuple[str, ...]) -> None:
    """At 80 columns the terminal wrapped a long example: `t3rl run --help`'s `# resume what did not`
    left `finish` on a line of its own, `t3rl eval --help`'s `--k 4` too; pasted, each ran as a command.
    Every example is a whole `t3rl` command, and one that composes a config validates."""
    output = invoke([*path, "--help"], COLUMNS="80").output
    for command in pasted_examples(output):
        argv = shlex.split(command.partition("  #")[0])
        assert argv[0] == "t3rl", f"{command!r} is not a t3rl command\n{output}"
        if argv[1] in COMPOSING and "--run-dir" not in argv:
            overrides = [a for a in argv[2:] if "=" in a and not a.startswith("-")]
            validates([*(["-m"] if "-m" in argv else []), *overrides])


# ------------------------------------------- an experiment saved as UTF-16


def test_an_experiment_saved_as_utf16_gets_the_iconv_that_converts_it(here: Path) -> None:
    """Notepad's "Unicode" (UTF-16 with its byte-order mark) was "not UTF-8 text (an undecodable byte
    at offset 0)", fix "save it as UTF-8 text"; CRLF line ends, which the same editors write, read fine."""
    text = "# @package _global_\r\ndefaults:\r\n  - quickstart\r\nname: mine\r\n"
    path = here / "mine" / "experiment" / "mine.yaml"
    path.parent.mkdir(parents=True)
    path.write_bytes(text.encode("utf-16"))
    output = refused(["--config-dir", "mine", "+experiment=mine"])
    assert "saved as UTF-16 text" in output, output
    run_fix_command(fix_of(output), here)
    validates(["--config-dir", "mine", "+experiment=mine"])


# ------------------------------------------- a resume typed in another directory


def test_a_resume_typed_in_another_directory_resolves_relative_paths_where_the_run_started(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cd sub && t3rl plan --run-dir ../plans/stage1_bfcl/<ts>` said "config: unchanged" and planned the
    conversion into sub/checkpoints/ and from sub/models/… (relative paths resolved in the new working
    directory): a resume would convert again, from a model that is not there."""
    assert invoke(["plan", "+experiment=stage1_bfcl"]).exit_code == 0
    (plan_dir,) = (here / "plans" / "stage1_bfcl").iterdir()
    (here / "sub").mkdir()
    monkeypatch.chdir(here / "sub")
    result = invoke(["plan", "--run-dir", str(plan_dir)])
    assert result.exit_code == 0, result.output
    assert f"in {here}, where {plan_dir.name} was started" in result.output, result.output
    assert f"{here}/checkpoints/" in result.output and f"{here}/sub/" not in result.output, result.output


# ------------------------------------------- machine settings in <config dir>/local/default.yaml


def _cluster_tutorials_local_file() -> str:
    """The YAML block docs/tutorials/cluster.md gives for `<config dir>/local/default.yaml`, as printed."""
    page = (REPO / "docs" / "tutorials" / "cluster.md").read_text()
    return (
        page.partition("local/default.yaml`, which the primary config loads")[2]
        .split("```")[1]
        .removeprefix("yaml\n")
    )


@pytest.mark.parametrize(
    "content",
    [_cluster_tutorials_local_file(), "paths:\n  slime_root: /shared/slime\n"],
    ids=["as-the-cluster-tutorial-prints-it", "without-a-header"],
)
@pytest.mark.parametrize(
    "argv",
    [["+experiment=stage1_bfcl", "executor=slurm"], ["model=qwen3_8b", "executor=slurm"]],
    ids=["experiment", "bare"],
)
def test_machine_settings_in_local_default_yaml_are_read(here: Path, content: str, argv: list[str]) -> None:
    """The cluster tutorial's file (a comment naming it, then `# @package _global_`) put its keys under
    `local` (Hydra reads a header only among the first comment lines): `unknown key 'local'`, and
    without the header likewise; the tutorials say the file holds settings of the whole config. (On
    SLURM, as in the tutorial: its `paths.cluster_python` is a path on the cluster.)"""
    own_file(here, "local/default.yaml", content)
    shown = invoke(["show", "--config-dir", "mine", *argv, "--explain", "paths.slime_root"])
    assert shown.output.startswith("paths.slime_root = /shared/slime"), shown.output
    validates(["--config-dir", "mine", *argv])
