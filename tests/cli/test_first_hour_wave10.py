"""First hour, hunted (wave ten): one test per kind a newcomer hunt found answered badly
(docs/reference/cli-behaviour.md, "First hour, hunted (wave ten)"), and the docs' commands no other test
ran: the `t3rl runs` lines of the pages' blocks, and the commands the config files' comments show (what
`t3rl ls` prints as their descriptions). Each fails on the code before its fix; in-process."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer._completion_shared import get_completion_script

from launch.checks.model_options import model_options
from launch.cli import completion_shells, is_plain, option_domain
from launch.cli.app import app
from launch.cli.lazy import SUBCOMMANDS
from launch.cli.pasted_characters import DASH, NOTHING, PASTED, SPACE, pasted_refusal
from launch.config.search_path import first_comment
from tests.docs.test_docs_commands_shown import SHOWN, Shown, _checkable
from tests.support.cli_app import fix_of, invoke

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each case runs in an empty directory (those reading the checkout's relative paths go there): a
    command that writes (a plan, a runs listing's cache) never writes into the checkout."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))


# --- characters pasted in for plain text -----------------------------------------------------------


def _pasted(c: str) -> tuple[list[str], list[str]]:
    """A command line holding `c` where plain text was meant, and the line meant."""
    meant = ["validate", "--config-dir", "/tmp", "+experiment=quickstart", "seed=3"]
    if PASTED[c] == DASH:
        return ["validate", f"{c}config-dir", "/tmp", "+experiment=quickstart", "seed=3"], meant
    # a space stands between two overrides; an invisible character inside one
    joined = f"+experiment=quickstart{c}seed=3" if PASTED[c] == SPACE else f"+experi{c}ment=quickstart"
    tail = [joined] if PASTED[c] == SPACE else [joined, "seed=3"]
    return ["validate", "--config-dir", "/tmp", *tail], meant


@pytest.mark.parametrize("c", list(PASTED), ids=[f"U+{ord(c):04X}" for c in PASTED])
def test_every_pasted_character_is_named_with_the_line_meant(c: str) -> None:
    """Each character of the table: refused naming its code, the fix the line as it was meant (a dash at
    an option's start `--`, a pasted space a split, an invisible character dropped)."""
    typed, meant = _pasted(c)
    problem = pasted_refusal(typed)
    assert problem is not None, typed
    assert f"U+{ord(c):04X}" in problem.message and problem.source == "the command line"
    line = problem.fix.partition(" (")[0]
    assert shlex.split(line) == ["t3rl", *meant], problem.fix
    assert not is_plain(typed), "the plain path skips the app's refusal"
    assert PASTED[c] in (DASH, SPACE, NOTHING)


def test_a_dash_before_one_letter_is_one_dash_and_a_path_that_exists_is_left_alone(tmp_path: Path) -> None:
    problem = pasted_refusal(["run", "\u2014m", "+experiment=quickstart", "seed=1,2"])
    assert problem is not None and problem.fix == "t3rl run -m +experiment=quickstart seed=1,2"
    own = tmp_path / "my\u00a0conf"
    own.mkdir()
    assert pasted_refusal(["validate", "--config-dir", str(own)]) is None
    assert pasted_refusal(["validate", f"--config-dir={own}"]) is None
    assert pasted_refusal(["validate", "name=café", "+experiment=quickstart"]) is None


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "\u2014config-dir", "examples/plugin/conf", "+experiment=quickstart"],
        ["validate", "+experiment=quickstart\r"],
        ["validate", "+experiment=quickstart\u00a0seed=3"],
        ["ls", "\u2013help"],
    ],
    ids=["em-dash-option", "crlf-script", "no-break-space", "en-dash-help"],
)
def test_a_pasted_line_is_refused_before_any_command_and_its_fix_runs(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was: Hydra's `token recognition error at: '—'`, "no config group '–help'", "spaces around '='" with a
    fix that looked the same, a value with a space to quote."""
    monkeypatch.chdir(REPO)
    result = invoke(argv)
    assert result.exit_code == 2 and "set in: the command line" in result.output, result.output
    fixed = shlex.split(fix_of(result.output).partition(" (")[0])
    assert fixed[0] == "t3rl" and invoke(fixed[1:]).exit_code == 0


# --- completion for the shell named -------------------------------------------------------------------


@pytest.mark.parametrize("shell", completion_shells.SHELLS)
def test_show_completion_prints_the_script_of_the_shell_named(shell: str) -> None:
    """Was: the detected shell's script (bash's, in bash) whatever the word after the option."""
    for argv in (["--show-completion", shell], [f"--show-completion={shell}"]):
        result = invoke(argv)
        assert result.exit_code == 0, result.output
        expected = get_completion_script(prog_name="t3rl", complete_var="_T3RL_COMPLETE", shell=shell)
        assert result.stdout.strip() == expected


@pytest.mark.parametrize("shell", ["tcsh", "csh", "ksh", "zhs"])
def test_a_shell_without_a_script_is_refused_naming_those_that_have_one(
    shell: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was: `Shell tcsh not supported.` (exit 1) or bash's script printed."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for argv in (["--show-completion", shell], ["--install-completion", shell]):
        result = invoke(argv)
        assert result.exit_code == 2, result.output
        said = " ".join(result.output.replace("│", " ").split())
        assert all(s in said for s in completion_shells.SHELLS) and "t3rl ls GROUP" in said, said
    assert "did you mean t3rl --install-completion zsh" in said.lower() or shell != "zhs", said
    assert not any(tmp_path.iterdir()), "nothing installed"


def test_install_completion_installs_the_shell_named_or_refuses_the_one_it_runs_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    result = invoke(["--install-completion", "fish"])
    assert result.exit_code == 0 and "fish completion installed" in result.output, result.output
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == ["t3rl.fish"]
    monkeypatch.setattr(completion_shells, "detected_shell", lambda: "tcsh")
    result = invoke(["--install-completion"])
    assert result.exit_code == 2 and "tcsh has no completion script" in result.output, result.output


# --- t3rl's own options typed to an override command --------------------------------------------------


@pytest.mark.parametrize(
    ("command", "typed"), [("run", "--hlep"), ("plan", "--Help"), ("validate", "--hepl")]
)
def test_the_help_option_misspelt_is_named(command: str, typed: str) -> None:
    """Was: `write it as an override without dashes` (an override named `hlep`)."""
    result = invoke([command, "+experiment=quickstart", typed])
    assert result.exit_code == 2 and "did you mean the option --help?" in fix_of(result.output), result.output


def test_a_short_keys_flag_is_no_misspelt_help() -> None:
    """`--lr` is as near to `--help` as difflib's usual 0.6: the help's own nearness (HELP_NEAR) is higher."""
    kept = invoke(["validate", "+experiment=quickstart", "--lr", "3"])
    assert kept.exit_code == 2 and "--help" not in fix_of(kept.output), kept.output


@pytest.mark.parametrize(
    ("command", "option"), [("run", "--version"), ("plan", "-V"), ("validate", "--version")]
)
def test_an_option_of_t3rl_itself_after_a_command_is_moved_before_it(command: str, option: str) -> None:
    """Was: `'--version' is not an option of this command: … write it as an override without dashes`."""
    result = invoke([command, option, "+experiment=quickstart"])
    assert result.exit_code == 2 and "an option of t3rl itself" in result.output, result.output
    fixed = shlex.split(fix_of(result.output))
    assert fixed == ["t3rl", option] and invoke(fixed[1:]).stdout.startswith("t3rl ")


# --- what `t3rl ls` prints of an option --------------------------------------------------------------


def test_a_description_stops_at_the_example_under_it(tmp_path: Path) -> None:
    """Was: hub_env_grpo's first sentence ran on through its two indented example commands and their own
    comments (`… with no t3rl code: t3rl plan … # a verifiers environment t3rl plan … # OpenEnv (with…`)."""
    own = tmp_path / "experiment" / "mine.yaml"
    own.parent.mkdir()
    own.write_text(
        "# @package _global_\n#  Mine, indented: still its description:\n#   t3rl plan +experiment=mine"
        "  # an example\n# (more prose.)\ndefaults:\n  - quickstart\n"
    )
    assert first_comment(own) == "Mine, indented: still its description"
    shipped = [*REPO.glob("conf/*/*.yaml"), *REPO.glob("examples/*/conf/*/*.yaml")]
    said = {path: first_comment(path) for path in shipped}
    assert not [p for p, text in said.items() if re.search(r"\bt3rl (plan|run|validate) ", text)]


def test_the_line_ls_prints_for_an_option_of_ones_own_config_dir_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was: `the config it composes: t3rl show +experiment=mine`, without the config dir it is in."""
    (tmp_path / "mine" / "experiment").mkdir(parents=True)
    (tmp_path / "mine" / "experiment" / "mine.yaml").write_text(
        "# @package _global_\n# Mine.\ndefaults:\n  - quickstart\nname: mine\n"
    )
    monkeypatch.chdir(tmp_path)
    result = invoke(["ls", "experiment", "mine", "--config-dir", "mine"])
    line = re.search(r"the config it composes: t3rl (.*?);", result.output)
    assert line is not None, result.output
    shown = invoke(shlex.split(line[1]))
    assert shown.exit_code == 0 and "name: mine" in shown.output, shown.output


