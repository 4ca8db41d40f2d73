"""Every option and argument of every `t3rl` command, found from the CLI's own declarations
(tests/support/cli_hunt.py), given the hostile values of its kind: refused with exit 2 (or the
command's documented 1 for a run dir it cannot use) in one message that names the parameter or the
value, with no traceback and nothing written; or accepted. A misspelt option is answered with the real
one, and options that exclude each other are refused naming both. `t3rl plan`/`validate` import no
heavy framework whatever they are given.

Commands are stopped at their validation: eval's episodes and data's preparation are stubbed, run plans
with the dry executor. tests/launch/test_cli_bad_arguments.py keeps the hand-written cases.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from tests.support import cli_hunt
from tests.support.no_slime import no_slime_workdir

PARAMETERS = cli_hunt.parameters()
CASES = [(p, v) for p in PARAMETERS for v in cli_hunt.values_of(p)]
OPTIONS = [p for p in PARAMETERS if not p.argument]
# Commands checking a config only: they must not import a training or serving stack to refuse a value.
LIGHT = {("plan",), ("validate",)}
# A message's start: a Click/Typer usage error's box or t3rl's own `error` line.
_MESSAGE = re.compile(r"─ Error ─|^error\b", re.M)

# Options one command line cannot hold together: (id, the line, the options its refusal must name).
CONFLICTS: list[tuple[str, list[str], list[str]]] = [
    (
        "run --from --only",
        ["run", "+experiment=quickstart", "--from", "eval_tiny", "--only", "eval_tiny"],
        ["--from", "--only"],
    ),
    (
        "plan --from --only",
        ["plan", "+experiment=quickstart", "--from", "eval_tiny", "--only", "eval_tiny"],
        ["--from", "--only"],
    ),
    (
        "plan --run-dir --out",
        ["plan", "+experiment=quickstart", "--run-dir", "{dir}", "--out", "{new}"],
        ["--run-dir", "--out"],
    ),
    (
        "plan -m --run-dir",
        ["plan", "-m", "+experiment=quickstart", "--run-dir", "{dir}"],
        ["-m", "--run-dir"],
    ),
    ("run -m --run-dir", ["run", "-m", "+experiment=quickstart", "--run-dir", "{dir}"], ["-m", "--run-dir"]),
    ("plan -m --out", ["plan", "-m", "+experiment=quickstart", "--out", "{new}"], ["-m", "--out"]),
    (
        "eval --resume without --out",
        ["eval", "+experiment=quickstart", "--engine", "reference", "--resume"],
        ["--resume", "--out"],
    ),
]


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> cli_hunt.World:
    """The files path values name, an empty working dir, and commands stopped before real work."""
    no_slime_workdir(tmp_path / "work", monkeypatch)
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))

    def no_episodes(runtime: Any, config: Any, data: Any, out: Any, **kwargs: Any) -> dict[str, Any]:
        return {"complete": True}

    monkeypatch.setattr("t3rl_core.eval.evaluate.evaluate", no_episodes)
    monkeypatch.setattr("launch.cli.eval_command._check_tokenizer", lambda *args: None)
    monkeypatch.setattr("launch.cli.runtime.prepare_and_show", lambda env, out: 0)
    built = cli_hunt.make_world(tmp_path / "world")
    yield built
    built.readonly.chmod(0o755)  # pytest removes the tmp tree afterwards


def _files(root: Path) -> set[str]:
    """What the world and working dirs hold (t3rl's cache, beside them, is no command's output)."""
    return {str(p.relative_to(root)) for top in ("world", "work") for p in (root / top).rglob("*")}


def _invoke(argv: list[str]) -> Any:
    result = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), (
        f"{argv}: {type(result.exception).__name__}: {result.exception}\n{result.output}"
    )
    assert "Traceback" not in result.output, result.output
    return result


@pytest.mark.parametrize("command", sorted(cli_hunt.BASE), ids=" ".join)
def test_each_base_line_ends_as_declared(world: cli_hunt.World, command: tuple[str, ...]) -> None:
    """The hunt's base lines end as BASE says, so a case ending that way was really accepted."""
    argv, code, says = cli_hunt.BASE[command]
    result = _invoke([*command, *map(world.spell, argv)])
    assert result.exit_code == code and says in result.output, result.output


def test_every_command_that_needs_words_has_a_base_line() -> None:
    """A new command with a required argument or option is hunted only once its base line is declared."""
    for path, command in cli_hunt.commands():
        if getattr(command, "commands", None):
            continue
        if any(p.required for p in command.params):
            assert path in cli_hunt.BASE, f"declare `t3rl {' '.join(path)}`'s base line in cli_hunt.BASE"


