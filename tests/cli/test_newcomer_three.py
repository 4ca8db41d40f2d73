"""A newcomer's first hour, third pass: experiment files written by hand (the `# @package` header, the
defaults list's order, a tab), guesses at the command line (a flag other tools have, a key by its last
name, a list where one option goes) and help read at 80 columns (docs/reference/cli-behaviour.md,
"Mistakes in the first hour"). Each fix printed is applied as printed and must validate.
"""

from __future__ import annotations

import itertools
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer

from launch.cli.app import app
from tests.support.cli_app import fix_of, invoke, refused, validates


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


# ------------------------------------------------- an experiment's defaults list in the wrong order

MY_STAGE1 = """# @package _global_
defaults:
{first}
{second}
  - override /hardware: h100x8
name: my_stage1
hardware:
  gpus_per_node: 4
stages:
  train:
    curriculum:
      optimizer:
        lr: 5.0e-7
"""


def test_a_base_experiment_after_self_is_the_one_problem(here: Path) -> None:
    """`- _self_` first (as t3rl's own experiments start their lists), then `- stage1_bfcl`: refused for
    "no prepare_data stage runs before it" blamed on stage1_bfcl.yaml with a fix adding a stage, and
    the name the file set was stage1_bfcl's; with nothing else wrong it validated under the base's name."""
    text = MY_STAGE1.format(first="  - _self_", second="  - stage1_bfcl")
    argv = experiment(here, "my_stage1", text.encode())
    output = refused(argv)
    assert "lists `_self_` before its base experiment `stage1_bfcl`" in output and "name=my_stage1" in output
    assert "prepare_data" not in output and output.count("error ") == 1, output
    assert fix_of(output).endswith(
        "put `- stage1_bfcl` before `- _self_` (an experiment's own values merge where `_self_` stands)"
    ), output
    experiment(here, "my_stage1", MY_STAGE1.format(first="  - stage1_bfcl", second="  - _self_").encode())
    validates(argv)
    short = experiment(
        here, "short", b"# @package _global_\ndefaults:\n  - _self_\n  - quickstart\nname: short\n"
    )
    assert "(name=short)" in refused(short)


def test_an_override_before_the_base_names_the_file_and_the_order(here: Path) -> None:
    """Hydra's "In experiment/mine: Override 'model : qwen3_8b' is defined before 'experiment@_global_:
    quickstart'", blamed on "(schema default)", without a fix."""
    text = "# @package _global_\ndefaults:\n{}\n{}\nname: mine\n"
    override, base = "  - override /model: qwen3_8b", "  - quickstart"
    argv = experiment(here, "mine", text.format(override, base).encode())
    output = refused(argv)
    assert "mine/experiment/mine.yaml lists `override /model: qwen3_8b` before `quickstart`" in output
    assert "schema default" not in output and "Overrides must be" not in output, output
    assert fix_of(output).endswith("move `- override /model: qwen3_8b` below `- quickstart`"), output
    experiment(here, "mine", text.format(base, override).encode())
    validates(argv)


def test_a_tab_in_an_experiment_gets_a_sed_that_replaces_it(here: Path) -> None:
    argv = experiment(
        here,
        "mine",
        b"# @package _global_\ndefaults:\n  - quickstart\nstages:\n\teval_tiny:\n\t\tcheckpoint: null\n",
    )
    output = refused(argv)
    assert "mine.yaml:5:1" in output, output
    run_fix(fix_of(output).partition(": ")[2], here)
    validates(argv)


# ------------------------------------------------- guesses on the command line


def test_a_group_given_a_list_of_options_is_refused(here: Path) -> None:
    """`reward=[progress,binary]` (a sweep meant) merged both rewards into one section: valid, binary's name
    with whatever of progress binary did not set."""
    output = refused(["+experiment=quickstart", "reward=[progress,binary]"])
    assert "merges 2 options of config group 'reward'" in output, output
    fix = fix_of(output)
    assert "t3rl run -m … reward=progress,binary" in fix, output
    validates(["+experiment=quickstart", fix.rpartition(" ")[2]])
    validates(["+experiment=quickstart", "eval.categories=[multi_turn_base]"])  # a key holding a list


@pytest.mark.parametrize(
    ("flag", "command"), [("--dry-run", "plan"), ("-n", "plan"), ("--check", "validate"), ("--plan", "plan")]
)
def test_a_launchers_usual_flag_gets_the_command_that_does_it(here: Path, flag: str, command: str) -> None:
    """`t3rl run … --dry-run` was told "write it as an override without dashes" (there is no such key)."""
    (here / "my conf" / "model").mkdir(parents=True)
    result = invoke(["run", "--config-dir", "my conf", "+experiment=quickstart", "reward=binary", flag])
    assert result.exit_code == 2, result.output
    fix = fix_of(result.output)
    assert (
        fix == f'''t3rl {command} --config-dir "{here / "my conf"}" +experiment=quickstart reward=binary'''
    ), fix
    argv = shlex.split(fix)[1:]
    assert invoke(argv).exit_code == 0