# --- the docs' commands no other test ran ------------------------------------------------------------

# A comment line showing a command: `#   t3rl plan …`, `# Usage: t3rl run …`, `…: t3rl run -m …`, with
# the environment it is typed with (`PYTHONPATH=examples/plugin t3rl …`).
_COMMENTED = re.compile(r"^#(?:\s+|.*?: )(?P<env>(?:[A-Z_][A-Z0-9_]*=\S+ )*)(?P<command>t3rl [a-z].*)$")


def commented_commands() -> list[tuple[Shown, list[str]]]:
    """(the command, its check) of every `t3rl` command a YAML config's comment lines show (t3rl's conf/ and
    the examples' config dirs): the text `t3rl ls` prints of a file, and its readers paste."""
    found = []
    for path in sorted([*REPO.glob("conf/**/*.yaml"), *REPO.glob("examples/**/*.yaml")]):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            matched = _COMMENTED.match(line.strip())
            if matched is None:
                continue
            command, _, said = matched["command"].partition("  #")
            env = tuple(
                (name, value) for name, _, value in (w.partition("=") for w in matched["env"].split())
            )
            where = f"{path.relative_to(REPO)}:{number}"
            needs = said.partition("needs:")[2].strip()
            shown = Shown(where, tuple(shlex.split(command)[1:]), False, said, needs, env)
            argv = _checkable(shown)
            if argv is not None:
                found.append((shown, argv))
    return found


