"""Round seven's mutation kinds (tests/support/preflight_mutations.py wraps each as a Mutation):

- `group option`: every other option of every config group an experiment chooses (env, reward,
  executor, tracking, the sandbox and the customer, each stage's curriculum and the published results
  where they are mounted), not only model and hardware;
- `pair`: the model and the hardware swapped together;
- `deleted` and `null`: every leaf taken out (`~key`) or set to null;
- `one-item list`, `only item`, `quoted number`, `scalar for section`: a scalar typed as a list of
  itself, a list as its first item, a number as quoted text, a section as a number;
- (round eight) `list for section`: a section as a one-item list;
- (round nine) `mapping for list`, `mapping for scalar`, `mapping for section`: a mapping typed where a
  list, one value or a section goes (`env.data.categories={a: 1}`: Hydra's "Error merging override", no
  fix; `env.data={a: 1}`: "add its keys with '+'", refused again), and `beyond int64`: a whole number no
  machine integer holds (2**63, accepted by every field without an upper bound); `deleted entry`: every
  stage or service deleted (`~stages.train`); `look-alike`: a name or choice with a letter of another
  script drawn as an ASCII one.

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
# A mapping of a key no section has (`{a: 1}`, as the round's brief typed it).
A_MAPPING = "{a: 1}"
# The first whole number past int64, which numpy, torch and every C extension refuse (OverflowError).
BEYOND_INT64 = str(2**63)
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
        yield "mapping for scalar", key, A_MAPPING
    if isinstance(value, int | float):
        yield "quoted number", key, f"'{value}'"
        # (round ten) pydantic's lax mode read a boolean as 1 or 0 (`seed=true` ran with seed 1)
        yield "boolean for number", key, "true" if value != 1 else "false"
    if type(value) is int:
        yield "beyond int64", key, BEYOND_INT64
        # (round ten) past int64 as text: only a number written as one was judged
        yield "beyond int64", key, f"'{BEYOND_INT64}'"


def list_shapes(key: str, value: list[Any]) -> Iterator[tuple[str, str, str]]:
    if value and not isinstance(value[0], dict | list):
        yield "only item", key, _flow(value[0])
    yield "deleted", key, DELETED
    yield "mapping for list", key, A_MAPPING


def entry_deletions(config: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(round nine) Every entry of a mapping of named entries deleted: `~stages.train` was refused at the
    file's key that names it (`stages.to_hf.source: no stage named 'train'`) with a stage to add as fix."""
    for section in ("stages", "services"):
        for name in config.get(section) or {}:
            yield "deleted entry", f"{section}.{name}", DELETED


def lookalike(key: str, value: Any) -> Iterator[tuple[str, str, str]]:
    """(round nine) A name or choice with its first `a e o p c x y` typed as the Cyrillic letter drawn the
    same (a pasted value): `'qwеn3'` was refused with the key's old value as fix, a split
    `'bfcl_unseеn'` with `bfcl_unsen` (the letter dropped), `'Н100'` with the default H200."""
    at = next((i for i, c in enumerate(value) if c in _LATIN), None) if isinstance(value, str) else None
    if at is not None and value.isascii():
        typed = value[:at] + _CYRILLIC[_LATIN.index(value[at])] + value[at + 1 :]
        yield "look-alike", key, "'" + typed.replace("\\", "\\\\").replace("'", "\\'") + "'"


_LATIN, _CYRILLIC = "aeopcxy", "аеорсху"


def section_shapes(key: str) -> Iterator[tuple[str, str, str]]:
    yield "scalar for section", key, "5"
    yield "list for section", key, "[5]"  # round eight: `env.data=[1]` got "add its keys with '+'"
    yield "mapping for section", key, A_MAPPING  # round nine: the same fix, refused again as unknown key a


def _flow(value: Any) -> str:
    """A scalar as a Hydra override writes it (text quoted when it would not read back as itself)."""
    if isinstance(value, str) and not _BARE.fullmatch(value):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return str(value)
