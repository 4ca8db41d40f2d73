"""An hparams search's settings Optuna reads as words and counts, with their domains (launch/checks/
search_settings.py): `direction=maximise`, `n_trials=0`, `n_jobs=0` and `max_failure_rate=50` validated
(Hydra types direction as Any, the counts as bare ints) and failed, or did nothing, once the search ran.
Each fix is applied as printed and must validate."""

from __future__ import annotations

from functools import cache

import pytest
from click.testing import Result

from tests.support.cli_app import fix_of, invoke

SEARCH = ["validate", "-m", "+experiment=stage1_bfcl", "+hparams_search=bfcl_lr_kl_reward"]


@cache  # the same command line validated by several cases: the search's every edge planned (~1.5 s of CPU)
def _validated(*argv: str) -> Result:
    return invoke([*SEARCH, *argv])


@pytest.mark.parametrize(
    ("typed", "fix"),
    [
        ("++hydra.sweeper.direction=maximise", "++hydra.sweeper.direction=maximize"),
        ("++hydra.sweeper.n_trials=0", "++hydra.sweeper.n_trials=1"),
        ("++hydra.sweeper.n_jobs=0", "++hydra.sweeper.n_jobs=1"),
        ("++hydra.sweeper.max_failure_rate=50", "++hydra.sweeper.max_failure_rate=0.5"),
    ],
)
def test_a_search_setting_outside_its_domain_is_refused_with_a_fix_that_validates(
    typed: str, fix: str
) -> None:
    result = invoke([*SEARCH, typed])
    assert result.exit_code == 2, result.output
    assert f"set in: override `{typed}`" in result.output, result.output
    assert fix_of(result.output).split(" (")[0] == fix, result.output
    assert _validated(fix).exit_code == 0, _validated(fix).output


def test_the_shipped_search_is_within_every_domain() -> None:
    assert _validated().exit_code == 0, _validated().output


@pytest.mark.parametrize("typed", ["lr=interval(1e-7,1e-5)", "++hydra.sweeper.params.lr=interval(1e-7,1e-5)"])
def test_a_searched_setting_by_its_last_name_is_answered_with_its_key_and_distribution(typed: str) -> None:
    """`++hydra.sweeper.params.lr=…` was taken for a setting of Hydra's node and validated (no trial sets
    `lr`); `lr=interval(…)`'s fix was the bound `…optimizer.lr=1e-07`, a single value, not the search."""
    result = invoke([*SEARCH, typed])
    assert result.exit_code == 2, result.output
    fix = "stages.train.curriculum.optimizer.lr=interval(1e-7,1e-5)"
    assert fix_of(result.output).startswith(f'"{fix}"'), result.output
    assert _validated(fix).exit_code == 0, _validated(fix).output