COMMENTED = commented_commands()


def test_the_commented_commands_are_found() -> None:
    wheres = {shown.where.rpartition(":")[0] for shown, _ in COMMENTED}
    assert {"conf/config.yaml", "examples/plugin/conf/experiment/counter.yaml"} <= wheres, wheres
    assert "conf/experiment/hub_env_grpo.yaml" in wheres  # its OpenEnv line; the verifiers one needs a hub


@pytest.mark.parametrize(("shown", "argv"), COMMENTED, ids=[shown.where for shown, _ in COMMENTED])
def test_a_command_a_config_comment_shows_validates_as_shown(
    shown: Shown, argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was: counter.yaml's `t3rl run --config-dir examples/plugin/conf +experiment=counter` refused (its
    plugin not importable without the PYTHONPATH the tutorial gives)."""
    monkeypatch.chdir(REPO)
    for name, value in shown.exports:
        monkeypatch.setenv(name, value)
        if name == "PYTHONPATH":  # what the variable does for a new process, done for this one
            monkeypatch.syspath_prepend(str(REPO / value))
    checked = ["validate", *argv[1:]] if argv[0] == "plan" else argv  # validate is plan's pre-flight
    result = invoke(checked)
    assert result.exit_code == 0, f"{shown.where}: `t3rl {shlex.join(shown.argv)}`\n{result.output}"


# A figure's lines that say the command above them was refused: t3rl's `error …` and Click's usage error.
_REFUSED = re.compile(r"^(error\b|Usage: t3rl|╭─ Error)")
# The listings: `runs show` and `runs diff` name run dirs a page made before (or a `<placeholder>`).
RUNS = [shown for shown in SHOWN if shown.argv[:1] == ("runs",) and not {"show", "diff"} & set(shown.argv)]


def _refused_in_its_figure(shown: Shown) -> bool:
    page, _, line = shown.where.partition(":")
    following = (REPO / page).read_text().splitlines()[int(line) :][:3]
    return any(_REFUSED.match(text.strip()) for text in following) or shown.refused


def test_the_runs_commands_are_found() -> None:
    wheres = {shown.where for shown in RUNS}
    assert {"docs/tutorials/quickstart.md:93", "docs/reference/cli-behaviour.md:71"} <= wheres, wheres


@pytest.mark.parametrize("shown", RUNS, ids=lambda s: s.where)
def test_a_runs_command_the_docs_show_runs_as_shown(
    shown: Shown, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`t3rl runs …` in a directory without runs, as a newcomer's first: listed (exit 0), or refused as the
    page's figure shows it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))
    result = invoke(list(shown.argv))
    expected = 2 if _refused_in_its_figure(shown) else 0
    assert result.exit_code == expected, f"{shown.where}: `t3rl {shlex.join(shown.argv)}`\n{result.output}"


# --- a model by its hub id; a required option left out; several keys in one --explain -----------------


# Hub id → the options declaring it (one built on another declares its base's: both are right).
HUB_IDS: dict[str, set[str]] = {}
for _option in model_options().values():
    if _option.hf_id is not None:
        HUB_IDS.setdefault(_option.hf_id, set()).add(_option.name)


@pytest.mark.parametrize(("hub_id", "options"), sorted(HUB_IDS.items()), ids=sorted(HUB_IDS))
def test_a_model_given_by_its_hub_id_is_the_option_declaring_it(hub_id: str, options: set[str]) -> None:
    """Was: `unknown option 'Qwen3-8B' for config group 'model/Qwen'`, set in config.yaml, `fix: did you mean
    model/Qwen=qwen3_8b?` (which does not compose). Every hub id the model options declare (one typed in small
    letters): the fix is an option declaring it."""
    typed = hub_id.lower() if hub_id == min(HUB_IDS) else hub_id  # one in other letters than declared
    result = invoke(["validate", "+experiment=quickstart", f"model={typed}"])
    assert result.exit_code == 2 and "is a Hugging Face hub id" in result.output, result.output
    assert f"set in: override `model={typed}`" in result.output, result.output
    assert fix_of(result.output).partition(" (")[0] in {f"model={o}" for o in options}, result.output


def test_a_hub_id_no_option_declares_is_named_with_those_declared_and_check_template_answers_as_typed() -> (
    None
):
    result = invoke(["validate", "+experiment=stage1_bfcl", "model=Qwen/Qwen3-32B"])
    assert result.exit_code == 2 and "none declares it" in result.output, result.output
    assert "qwen3_8b (Qwen/Qwen3-8B)" in fix_of(result.output), result.output
    typed = invoke(["check-template", "Qwen/Qwen3-8B"])
    assert typed.exit_code == 2 and "set in: MODEL `Qwen/Qwen3-8B`" in typed.output, typed.output
    assert fix_of(typed.output).startswith("`t3rl check-template qwen3_8b`"), typed.output


def test_a_required_option_left_out_is_answered_with_an_example_giving_it() -> None:
    """Was: Click's `Missing option '--out'.` (required arguments got their example in wave eight)."""
    result = invoke(["data", "bfcl"])
    said = " ".join(result.output.replace("│", " ").split())
    assert (
        result.exit_code == 2
        and "Missing option '--out': output directory, e.g. t3rl data bfcl --out" in said
    )


