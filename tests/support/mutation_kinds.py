"""Round seven's mutation kinds (tests/support/preflight_mutations.py wraps each as a Mutation):

- `group option`: every other option of every config group an experiment chooses (env, reward,
  executor, tracking, the sandbox and the customer, each stage's curriculum and the published results
  where they are mounted), not only model and hardware;
- `pair`: the model and the hardware swapped together;
- `deleted` and `null`: every leaf taken out (`~key`) or set to null;
- `one-item list`, `only item`, `quoted number`, `scalar for section`: a scalar typed as a list of
  itself, a list as its first item, a number as quoted text, a section as a number;
- (round eight) `list for section`: a section as a one-item list.

Each yields (kind, key, value); `value` is what follows `key=`, or `~` for a deletion.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import yaml

CONF = Path(__file__).resolve().parents[2] / "conf"
DELETED = "~"
# Text Hydra reads back as itself unquoted (its grammar takes more, but this is enough for a mutation).
_BARE = re.compile(r"[\w./+-]+")
# Groups of one option (eval, paths) have nothing to swap; model and hardware are the `option` kind's.
_ROOT_GROUPS = ("env", "reward", "executor", "tracking", "sandbox", "user_sim")
# Groups mounted at a package the experiment names (`/curriculum@stages.train.curriculum: bfcl_stage1`).
_MOUNTED_GROUPS = ("curriculum", "published")


@cache
def options(group: str) -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in (CONF / group).glob("*.yaml")))


def _defaults(path: Path) -> list[tuple[str, Any]]:
    entries = yaml.safe_load(path.read_text()).get("defaults", [])
    return [next(iter(e.items())) for e in entries if isinstance(e, dict)]


@cache
def chosen(experiment: str) -> dict[str, str | None]:
    """The option each group takes in `experiment`: `group` for a root group, `group@package` for a mount."""
    choices: dict[str, str | None] = dict(_defaults(CONF / "config.yaml"))
    for key, option in _defaults(CONF / "experiment" / f"{experiment}.yaml"):
        choices[key.removeprefix("override ").lstrip("/")] = option
    return choices


def group_options(experiment: str) -> Iterator[tuple[str, str, str]]:
    for key, option in chosen(experiment).items():
        group = key.partition("@")[0]
        if (group in _ROOT_GROUPS and "@" not in key) or (group in _MOUNTED_GROUPS and "@" in key):
            for other in options(group):
                if other != option:
                    yield "group option", key, other


def pairs(experiment: str) -> Iterator[tuple[str, str, str]]:
    """Every other model with every other hardware: (kind, "model", "<model> hardware=<hardware>")."""
    choices = chosen(experiment)
    for model in options("model"):
        for hardware in options("hardware"):
            if model != choices.get("model") and hardware != choices.get("hardware"):
                yield "pair", "model", f"{model} hardware={hardware}"


def leaf_shapes(key: str, value: Any) -> Iterator[tuple[str, str, str]]:
    """A leaf deleted, nulled, typed as a list of itself, or as quoted text if a number."""
    yield "deleted", key, DELETED
    if value is not None:
        yield "null", key, "null"
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float | str):
        yield "one-item list", key, f"[{_flow(value)}]"
    if isinstance(value, int | float):
        yield "quoted number", key, f"'{value}'"


def list_shapes(key: str, value: list[Any]) -> Iterator[tuple[str, str, str]]:
    if value and not isinstance(value[0], dict | list):
        yield "only item", key, _flow(value[0])
    yield "deleted", key, DELETED


def section_shapes(key: str) -> Iterator[tuple[str, str, str]]:
    yield "scalar for section", key, "5"
    yield "list for section", key, "[5]"  # round eight: `env.data=[1]` got "add its keys with '+'"


def _flow(value: Any) -> str:
    """A scalar as a Hydra override writes it (text quoted when it would not read back as itself)."""
    if isinstance(value, str) and not _BARE.fullmatch(value):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return str(value)
