"""Every option and argument of `t3rl` declares its domain (tests/support/cli_domain_hunt.py): a number
both bounds, a closed set of words its words, free text a reason in FREE_TEXT. Values outside each
declared domain, derived from the declaration, are refused while parsing: exit 2, before the command's
function runs, in a message naming the parameter, the value, the domain and a fix that is accepted (free
text: an empty or blank word, named as such). `--help` shows each domain.

Every command's function is replaced by a recorder, so no case composes a config or reads a file.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from launch.cli.app import app
from launch.cli.help_format import plain_metavars
from tests.support import cli_hunt
from tests.support.cli_domain_hunt import FREE_TEXT, outside, undeclared

PARAMETERS = cli_hunt.parameters()
CASES = [(p, v) for p in PARAMETERS for v in outside(p)]
DECLARED = [p for p in PARAMETERS if p.kind in ("int", "float", "choice")]


def _box(output: str) -> str:
    """The error box's text as one line (Rich wraps it at the terminal's width)."""
    lines = [line.strip().strip("│").strip() for line in output.splitlines() if line.strip().startswith("│")]
    return " ".join(" ".join(lines).split())


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[str, ...]]:
    """The commands whose function ran; every command's function is a recorder."""
    monkeypatch.chdir(tmp_path)
    calls: list[tuple[str, ...]] = []
    for path, command in cli_hunt.commands():
        if path and command.callback is not None:
            monkeypatch.setattr(command, "callback", lambda *a, _p=path, **k: calls.append(_p))
    return calls


def _line(parameter: cli_hunt.Parameter, text: str, root: Path) -> list[str]:
    return cli_hunt.with_value(parameter, text, cli_hunt.World(root))


def _assert_refused(
    parameter: cli_hunt.Parameter, text: str, root: Path, ran: list[Any], of: typer.Typer = app
) -> str:
    """The value is refused as the contract says; the fix the message gives."""
    result = CliRunner().invoke(of, _line(parameter, text, root), env={"COLUMNS": "200"})
    said = _box(result.output)
    # A group's own function (`runs`) runs before its command's line is parsed; the command's must not.
    assert result.exit_code == 2 and parameter.command not in ran, (result.exit_code, ran, result.output)
    if parameter.kind == "text":
        assert parameter.name in said and "an empty" in said, said
        return ""
    assert parameter.name in said and repr(text) in said, said
    if parameter.kind == "choice":
        assert all(choice in said for choice in parameter.choices), said
    else:
        assert f"from {parameter.low}" in said and f"to {parameter.high}" in said, said
    fix = re.search(r"fix: (.+)$", said)
    assert fix is not None, said
    words = shlex.split(fix.group(1))
    assert words[:-1] == ([] if parameter.argument else [parameter.name]), said
    return words[-1]


def test_every_parameter_declares_its_domain() -> None:
    assert undeclared(PARAMETERS) == []


def test_free_text_lists_only_parameters_that_are_free_text() -> None:
    free = {(p.command, p.name) for p in PARAMETERS if p.kind == "text"}
    assert set(FREE_TEXT) <= free, set(FREE_TEXT) - free


def test_the_audit_finds_a_domain_left_undeclared() -> None:
    """A number without a bound and a closed set spelt only in its metavar are found."""
    toy = typer.Typer()

    @toy.command("points")
    def points(
        n: Annotated[int, typer.Option(min=1, metavar="N")] = 1,
        share: Annotated[float, typer.Option(metavar="X")] = 0.5,
        mode: Annotated[str, typer.Option(metavar="eval|train")] = "eval",
        kind: Annotated[Literal["a", "b"], typer.Option()] = "a",
        width: Annotated[int, typer.Option(min=1, max=80)] = 1,
    ) -> None:
        """A command."""

    @toy.command("other")
    def other() -> None:
        """Another, so `points` is a subcommand."""

    plain_metavars(toy)
    found = undeclared(cli_hunt.parameters(typer.main.get_command(toy)))
    assert [line.split(":")[0] for line in found] == [
        "t3rl points --n",
        "t3rl points --share",
        "t3rl points --mode",
    ], found


@pytest.mark.parametrize(
    ("parameter", "value"), CASES, ids=[f"{' '.join(p.command)} {p.name} {v.id}" for p, v in CASES]
)
def test_a_value_outside_the_declared_domain_is_refused_before_the_command_runs(
    parameter: cli_hunt.Parameter, value: Any, tmp_path: Path, ran: list[tuple[str, ...]]
) -> None:
    fixed = _assert_refused(parameter, value.text, tmp_path, ran)
    if not fixed:
        return  # free text: the fix is any word the command knows later
    result = CliRunner().invoke(app, _line(parameter, fixed, tmp_path), env={"COLUMNS": "200"})
    assert result.exit_code == 0 and ran[-1:] == [parameter.command], (fixed, result.output)


def test_the_contract_fails_when_typer_words_are_left_as_they_are(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ran: list[tuple[str, ...]]
) -> None:
    """With the domain's own words switched off, the hunt fails: Typer names neither value nor fix."""
    typers_own = lambda param, ctx, value, parse: parse(ctx, value)  # noqa: E731
    monkeypatch.setattr("launch.cli.help_format._in_domain", typers_own)
    tp = next(p for p in PARAMETERS if p.command == ("eval",) and p.name == "--tp")
    with pytest.raises(AssertionError):
        _assert_refused(tp, str(int(tp.high or 0) + 1), tmp_path, ran)


@pytest.mark.parametrize("command", sorted({p.command for p in DECLARED}), ids=" ".join)
def test_help_shows_each_declared_domain(command: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for p in (p for p in DECLARED if p.command == command):
        if p.kind == "choice":
            assert all(choice in result.output for choice in p.choices), (p.name, result.output)
        else:
            assert f"{p.low}<=x<={p.high}" in result.output, (p.name, result.output)


def test_a_float_option_outside_its_bounds_is_refused_with_a_fix_inside_them(tmp_path: Path) -> None:
    """No t3rl option takes a float yet: the contract holds for one (nan, ±inf, 1e308, a fraction)."""
    toy = typer.Typer()
    given: list[float] = []

    @toy.command("share")
    def share(x: Annotated[float, typer.Option(min=0.0, max=1.0)] = 0.5) -> None:
        """A command."""
        given.append(x)

    @toy.command("other")
    def other() -> None:
        """Another, so `share` is a subcommand."""

    plain_metavars(toy)
    (parameter,) = cli_hunt.parameters(typer.main.get_command(toy))[:1]
    assert parameter.kind == "float" and outside(parameter)
    for value in outside(parameter):
        fixed = _assert_refused(parameter, value.text, tmp_path, given, of=toy)
        assert not given, value  # refused before the command ran
        result = CliRunner().invoke(toy, _line(parameter, fixed, tmp_path))
        assert result.exit_code == 0 and given.pop() == float(fixed), (value, fixed, result.output)