def test_resume_as_a_flag_points_at_the_run_dirs(here: Path) -> None:
    result = invoke(["run", "+experiment=quickstart", "--resume"])
    assert result.exit_code == 2 and "`t3rl run --run-dir DIR` resumes" in result.output, result.output
    assert fix_of(result.output).startswith("t3rl runs "), result.output
    assert invoke(["runs"]).exit_code == 0


def test_an_override_quoted_with_spaces_around_the_equals(here: Path) -> None:
    """One quoted argument with spaces around '=': Hydra's "token recognition error at: ' '" and the
    generic fix."""
    output = refused(["+experiment=quickstart", "stages.eval_tiny.eval.limit_per_category = 3"])
    assert fix_of(output) == "stages.eval_tiny.eval.limit_per_category=3", output
    validates(["+experiment=quickstart", fix_of(output)])


# ------------------------------------------------- `t3rl show` prints every line of the config


def test_show_of_the_quickstart_keeps_every_stage(here: Path) -> None:
    """`max_new_tokens: 32768` and the next line's `eval_tiny:` were read as one value folded over lines
    (`32768eval_tiny`, named by a key holding "token") and masked: `max_new_tokens: ***:`, the stage gone."""
    output = invoke(["show", "+experiment=quickstart"]).output
    assert "  eval_tiny:\n" in output and "max_new_tokens: 32768\n" in output and "***" not in output, output


# ------------------------------------------------- a printed command holding a credential


def test_the_run_it_command_of_a_literal_credential_uses_its_reference(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run it:  t3rl run … ++hardware.env_vars.DB_PASS=***` (every printed line masks the value): pasted,
    it set the password to three stars."""
    value = "Pw" + "7" * 6 + "ZzQq3xY9"
    result = invoke(
        [
            "plan",
            "+experiment=quickstart",
            f"++hardware.env_vars.DB_PASS={value}",
            "++hardware.env_vars.GH=abc",
        ]
    )
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if line.startswith("run it:"))
    command = "t3rl run +experiment=quickstart '++hardware.env_vars.DB_PASS=${oc.env:DB_PASS}'"
    assert line == f"run it:  {command} ++hardware.env_vars.GH=abc", line
    monkeypatch.setenv("DB_PASS", value)
    argv = shlex.split(line.partition("t3rl ")[2])
    pasted = invoke(["plan", *argv[1:], "--out", "pasted"])
    assert pasted.exit_code == 0, pasted.output
    assert "DB_PASS: ${oc.env:DB_PASS}" in (here / "pasted" / "config.yaml").read_text()


# ------------------------------------------------- a search's setting without a search


@pytest.mark.parametrize(
    "typed", ["hydra.sweeper.n_trials=3", "+hydra.sweeper.n_trials=3", "++hydra.sweeper.params.seed=1"]
)
def test_a_search_setting_without_a_search_names_the_search(here: Path, typed: str) -> None:
    """`hydra.sweeper.n_trials=3` on a plain experiment: the basic sweeper's keys listed as the fix; with
    `+` it was valid and ignored (no search ran); `++hydra.sweeper.params.…` ended "unexpectedly"
    (OmegaConf's AssertionError)."""
    output = refused(["+experiment=stage1_bfcl", typed])
    assert "this command line chooses no search" in output, output
    fix = fix_of(output)
    search = f"+hparams_search=bfcl_lr_kl_reward ++{typed.lstrip('+')}"
    assert fix == f"a search with it: t3rl run -m … {search}", output
    if typed.startswith("+hydra"):
        validates(["-m", "+experiment=stage1_bfcl", *search.split()])


# ------------------------------------------------- an entry of a named mapping set without '+'


def test_an_entry_of_a_mapping_you_name_is_added_with_plus(here: Path) -> None:
    """`services.user.port=1` where no service is set: the fix listed the known keys under 'services',
    of which there are none ("known keys under 'services': "). It now adds the entry with '+', and the
    line it prints is past the unknown key (what the new service still needs is the next answer)."""
    output = refused(["+experiment=tau2_pipeline", "services.user.port=1"])
    fix = fix_of(output)
    assert "+services.user.port=1" in fix and "t3rl show --explain services" in fix, output
    added = refused(["+experiment=tau2_pipeline", "+services.user.port=1"])
    assert "unknown key" not in added and "set model_path" in added, added
