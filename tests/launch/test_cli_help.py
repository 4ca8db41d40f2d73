"""Help, usage and shell completion: plain metavars in every command's help (`A B`, `--out DIR`, nothing
after a flag), and completion of config groups after `t3rl ls ` and of `group=` keys and their options
in overrides (from t3rl's config dirs and the command line's --config-dir)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from launch.cli.app import app


def _commands(command, path: tuple[str, ...] = ()):
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


COMMANDS = [path for path, _ in _commands(typer.main.get_command(app))]


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) or "t3rl" for p in COMMANDS])
def test_help_shows_plain_metavars(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    usage = next(line for line in result.output.splitlines() if "Usage:" in line)
    assert not re.search(r"\{\w", usage), usage  # `{a} {b}`: Typer's spelling of required arguments
    assert not re.search(r"<(bool|str|int|float|path|list\[[^>]*\])>", result.output), result.output
    assert not re.search(r"\[[a-z_]+\]\.\.\.", usage), usage  # `[overrides]...`: a lowercase metavar


def complete(line: str) -> list[str]:
    """What bash would offer for `line` (Typer's completion protocol, as the installed script asks)."""
    words = len(line.split()) - (0 if line.endswith(" ") else 1)
    env = {"_T3RL_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(words)}
    result = CliRunner().invoke(app, [], prog_name="t3rl", env=env)
    return result.output.split()


def test_ls_completes_config_groups() -> None:
    offered = complete("t3rl ls ")
    assert {"model", "hardware", "experiment", "reward"} <= set(offered)
    assert complete("t3rl ls mo") == ["model"]


def test_overrides_complete_group_keys_then_their_options() -> None:
    assert complete("t3rl run hard") == ["hardware="]
    assert complete("t3rl plan +exp") == ["+experiment="]
    assert "+experiment=quickstart" in complete("t3rl run +experiment=")
    assert complete("t3rl validate model=qwen3_8") == ["model=qwen3_8b"]
    assert "reward=binary" in complete("t3rl eval reward=")
    assert complete("t3rl run hardware.tensor_parallel=") == []  # a config key's value: nothing guessed


def test_overrides_complete_from_the_command_lines_config_dir(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "my_own_model.yaml").write_text("# mine\n")
    assert "model=my_own_model" in complete(f"t3rl run --config-dir {tmp_path} model=my")
    assert complete("t3rl run --config-dir /no/such/dir model=qwen3_8") == []


def test_ls_describes_each_option_with_a_whole_sentence() -> None:
    """The description is the header comment's first sentence: never cut at an abbreviation's period."""
    from launch.config.compose import config_source, group_options, groups

    for group in groups():
        for option in group_options(group):
            _, description = config_source(f"{group}/{option}") or ("", "")
            assert not description.endswith(("i.e.", "e.g.", "cf.", "vs.")), (group, option, description)
    _, rft = config_source("curriculum/tau2_rft") or ("", "")
    assert rft.endswith("i.e. the gradient of supervised fine-tuning on the kept on-policy samples "
                        "(t3rl_core/rewards/tau2.py).")  # fmt: skip
