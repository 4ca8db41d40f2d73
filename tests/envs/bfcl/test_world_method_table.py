"""A world's method table: for every bfcl-eval API class, the public bound methods inspect.getmembers
finds, in its order (by name), also when instance attributes hold bound methods or hide a method."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import pytest

from t3rl_core.envs.bfcl.world import _public_methods


def _getmembers_table(instance: Any) -> list[tuple[str, Any]]:
    return [
        (name, method)
        for name, method in inspect.getmembers(instance, inspect.ismethod)
        if not name.startswith("_")
    ]


def _instances() -> list[Any]:
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    instances = []
    for class_name, module in CLASS_FILE_PATH_MAPPING.items():
        try:
            instances.append(getattr(importlib.import_module(module), class_name)())
        except ImportError:  # web search needs extras the multi-turn categories never use
            continue
    return instances


@pytest.mark.parametrize(
    "names",
    [
        (),
        ("aaa_first",),  # a bound method held by the instance, sorted before the class's
        ("zzz_last", "mmm"),
        ("",),  # an empty name
    ],
)
def test_the_table_is_getmembers_in_its_order(names: tuple[str, ...]) -> None:
    checked = 0
    for instance in _instances():
        class_methods = list(_public_methods(type(instance)()))
        for name in names:  # each holds a bound method of the instance (the last of its class)
            setattr(instance, name, getattr(instance, class_methods[-1]))
        if class_methods:
            setattr(instance, class_methods[0], 5)  # an instance value hiding a class method: no method
        assert list(_public_methods(instance).items()) == _getmembers_table(instance), type(instance)
        checked += 1
    assert checked >= 8