@pytest.mark.parametrize(
    ("parameter", "value"),
    CASES,
    ids=[f"{' '.join(p.command)} {p.name} {v.id}" for p, v in CASES],
)
def test_a_hostile_value_is_refused_in_one_message_or_accepted(
    world: cli_hunt.World, tmp_path: Path, parameter: cli_hunt.Parameter, value: cli_hunt.Value
) -> None:
    if value.needs_non_root and cli_hunt.is_root():
        pytest.skip("root writes into a read-only dir")
    text = value.text(world)
    argv = cli_hunt.with_value(parameter, text, world)
    before, heavy = _files(tmp_path), cli_hunt.heavy_modules()
    result = _invoke(argv)
    _, base_code, base_says = cli_hunt.BASE.get(parameter.command, ([], 0, ""))
    if parameter.command in LIGHT:
        assert cli_hunt.heavy_modules() <= heavy, f"{argv} imported {cli_hunt.heavy_modules() - heavy}"
    if result.exit_code == 0 or (result.exit_code == base_code and base_says in result.output):
        return  # accepted (what an accepted value does is each option's own tests')
    out = result.output
    assert result.exit_code in cli_hunt.refusal_codes(parameter.command), out
    shown = text.split("\n")[0][:40]
    # a value holding control characters is named with each by its code, never written raw to a terminal
    # (launch/cli/pasted_characters: `a<U+001B>[31m`)
    coded = "".join(f"<U+{ord(c):04X}>" if unicodedata.category(c) == "Cc" else c for c in shown)
    names = [*parameter.names, *([parameter.metavar] if parameter.metavar else [])]
    assert any(n in out for n in names) or (shown and (shown in out or coded in out)), (
        f"names neither {names} nor {shown!r}:\n{out}"
    )
    assert len(_MESSAGE.findall(out)) <= 1, out
    assert _files(tmp_path) == before, f"{argv} wrote {_files(tmp_path) - before}"


@pytest.mark.parametrize("option", OPTIONS, ids=[f"{' '.join(p.command)} {p.name}" for p in OPTIONS])
def test_a_misspelt_option_is_answered_with_the_real_one(
    world: cli_hunt.World, tmp_path: Path, option: cli_hunt.Parameter
) -> None:
    wrong = cli_hunt.near_miss(option.name)
    before = _files(tmp_path)
    result = _invoke([*option.command, wrong, "x"])
    assert result.exit_code == 2 and wrong in result.output and option.name in result.output, result.output
    assert _files(tmp_path) == before


@pytest.mark.parametrize(("argv", "given"), [c[1:] for c in CONFLICTS], ids=[c[0] for c in CONFLICTS])
def test_options_that_exclude_each_other_are_refused_naming_both(
    world: cli_hunt.World, tmp_path: Path, argv: list[str], given: list[str]
) -> None:
    before = _files(tmp_path)
    result = _invoke(list(map(world.spell, argv)))
    assert result.exit_code in {1, 2}, result.output
    assert all(option in result.output for option in given), (given, result.output)
    assert _files(tmp_path) == before


@pytest.mark.parametrize("command", ["validate", "plan", "show"])
def test_a_group_option_too_long_for_a_file_name_is_an_unknown_option(
    world: cli_hunt.World, tmp_path: Path, command: str
) -> None:
    """`model=<300 characters>`: Hydra's file search raised ENAMETOOLONG (exit 1, a path under conf/)."""
    before = _files(tmp_path)
    result = _invoke([command, "+experiment=quickstart", "model=" + "q" * 300])
    assert result.exit_code == 2 and "unknown option 'qqq" in result.output, result.output
    assert "fix: choose one of:" in result.output and "qwen3_8b" in result.output
    assert _files(tmp_path) == before


# `t3rl plan --out LINK` writes its plan where the link points (RunDir resolves it): accepted.
OUTS = [p for p in OPTIONS if p.name == "--out" and p.command != ("plan",)]


@pytest.mark.parametrize("option", OUTS, ids=[" ".join(p.command) for p in OUTS])
def test_an_out_dir_that_is_a_link_to_nothing_is_refused_before_any_work(
    world: cli_hunt.World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: cli_hunt.Parameter
) -> None:
    """`data bfcl --out LINK` prepared every split, then failed to make the dir ('File exists', exit 1)."""
    worked: list[str] = []
    monkeypatch.setattr("launch.cli.runtime.prepare_and_show", lambda env, out: worked.append("data") or 0)
    monkeypatch.setattr(
        "t3rl_core.eval.evaluate.evaluate", lambda *a, **k: worked.append("eval") or {"complete": True}
    )
    for target in ("dangling", "dangling/sub"):
        before = _files(tmp_path)
        result = _invoke(cli_hunt.with_value(option, str(world.root / target), world))
        assert result.exit_code == 2 and "--out" in result.output, result.output
        assert "symbolic link" in result.output and not worked
        assert _files(tmp_path) == before


SINGLE = [p for p in OPTIONS if p.kind != "flag" and not p.multiple]


@pytest.mark.parametrize("option", SINGLE, ids=[f"{' '.join(p.command)} {p.name}" for p in SINGLE])
def test_a_single_valued_option_given_twice_is_refused_naming_it(
    world: cli_hunt.World, tmp_path: Path, option: cli_hunt.Parameter
) -> None:
    """`--out a … --out b`: Click kept the last one silently (the first was what the author had read)."""
    base = cli_hunt.without(cli_hunt.BASE.get(option.command, ([], 0, ""))[0], option)
    argv = [*option.command, *map(world.spell, base), option.name, "1", f"{option.name}=2"]
    before = _files(tmp_path)
    result = _invoke(argv)
    assert result.exit_code == 2 and option.name in result.output and "given twice" in result.output, (
        result.output
    )
    assert _files(tmp_path) == before
    same = _invoke([*option.command, *map(world.spell, base), f"{option.name}=1", f"{option.name}=1"])
    assert "given twice" not in same.output  # the same value twice changes nothing


def test_a_relative_path_from_a_working_dir_that_is_gone_is_measured_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The length check made the path absolute, and os.getcwd() raised in a removed working dir."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    result = _invoke(["runs", "show", "rel/dir"])
    assert result.exit_code == 1 and "rel/dir is not a t3rl run dir" in result.output, result.output
