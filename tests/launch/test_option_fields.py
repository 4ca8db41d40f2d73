"""One truth per setting between `t3rl eval`'s options and the eval config fields they set
(launch/cli/option_fields.py): each option takes exactly the values its field takes, tried both ways at
each edge of the option's declared bounds; every option the command hands to `with_options` is in the
table; each sets the field the table names, and a value its field refuses is refused naming the option;
`--tp` reaches the server through `eval.server.tp`; a value above its field's usual ceiling is warned
about as validate warns about it in a config.

In process: the command's function is a recorder, so no case composes a config or runs an eval.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import typer
from pydantic import ValidationError
from typer.testing import CliRunner

from launch.cli import eval_command
from launch.cli.app import app
from launch.cli.eval_setup import with_options
from launch.cli.option_fields import EVAL_FIELDS, option_key, usual
from t3rl_core.eval import evaluate as evaluation
from t3rl_core.eval.config import EvalConfig
from tests.support import cli_hunt

EVAL_PARAMETERS = {p.name: p for p in cli_hunt.parameters() if p.command == ("eval",)}
NUMBERS = [option for option in EVAL_FIELDS if EVAL_PARAMETERS[option].kind in ("int", "float")]
# A value inside the domain of each free-text option of the table, unlike the base config's.
TEXT_VALUES = {"--engine": "hf", "--url": "http://127.0.0.1:1", "--split": "bfcl_val"}
# The base config: an SGLang engine, so --url applies.
BASE = {"engine": {"name": "sglang"}}


def _at(data: dict[str, Any], path: str) -> Any:
    for part in path.split("."):
        data = data[part]
    return data


def _field_takes(path: str, value: int) -> bool:
    data = EvalConfig.model_validate(BASE).model_dump(mode="json")
    *section, name = path.split(".")
    (_at(data, ".".join(section)) if section else data)[name] = value
    try:
        EvalConfig.model_validate(data)
    except ValidationError:
        return False
    return True


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The values `t3rl eval`'s function was called with; the function is a recorder."""
    calls: list[dict[str, Any]] = []
    (command,) = (c for path, c in cli_hunt.commands() if path == ("eval",))
    monkeypatch.setattr(command, "callback", lambda **given: calls.append(given))
    return calls


def test_the_table_holds_the_number_options() -> None:
    assert {"--k", "--limit-per-category", "--tp"} <= set(NUMBERS)


@pytest.mark.parametrize("option", NUMBERS)
def test_an_option_takes_exactly_what_its_field_takes(option: str, ran: list[dict[str, Any]]) -> None:
    """At each edge of the option's bounds (and one past it), the option accepts a value exactly when
    the field does: two integer ranges agreeing there are the same range."""
    declared = EVAL_PARAMETERS[option]
    assert declared.low is not None and declared.high is not None
    low, high = int(declared.low), int(declared.high)
    disagree = []
    for value in (low - 1, low, high, high + 1):
        ran.clear()
        result = CliRunner().invoke(app, ["eval", option, str(value)])
        option_takes = result.exit_code == 0 and len(ran) == 1
        assert option_takes or result.exit_code == 2, result.output
        if option_takes != _field_takes(EVAL_FIELDS[option], value):
            disagree.append((value, option_takes))
    assert disagree == [], (
        f"{option} [{low}, {high}] vs eval.{EVAL_FIELDS[option]}: {disagree} (value, option takes)"
    )


def _given_to_with_options() -> set[str]:
    """The keywords `t3rl eval` hands to `with_options`, read from its source."""
    tree = ast.parse(inspect.getsource(eval_command))
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "with_options"
    ]
    assert calls, "t3rl eval no longer calls with_options"
    return {keyword.arg for call in calls for keyword in call.keywords if keyword.arg}


def test_every_option_that_sets_a_field_is_in_the_table() -> None:
    by_key = {option_key(name): name for name in EVAL_PARAMETERS}
    given = {by_key[key] for key in _given_to_with_options()}
    assert given == set(EVAL_FIELDS), (given - set(EVAL_FIELDS), set(EVAL_FIELDS) - given)


@pytest.mark.parametrize("option", sorted(EVAL_FIELDS))
def test_each_option_sets_the_field_the_table_names(option: str) -> None:
    declared = EVAL_PARAMETERS[option]
    value = TEXT_VALUES[option] if option in TEXT_VALUES else int(declared.high or 0)
    base = EvalConfig.model_validate(BASE)
    assert _at(base.model_dump(mode="json"), EVAL_FIELDS[option]) != value
    config = with_options(base, **{option_key(option): value})
    assert _at(config.model_dump(mode="json"), EVAL_FIELDS[option]) == value
    if option in NUMBERS:  # one past the field's bound: refused naming the option, not the key
        with pytest.raises(typer.BadParameter) as refused:
            with_options(base, **{option_key(option): value + 1})
        assert refused.value.param_hint == option


@pytest.mark.parametrize("option", [o for o in NUMBERS if usual(o) is not None])
def test_an_option_above_its_usual_ceiling_is_warned_about(
    option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate warns about a config's value above its field's usual ceiling (`eval.server.tp: 20`);
    the option sets its value after validate ran, so the command warns, naming the option."""
    ceiling = usual(option)
    assert ceiling is not None
    base = EvalConfig.model_validate(BASE)
    with_options(base, **{option_key(option): int(ceiling.most)})
    assert capsys.readouterr().err == ""
    with_options(base, **{option_key(option): int(ceiling.most) + 1})
    warned = " ".join(capsys.readouterr().err.split())
    assert f"warning {option}: {option} is {int(ceiling.most) + 1}, far above" in warned, warned
    assert f"set in: the command line fix: {option} {ceiling.typical:g}," in warned, warned


def test_a_served_checkpoint_runs_on_eval_server_tp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`t3rl eval --tp` sets eval.server.tp (above), and the server the eval starts takes its size there."""
    started: list[int] = []

    class Started(Exception):
        pass

    def server(*_: Any, tp: int, **__: Any) -> None:
        started.append(tp)
        raise Started

    monkeypatch.setattr(evaluation, "SGLangServer", server)
    data = tmp_path / "bfcl_test.jsonl"
    data.write_text('{"prompt": [{"role": "user", "content": "x"}], "metadata": {"index": "a"}}\n')
    parsers = SimpleNamespace(tool_call_parser="qwen25", think_tags=None, reasoning_parser=None)
    for tp in (None, 2):
        config = EvalConfig.model_validate({"engine": {"name": "sglang"}, "server": {"tp": tp}})
        with pytest.raises(Started):
            evaluation.evaluate(
                SimpleNamespace(parsers=parsers),  # type: ignore[arg-type]
                config,
                data,
                tmp_path / "out",
                serve_checkpoint=tmp_path,
                progress=False,
            )
    assert started == [1, 2]  # unset: one GPU here
