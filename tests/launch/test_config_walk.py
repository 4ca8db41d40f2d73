"""`launch.checks.config_walk.ConfigWalk` makes each view of a config once for every rule that reads it.
Its views must be what each rule's own walk found before it: the same keys and values in the same order
(a rule reports the first of several problems, and its fixes name the first key). Checked against those
walks, written plainly here, on two composed configs (a map of stages, a tau2 reward's weights of a mean)
and on plain data with every shape a YAML config can take."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from launch.checks.config_walk import ConfigWalk
from launch.checks.resolve import resolve
from tests.support.in_tmp import in_tmp

_in_tmp = in_tmp()  # relative paths of the configs resolve in one empty dir


def plain_leaves(node: Any, key: str) -> list[tuple[str, Any]]:
    if isinstance(node, dict):
        return [leaf for k, v in node.items() for leaf in plain_leaves(v, f"{key}.{k}" if key else str(k))]
    if isinstance(node, list):
        return [leaf for i, v in enumerate(node) for leaf in plain_leaves(v, f"{key}.{i}")]
    return [(key, node)]


def plain_keys(node: Any, key: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            child = f"{key}.{k}" if key else str(k)
            found += [(child, str(k)), *plain_keys(v, child)]
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += plain_keys(v, f"{key}.{i}")
    return found


def plain_lists(node: Any, key: str) -> list[tuple[str, list[Any]]]:
    found: list[tuple[str, list[Any]]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            found += plain_lists(v, f"{key}.{k}" if key else str(k))
    elif isinstance(node, list):
        found.append((key, node))
        for i, v in enumerate(node):
            found += plain_lists(v, f"{key}.{i}")
    return found


def plain_sections(node: Any, prefix: str) -> list[tuple[str, BaseModel]]:
    """Every model under `node` through models and mappings, as weights_have_a_sum walked them."""
    found: list[tuple[str, BaseModel]] = []
    if isinstance(node, dict):
        for name, value in node.items():
            found += plain_sections(value, f"{prefix}{name}.")
    if isinstance(node, BaseModel):
        found.append((prefix.rstrip("."), node))
        for name in type(node).model_fields:
            found += plain_sections(getattr(node, name), f"{prefix}{name}.")
    return found


def plain_fields(node: Any, prefix: str) -> list[tuple[str, str, Any]]:
    """(key, field name, value) of every field, as choices_named_once walked them."""
    found: list[tuple[str, str, Any]] = []
    if isinstance(node, BaseModel):
        for name in type(node).model_fields:
            value = getattr(node, name)
            found += [(f"{prefix}{name}", name, value), *plain_fields(value, f"{prefix}{name}.")]
    elif isinstance(node, dict):
        for name, value in node.items():
            found += plain_fields(value, f"{prefix}{name}.")
    return found


@pytest.fixture(scope="module", params=[["+experiment=stage2_bfcl"], ["+experiment=tau2_pipeline"]])
def resolved(request: pytest.FixtureRequest) -> Any:
    return resolve(request.param)


# Every shape: nesting both ways, empty containers, lists of lists, non-str keys and leaves, a key ''.
ODD = {
    "a": {"b": [1, [2, {"c": "x"}], []], "": {"d": None}},
    3: [{"e": True}, {}],
    "f": {},
    "g": "https://u:p@h",
}


def test_the_plain_views_are_the_plain_walks(resolved: Any) -> None:
    for data in (resolved.config, ODD):
        walk = ConfigWalk(data, resolved.run)
        assert walk.leaves == plain_leaves(data, "")
        assert walk.strings == [(k, v) for k, v in plain_leaves(data, "") if isinstance(v, str)]
        assert walk.keys == plain_keys(data, "")
        assert [(k, id(v)) for k, v in walk.lists] == [(k, id(v)) for k, v in plain_lists(data, "")]


def test_the_model_views_are_the_model_walks(resolved: Any) -> None:
    walk = ConfigWalk(resolved.config, resolved.run)
    assert [(k, id(m)) for k, m in walk.sections] == [(k, id(m)) for k, m in plain_sections(resolved.run, "")]
    assert [(k, n, v) for k, _, n, v in walk.fields] == plain_fields(resolved.run, "")
    assert all(getattr(model, name) is value for _, model, name, value in walk.fields)


def test_a_walk_is_of_the_objects_it_was_made_from(resolved: Any) -> None:
    walk = ConfigWalk(resolved.config, resolved.run)
    assert walk.of(resolved.config, resolved.run)
    assert not walk.of(dict(resolved.config), resolved.run)  # equal data, another object
    assert not walk.of(resolved.config, resolved.run.model_copy())
