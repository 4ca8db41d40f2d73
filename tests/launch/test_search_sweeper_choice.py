"""A search file of one's own that chose another sweeper than Optuna's: with Optuna's settings, Hydra's
schema of the other refuses them (was: `t3rl validate -m` "t3rl failed unexpectedly: AttributeError", and
`t3rl run -m` a ConfigCompositionException); without them, a search on Hydra's basic sweeper (was: valid,
then the run printed its points succeeded and its trials failed, "Error executing job")."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli_app import fix_of, refused, validates

_HEADER = "# @package _global_\ndefaults:\n  - override /hydra/sweeper: {sweeper}\n"
_OBJECTIVE = "objective:\n  stage: eval\n  metric: overall.accuracy\n"


def _search(tmp_path: Path, sweeper: str, settings: str) -> list[str]:
    (tmp_path / "hparams_search").mkdir(exist_ok=True)
    text = _HEADER.format(sweeper=sweeper) + _OBJECTIVE + "hydra:\n  sweeper:\n" + settings
    (tmp_path / "hparams_search" / "mine.yaml").write_text(text)
    return ["-m", "+experiment=stage1_bfcl", "+hparams_search=mine", "--config-dir", str(tmp_path)]


def test_optunas_settings_under_the_basic_sweeper_are_refused_at_the_file(tmp_path: Path) -> None:
    out = refused(_search(tmp_path, "basic", "    direction: maximize\n    n_trials: 2\n"))
    assert "error hydra.sweeper.direction: Key 'direction' not in 'BasicSweeperConf'" in out, out
    assert "hparams_search/mine.yaml, drop `direction:` under hydra.sweeper" in fix_of(out)


def test_a_search_on_another_sweeper_is_refused_with_optunas(tmp_path: Path) -> None:
    out = refused(_search(tmp_path, "basic", "    params:\n      reward: progress,binary\n"))
    assert "error hydra.sweeper: a search runs on Hydra's Optuna sweeper" in out, out
    assert "- override /hydra/sweeper: optuna" in fix_of(out)
    validates(
        _search(
            tmp_path,
            "optuna",
            "    n_trials: 2\n    n_jobs: 1\n    params:\n      reward: choice(progress, binary)\n",
        )
    )