@pytest.mark.parametrize("typed", ["model.name,seed", "model.name, seed", "model.name seed"])
def test_several_keys_in_one_explain_are_given_one_each(typed: str) -> None:
    """Was: `did you mean --explain model.name?` (the second key dropped)."""
    result = invoke(["show", "+experiment=quickstart", "--explain", typed])
    assert result.exit_code == 2, result.output
    fixed = shlex.split(fix_of(result.output).partition(" (")[0])
    assert fixed == ["--explain", "model.name", "--explain", "seed"]
    shown = invoke(["show", "+experiment=quickstart", *fixed])
    assert shown.exit_code == 0 and "model.name" in shown.output and "seed" in shown.output


# --- a command's word among the overrides ------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "plan", "validate", "show"])
def test_help_typed_after_the_overrides_is_the_commands_help(command: str) -> None:
    """Was: `the shell split \\`+experiment=quickstart help\\` at the space`, fix `"+experiment='quickstart
    help'"` (an experiment named so). The plain path, which never builds the app, leaves such a line to it."""
    argv = [command, "+experiment=quickstart", "help"]
    assert not is_plain(argv)
    result = invoke(argv)
    assert result.exit_code == 2 and fix_of(result.output) == f"t3rl {command} --help", result.output
    assert invoke([command, "--help"]).exit_code == 0


