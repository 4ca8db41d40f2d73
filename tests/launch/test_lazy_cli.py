"""launch.cli.lazy: `t3rl --help` lists every subcommand with its own help without importing its module;
resolving one imports it."""

from __future__ import annotations

import inspect
import re

import click
import pytest
import typer.main
from typer.testing import CliRunner

from launch.cli.app import app
from launch.cli.lazy import SUBCOMMANDS


def _root() -> click.Group:
    return typer.main.get_command(app)  # type: ignore[return-value]


def test_the_table_lists_every_command_with_its_own_help() -> None:
    root = _root()
    commands = root.commands  # every module imported
    assert list(commands) and set(commands) == set(SUBCOMMANDS)
    for name, entry in SUBCOMMANDS.items():
        first = inspect.cleandoc(commands[name].help or "").split("\n\n")[0].strip()
        assert entry.help == first, name


def test_help_reads_the_same_listed_or_loaded() -> None:
    root = _root()
    ctx = click.Context(root, info_name="t3rl", terminal_width=200)
    listed = root.get_help(ctx)
    assert not root._loaded  # nothing was imported to list the commands
    root.commands  # noqa: B018  (loads every command)
    assert root.get_help(ctx) == listed


def test_a_command_resolves_to_its_module() -> None:
    result = CliRunner().invoke(app, ["runs", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "List run directories" in result.output
    result = CliRunner().invoke(app, ["no-such-command"])
    assert result.exit_code == 2 and "No such command" in result.output


def test_a_module_s_commands_are_built_once_a_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """An in-process caller makes a new group for every command line; Typer built each command of the
    resolved module again for each (~6 ms of a warm `t3rl validate`)."""
    import launch.cli.inspect
    from launch.cli import lazy

    monkeypatch.setattr(lazy, "_BUILT", {}, raising=False)
    register, calls = launch.cli.inspect.register, []
    monkeypatch.setattr(launch.cli.inspect, "register", lambda sub: calls.append(sub) or register(sub))
    for _ in range(3):
        assert CliRunner().invoke(app, ["ls", "--help"]).exit_code == 0
    assert len(calls) == 1


def test_a_built_command_runs_what_its_module_holds_when_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Built once, a command still calls its module's functions by name: what a test (or a plugin)
    puts there after the first invocation is what runs."""
    import launch.cli.inspect

    assert CliRunner().invoke(app, ["ls", "model"]).exit_code == 0
    monkeypatch.setattr(launch.cli.inspect, "ls_command", lambda group, dirs, option: 3)
    assert CliRunner().invoke(app, ["ls", "model"]).exit_code == 3


def test_a_command_built_once_shows_the_help_names_of_each_context_that_asks() -> None:
    """Click made a command's help option once, with the first context's names: after `t3rl validate
    --help` (`-h, --help`), the CLI reference's bare context showed `-h` too, and the other way round."""
    from launch.cli.lazy import _commands_of

    command = _commands_of(SUBCOMMANDS["validate"].module, _root().rich_markup_mode)["validate"]
    under_root = click.Context(command, help_option_names=["-h", "--help"])
    bare = click.Context(command)
    for _ in range(2):
        assert command.get_help_option(under_root).opts == ["-h", "--help"]
        assert command.get_help_option(under_root) is command.get_help_option(under_root)
        assert command.get_help_option(bare).opts == ["--help"]
    shown = CliRunner().invoke(app, ["validate", "--help"], env={"COLUMNS": "200"}).output
    assert re.search(r"--help +-h ", shown), shown
