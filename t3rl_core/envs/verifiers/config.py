"""Config of a verifiers environment as a t3rl world (pydantic only; verifiers is imported by the env)."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator

from t3rl_core.config import EnvConfig
from t3rl_core.envs.verifiers.declared import requirement_problem
from t3rl_core.envs.verifiers.loader_args import (
    dependency_problem,
    is_environment,
    loader_problem,
    module_name,
)
from t3rl_core.fields import Corrected, Identifier, Name, Seconds, SplitName
from t3rl_core.import_paths import nearest_module, same_module
from t3rl_core.strict import StrictModel

# What every episode's outcome carries (t3rl_core.envs.verifiers.env).
OUTCOME = frozenset(
    {"reward", "metrics", "stop_condition", "truncated", "error", "turn_rewards", "turn_steps"}
)


class VerifiersDataConfig(StrictModel):
    """The environment's own datasets (`dataset`, `eval_dataset`) written as t3rl JSONL splits."""

    # Name of the prepared split file (<split>.jsonl) of the environment's `dataset` rows.
    train_split: SplitName = "verifiers_train"
    # Name of the prepared split file of its `eval_dataset` rows.
    eval_split: SplitName = "verifiers_eval"
    # Rows per split in the environment's order (verifiers' `-n`); None = all.
    limit: int | None = Field(None, ge=1)


class VerifiersEnvConfig(EnvConfig):
    """An installed verifiers environment: `load_environment(**args)` of module `id`."""

    OUTCOME_FIELDS = OUTCOME
    SIZE_FIELDS = ("data.limit",)
    # The framework its rubric runs on: its version is part of an eval's scorer identity, beside the
    # environment's own package (scorer_module; t3rl_core.eval.identity.scorer_record).
    SCORER_LIBRARIES: ClassVar[tuple[str, ...]] = ("verifiers",)
    # How long t3rl waits for the environment and how much it reads of it, not what it is: left out of an
    # eval's benchmark identity (an episode they cut fails, unscored: the coverage part).
    WHERE_FIELDS: ClassVar[tuple[str, ...]] = ("step_timeout_s", "max_observation_chars")

    name: Literal["verifiers"] = "verifiers"
    # The environment's id as the hub names it (`owner/my-env`) or its module name (`my_env`).
    id: Name
    # Keyword arguments of the environment's load_environment().
    args: dict[Identifier, Any] = Field(default_factory=dict)
    data: VerifiersDataConfig = Field(default_factory=VerifiersDataConfig)
    # Seconds the environment may take between the model's turn and its next prompt or its end (its
    # env_response, tools and rubric; the model's own generation is not counted) before the episode
    # fails: verifiers bounds nothing unless the environment sets timeout_seconds.
    step_timeout_s: Seconds = 600.0
    # Characters of one message the environment adds (a tool's result, an env_response) past which the
    # episode fails as the environment's: tokenizing megabytes takes minutes, and no context holds them.
    max_observation_chars: int = Field(200_000, ge=1)

    def gold_missing(self, row: Mapping[str, Any] | None) -> str | None:
        """verifiers keeps no gold actions; the reference engine answers with a row's `answer` (its
        `label`), so a row without one has nothing to play."""
        if row is None or row.get("label"):
            return None
        return f"the row has no answer (environment {self.id}'s dataset gives it no `answer` column value)"

    @field_validator("id")
    @classmethod
    def _installed(cls, value: str) -> str:
        """The environment's module is installed here (its loader's arguments are read from it)."""
        name = module_name(value)
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if found:
            problem = requirement_problem(value, name) or dependency_problem(value)
            if problem is not None:
                raise ValueError(problem)
            return value
        message = (
            f"no installed module '{name}' (environment '{value}'): install the environment first "
            f"(`prime env install {value}` or `pip install` its package)"
        )
        # The id's own module spelt otherwise (`Owner/Wordle`, `wordle.env` for `wordle_env`) first:
        # nearest_module compares text as written, and found none for `QUOKKA_ENV` beside `quokka_env`.
        nearest = same_module(name) or nearest_module(name)
        # Only an environment is a fix: the installed module nearest to `wordel` was the standard
        # library's `keyword`, which the next validate refused (no load_environment).
        if nearest is not None and is_environment(nearest):
            raise Corrected(message, nearest)
        raise ValueError(message)

    @field_validator("args", mode="before")
    @classmethod
    def _no_args(cls, value: Any) -> Any:
        """`args: null` in the group file, so that `env.args={…}` replaces it on the command line."""
        return {} if value is None else value

    @field_validator("args")
    @classmethod
    def _loader_accepts_args(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        if "id" in info.data:
            problem = loader_problem(info.data["id"], value)  # no id: its own error says why
            if problem is not None:
                raise ValueError(problem)
        return value

    def scorer_module(self) -> str:
        """The environment's own module: its rubric scores the episodes."""
        return module_name(self.id)

    def split_names(self) -> list[str]:
        """The JSONL files prepare_data writes."""
        return [self.data.train_split, self.data.eval_split]

    def split_sizes(self) -> dict[str, int] | None:
        """At most `limit` rows per split; unknown without a limit (the datasets load with the env)."""
        limit = self.data.limit
        return None if limit is None else {self.data.train_split: limit, self.data.eval_split: limit}