@pytest.mark.parametrize("word", list(SUBCOMMANDS))
def test_a_commands_word_among_the_overrides_is_that_command_or_its_section(word: str) -> None:
    """Every command of t3rl typed after `t3rl validate`'s overrides: the line as that command when it takes
    overrides (which validates), else dropped; a word that is also a config section (`eval`) is still
    answered as the section (wave five's `t3rl show … model`)."""
    result = invoke(["validate", "+experiment=quickstart", word])
    assert result.exit_code == 2, result.output
    fix = fix_of(result.output)
    if "is a command of t3rl" not in result.output:
        assert f"--explain {word}" in fix, result.output  # the section's answer
        return
    if not SUBCOMMANDS[word].overrides:
        assert fix.startswith(f"drop '{word}' here"), result.output
        return
    line = shlex.split(fix.partition(" (")[0])
    assert line == ["t3rl", word, "+experiment=quickstart"], result.output
    checked = ["validate", *line[2:]] if word in ("run", "plan") else line[1:]  # nothing run or written
    assert invoke(checked).exit_code == 0


# --- several choices in one value --------------------------------------------------------------------


def _choice_params() -> list[tuple[str, Any]]:
    """(where, parameter) of every option and argument of t3rl's commands that declares choices."""
    found: list[tuple[str, Any]] = []

    def walk(command: Any, path: str) -> None:
        for param in command.params:
            if getattr(getattr(param, "type_descriptor", None), "choices", None):
                found.append((f"{path} {option_domain.param_name(param)}", param))
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, f"{path} {name}")

    walk(typer.main.get_command(app), "t3rl")
    return found


CHOICES = _choice_params()


@pytest.mark.parametrize(("where", "param"), CHOICES, ids=[where for where, _ in CHOICES])
def test_several_choices_in_one_value_are_each_given(where: str, param: Any) -> None:
    """Was: `'succeeded,failed' is not a choice (did you mean 'succeeded'?) … fix: --status succeeded`, the
    others dropped. Every parameter declaring choices, two of them in one value (by ',' or a space)."""
    first, second = (str(getattr(c, "value", c)) for c in param.type_descriptor.choices[:2])
    for typed in (f"{first},{second}", f"{first} {second}"):
        said = option_domain.refusal(param, typed)
        assert said is not None and "2 choices in one value" in said, (where, said)
        fix = said.partition("fix: ")[2]
        assert fix.index(first) < fix.index(second), (where, said)


def test_several_statuses_in_one_value_are_refused_with_each() -> None:
    assert {"t3rl runs --status", "t3rl score WORLD", "t3rl score --mode"} <= {w for w, _ in CHOICES}, CHOICES
    result = invoke(["runs", "--status", "succeeded,failed"])
    said = " ".join(result.output.replace("│", " ").split())
    assert result.exit_code == 2 and "fix: --status succeeded, then --status failed" in said, said


def test_the_runs_dir_given_for_a_run_dir_names_the_latest_run_below_it(tmp_path: Path) -> None:
    """Was: `runs is not a t3rl run dir (no config.yaml; \\`t3rl runs\\` lists the run dirs)`: a runs dir's
    run dirs are EXPERIMENT/TIMESTAMP, two levels below it (one level below was already named)."""
    for name in ("20260101-120000", "20260102-090000"):
        run = tmp_path / "runs" / ("a" if name.startswith("20260102") else "b") / name
        run.mkdir(parents=True)
        (run / "config.yaml").write_text("name: a\nstages: {}\n")
        (run / "manifest.json").write_text("{}")
    for argv in (["runs", "show", "runs"], ["run", "--run-dir", "runs"]):
        result = invoke(argv)
        said = " ".join(result.output.split())
        assert result.exit_code == 1 and "two levels below it" in said, said
        assert "the latest is runs/a/20260102-090000" in said and "`t3rl runs --runs-dir runs`" in said, said


def test_a_credential_in_a_pasted_argument_is_never_shown() -> None:
    """The marked form of an argument (`…<U+200B>`) breaks a credential's shape, which the scrub reads: the
    argument is shown as the scrub shows it retyped."""
    secret = "sk-proj-AbCdEf1234567890AbCdEf1234567890"
    result = invoke(["validate", "+experiment=quickstart", f"eval.engine.api_key={secret}\u200b"])
    assert result.exit_code == 2 and "U+200B" in result.output, result.output
    assert secret not in result.output and secret[:12] not in result.output, result.output
