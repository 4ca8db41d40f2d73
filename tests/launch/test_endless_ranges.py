"""A range sweep no one can list: a step of 0, an infinite or NaN bound or step, or more values than a
float counts. `seed=range(0,inf)` hung `t3rl validate` (Hydra's iterator never stops; the sweep's fix
listed every value), `validate -m … range(0,10,0)` ended in a ZeroDivisionError and `range(0,inf)` in
an OverflowError. Every reader of a sweep's values (the one-run refusal, the multirun's count, a
search entry) refuses it at its key, with a fix, before listing anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_app import fix_of, invoke
from tests.support.no_slime import cli_workdir

ENDLESS = [
    "range(0,inf)",
    "range(0,nan)",
    "range(-inf,0)",
    "range(0,10,0)",
    "range(0,10,inf)",
    "range(0,1e300,1e-300)",
]
COMMANDS = [["validate"], ["validate", "-m"], ["plan", "-m"], ["run", "-m"]]


@pytest.fixture(autouse=True)
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return cli_workdir(tmp_path / "work", monkeypatch)


@pytest.mark.timeout(300)  # the refusal takes well under a second; before, the command never ended
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("value", ENDLESS)
def test_an_endless_range_is_refused_at_its_key(here: Path, command: list[str], value: str) -> None:
    typed = f"seed={value}"
    result = invoke([*command, "+experiment=quickstart", typed], COLUMNS="400")
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error seed: '{typed}' is no range a sweep can run through"), (
        result.output
    )
    assert fix_of(result.output).startswith(f"drop `{typed}`"), result.output
    assert [p for p in here.rglob("*") if p.is_file() and "cache" not in p.parts] == []


@pytest.mark.timeout(300)
@pytest.mark.parametrize("value", ["range(0,inf)", "range(1e-6,1e300,1e-300)"])
def test_an_endless_range_in_a_search_is_refused_at_its_key(value: str) -> None:
    key = "stages.train.curriculum.optimizer.lr"
    typed = f"{key}={value}"
    result = invoke(
        ["validate", "-m", "+experiment=stage1_bfcl", "hparams_search=bfcl_lr_kl_reward", typed],
        COLUMNS="400",
    )
    assert result.exit_code == 2, result.output
    assert f"'{typed}' is no range a sweep can run through" in result.output, result.output
