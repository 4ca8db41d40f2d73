"""The settings of an hparams search's sweeper, with their domains: Hydra's OptunaSweeperConf types
`direction` as Any and `n_trials` as a bare int, so `direction=maximise` (Optuna knows `maximize`) and
`n_trials=0` (a study of no trial) composed and validated, and failed or did nothing once the search
started. The keys declared here are the ones whose values Optuna reads as words or counts; the sweeper's
other keys stay Hydra's to type.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from launch.config.errors import Problem, did_you_mean


def _by_name(value: Any) -> Any:
    """A member of an enum by its name: the Optuna sweeper's schema gives a search file that sets no
    direction its own enum's member (`Direction.minimize`), which the Literal refused (was: "Input should
    be 'minimize' or 'maximize' (got <Direction.minimize: 1>)" for every search without one)."""
    return value.name if isinstance(value, Enum) else value


Direction = Annotated[Literal["minimize", "maximize"], BeforeValidator(_by_name)]


class SearchSettings(BaseModel):
    """hydra.sweeper of a search (the keys t3rl declares; the others pass to Hydra as they are)."""

    model_config = ConfigDict(extra="allow")

    # The objective is maximised or minimised (a list: one direction per objective of a multi-objective
    # study), spelt as Optuna's StudyDirection names them.
    direction: Direction | list[Direction] = "minimize"
    # Trials in the whole study: at least one.
    n_trials: Annotated[int, Field(ge=1)] = 20
    # Trials asked per batch (each runs as its own launcher process): at least one.
    n_jobs: Annotated[int, Field(ge=1)] = 2
    # Fraction of failed trials in a batch that ends the search: 0 (none tolerated) to 1.
    max_failure_rate: Annotated[float, Field(ge=0, le=1)] = 0.0


def search_setting_problems(sweeper: Mapping[str, Any], source_of: Callable[[str], str]) -> list[Problem]:
    """A problem per declared setting of `sweeper` outside its domain; `source_of(key)`: where it was set."""
    try:
        SearchSettings.model_validate(dict(sweeper))
    except ValidationError as error:
        # one per setting: a direction is refused once by each member of its union
        first = {str(item["loc"][0]): item for item in reversed(error.errors(include_url=False))}
        return [_problem(item, source_of) for item in reversed(first.values())]
    return []


def _problem(item: Any, source_of: Callable[[str], str]) -> Problem:
    field = str(item["loc"][0])
    key = f"hydra.sweeper.{field}"
    value = item.get("input")
    if field == "direction":
        meant = did_you_mean(str(value), ["minimize", "maximize"])
        fix = f"++{key}={meant or 'maximize'}" + ("" if meant else " (or minimize)")
    elif field == "max_failure_rate" and isinstance(value, int | float) and 1 < value <= 100:
        fix = f"++{key}={value / 100:g} (a fraction: {value:g} % is {value / 100:g})"
    else:
        bound = _bound(item)
        fix = f"++{key}={bound}" if bound is not None else f"see {key}'s comment in the search's file"
    return Problem(key, f"{item['msg']} (got {value!r})", source_of(key), fix)


def _bound(item: Any) -> str | None:
    """The bound a count or fraction broke, as the nearest value inside it."""
    context: Sequence[Any] = list((item.get("ctx") or {}).values())
    return str(context[0]) if context else None
