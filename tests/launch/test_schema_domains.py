"""Issue 20 §1: every value of the schema has a declared domain.

The audit walks every config model t3rl defines (plugins' base configs included) and fails for a number
without a declared bound or domain and for a string without a declared kind: the guard for fields added
later. The mutation tests push every number of every shipped experiment through its type's boundaries
(inf, nan, "inf", just outside each bound) and check that each is refused naming its key.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import pytest
from annotated_types import Ge, Gt, Interval, Le, Lt
from pydantic import BaseModel, Field, ValidationError

from launch.checks.resolve import Resolved, resolve
from launch.checks.validate import validate
from launch.config.errors import Problem
from launch.config.schema import RunConfig
from launch.config.schema_errors import problems_from_validation
from launch.config.schema_walk import model_at
from t3rl_core.config import EnvConfig, RewardConfig
from t3rl_core.fields import Domain, Label, Port
from t3rl_core.strict import StrictModel
from tests.support.schema_leaves import Leaf, config_models, import_all, leaves, orderings

EXPERIMENTS = sorted(
    p.stem for p in (Path(__file__).resolve().parents[2] / "conf" / "experiment").glob("*.yaml")
)
# Fields whose type declares nothing, each with the reason it may not (keep this list a few lines long).
EXEMPT: dict[str, str] = {}


@cache
def _models() -> list[type[BaseModel]]:
    import_all()
    return config_models()


def _undeclared(base: type) -> list[str]:
    return sorted(
        leaf.name
        for model in _models()
        for leaf in leaves(model)
        if (leaf.base is base or (base is object and leaf.base not in (int, float, str)))
        and not leaf.declared()
        and leaf.name not in EXEMPT
    )


def test_the_audit_sees_every_config_model() -> None:
    names = {model.__name__ for model in _models()}
    # The plugin bases, the run, the runtime config and a service's spec are all in the walk.
    assert {"EnvConfig", "RewardConfig", "EngineConfig", "SandboxConfig", "UserSimulatorConfig"} <= names
    assert {"RunConfig", "RuntimeConfig", "ServiceSpec", "HardwareConfig", "LLMUserConfig"} <= names
    assert len(names) >= 60


def test_every_number_declares_its_domain() -> None:
    assert _undeclared(int) + _undeclared(float) == []


def test_every_string_declares_its_kind() -> None:
    assert _undeclared(str) == []


def test_every_other_leaf_validates_itself() -> None:
    assert _undeclared(object) == []


def test_the_audit_flags_an_undeclared_field() -> None:
    class Undeclared(StrictModel):
        count: int = 1
        ratio: float | None = None
        host: str = "h"
        tags: dict[str, float] = Field(default_factory=dict)
        port: Port = 1
        label: Label = "x"

    flagged = sorted(f"{leaf.field}{leaf.where}" for leaf in leaves(Undeclared) if not leaf.declared())
    assert flagged == ["count", "host", "ratio", "tags{:}", "tags{}"]


def test_orderings_name_an_earlier_numeric_field() -> None:
    found = []
    for model in _models():
        fields = list(model.model_fields)
        for name, order in orderings(model):
            found.append(f"{model.__name__}.{name} {order.relation} {order.other}")
            assert order.other in fields[: fields.index(name)], (
                f"{model.__name__}.{name}: {order.other} is not earlier"
            )
            if order.relation == "!=":  # two names of one thing (`Differs`): any kind of value
                continue
            numeric = [leaf.base for leaf in leaves(model) if leaf.field == order.other and leaf.where == ""]
            assert numeric and set(numeric) <= {int, float}, f"{model.__name__}.{order.other} is not a number"
    assert "ToolRLRewardConfig.format_min <= format_max" in found
    assert "ReToolDataConfig.answer_key != question_key" in found
    assert "MisConfig.tis_upper_bound > tis_lower_bound" in found


# ------------------------------------------------------------------------------------- finite floats


class _PluginNested(StrictModel):
    weight: float = Field(1.0, ge=0)


class _PluginEnv(EnvConfig):
    """A plugin's env config as a user writes it: nothing about finiteness declared."""

    OUTCOME_FIELDS: ClassVar[frozenset[str]] = frozenset()

    name: str = "plugin_env"
    scale: float = 1.0
    weights: dict[str, float] = Field(default_factory=dict)
    steps: list[float] = Field(default_factory=list)
    bounds: tuple[float, float] = (0.0, 1.0)
    nested: _PluginNested = _PluginNested()


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, "inf", "-inf", "nan", "Infinity"])
@pytest.mark.parametrize(
    ("key", "shape"),
    [
        ("scale", lambda v: v),
        ("weights", lambda v: {"a": v}),
        ("steps", lambda v: [0.5, v]),
        ("bounds", lambda v: [0.0, v]),
        ("nested", lambda v: {"weight": v}),
    ],
)
def test_a_plugin_config_refuses_non_finite_floats_everywhere(key: str, shape: Any, value: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        _PluginEnv.model_validate({key: shape(value)})
    assert [e["loc"][0] for e in caught.value.errors()] == [key]
    assert _PluginEnv.model_validate({key: shape(0.5)})


def test_a_reward_plugin_inherits_the_finite_default() -> None:
    class Reward(RewardConfig):
        name: str = "plugin_reward"
        bonus: float = 0.0

    with pytest.raises(ValidationError, match="finite"):
        Reward(bonus=float("nan"))


# ------------------------------------------------------------------------- mutations of shipped experiments


@cache
def _resolved(experiment: str) -> Resolved:
    return resolve([f"+experiment={experiment}"])


def _numbers(node: BaseModel, prefix: str) -> Iterator[tuple[str, Leaf]]:
    """(dotted key, its leaf) of every number a validated config holds (the first item of a list)."""
    model = type(node)
    numeric = [leaf for leaf in leaves(model) if leaf.base in (int, float)]
    for name in model.model_fields:
        by_where = {leaf.where: leaf for leaf in numeric if leaf.field == name}
        yield from _number_values(getattr(node, name), f"{prefix}{name}", "", by_where)


def _number_values(value: Any, key: str, where: str, by_where: dict[str, Leaf]) -> Iterator[tuple[str, Leaf]]:
    if isinstance(value, BaseModel):
        yield from _numbers(value, f"{key}.")
    elif isinstance(value, int | float) and not isinstance(value, bool) and where in by_where:
        yield key, by_where[where]
    elif isinstance(value, list | tuple) and value:
        yield from _number_values(value[0], f"{key}.0", f"{where}[]", by_where)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _number_values(v, f"{key}.{k}", f"{where}{{:}}", by_where)


def _outside(leaf: Leaf) -> list[Any]:
    """inf, nan, "inf", each bound's nearest value outside it, and the values the domain excludes."""
    values: list[Any] = [math.inf, -math.inf, math.nan, "inf"]
    for bound in leaf.bounds():
        for part in bound if isinstance(bound, Interval) else [bound]:
            limit = getattr(part, type(part).__name__.lower())  # Ge.ge, Gt.gt, Le.le, Lt.lt
            step = 1 if leaf.base is int else max(abs(limit), 1) * 1e-6
            values.append({Ge: limit - step, Gt: limit, Le: limit + step, Lt: limit}[type(part)])
    for domain in (m for m in leaf.metadata if isinstance(m, Domain)):
        values.extend(domain.excluded)
    return values


def _set(data: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    mutated = copy.deepcopy(data)
    *parents, leaf = key.split(".")
    node: Any = mutated
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(leaf)] = value
    else:
        node[leaf] = value
    return mutated


def _names(problems: list[Problem], key: str) -> bool:
    parent, _, index = key.rpartition(".")
    return any(p.key == key or (index.isdigit() and p.key == parent) for p in problems)


def _mutations() -> Iterator[tuple[str, str, Any, Leaf]]:
    """(experiment, key, value, leaf): each field's mutation once, at its first place in the experiments."""
    seen: set[tuple[str, str]] = set()
    for experiment in EXPERIMENTS:
        for key, leaf in _numbers(_resolved(experiment).run, ""):
            for value in _outside(leaf):
                if (leaf.name, repr(value)) not in seen:
                    seen.add((leaf.name, repr(value)))
                    yield experiment, key, value, leaf


def test_every_number_of_every_experiment_refuses_values_outside_its_domain() -> None:
    missed, tried = [], 0
    for experiment, key, value, _leaf in _mutations():
        resolved = _resolved(experiment)
        data = _set(resolved.run.model_dump(mode="json"), key, value)
        tried += 1
        try:
            RunConfig.model_validate(data)
        except ValidationError as error:
            if _names(problems_from_validation(error, data, resolved.provenance), key):
                continue
        missed.append(f"{experiment}: {key}={value!r}")
    assert missed == [], f"{len(missed)} of {tried} mutations not refused at their key"
    assert tried > 300


def _overlay_numbers(node: Any, key: str) -> Iterator[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _overlay_numbers(v, f"{key}.{k}")
    elif isinstance(node, list) and node:
        yield from _overlay_numbers(node[0], f"{key}.0")
    elif isinstance(node, int | float) and not isinstance(node, bool):
        yield key


def test_numbers_in_stage_overlays_refuse_values_outside_their_domain() -> None:
    """A stage's hardware and eval overrides are validated against their models by the checks."""
    missed, seen = [], set()
    for experiment in EXPERIMENTS:
        resolved = _resolved(experiment)
        for stage, spec in resolved.config.get("stages", {}).items():
            for section in ("hardware", "eval", "env", "reward"):
                for key in _overlay_numbers(spec.get(section) or {}, f"stages.{stage}.{section}"):
                    parent, _, name = key.rpartition(".")
                    model = model_at(parent, resolved.config)
                    leaf = next((lf for lf in leaves(model) if lf.field == name), None) if model else None
                    for value in _outside(leaf) if leaf else [math.inf, math.nan, "inf"]:
                        pattern = (key.split(".", 2)[2], repr(value))
                        if pattern in seen:
                            continue
                        seen.add(pattern)
                        data = _set(resolved.config, key, value)
                        if not _names(
                            validate(RunConfig.model_validate(data), data, resolved.provenance), key
                        ):
                            missed.append(f"{experiment}: {key}={value!r}")
    assert missed == []
    assert len(seen) > 30
