"""An Optuna search's setting given without a search (`hydra.sweeper.n_trials=10`): with no
`hparams_search` chosen, Hydra's basic sweeper is the one composed, which has no such key. Written
`+hydra.sweeper.n_trials=10` it was added to it and ignored (valid, no search ran); without the `+`, the
basic sweeper's keys were listed as the fix. The answer is the search that has the setting."""

from __future__ import annotations

from collections.abc import Sequence

from hydra.core.override_parser.types import Override

from launch.config.errors import Problem

# Hydra's basic sweeper's own settings (`t3rl run -m` composes it); its `params` is a search's space.
_BASIC_SWEEPER = frozenset({"max_batch_size", "_target_"})


def search_settings_without_search(parsed: list[Override], searches: Sequence[str]) -> list[Problem]:
    """A problem per `hydra.sweeper.<key>` override of a key the basic sweeper lacks, when the command
    line chooses no search (`+hparams_search=NAME` or a `hydra/sweeper` option)."""
    if any(o.key_or_group in ("hparams_search", "hydra/sweeper") for o in parsed):
        return []
    choice = searches[0] if len(searches) == 1 else f"<{'|'.join(searches) or 'NAME'}>"
    return [
        Problem(
            key=o.key_or_group,
            message=f"'{o.key_or_group.split('.')[2]}' is a setting of an hparams search's sweeper, and "
            "this command line chooses no search (`t3rl ls hparams_search` lists them)",
            source=f"override `{o.input_line}`",
            fix=f"a search with it: t3rl run -m … +hparams_search={choice} ++{o.input_line.lstrip('+')}",
        )
        for o in parsed
        if o.key_or_group.startswith("hydra.sweeper.") and o.key_or_group.split(".")[2] not in _BASIC_SWEEPER
    ]
