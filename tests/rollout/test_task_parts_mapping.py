"""task_parts' mapping test answers isinstance(value, Mapping) for every kind of value a row may hold."""

from __future__ import annotations

from collections import OrderedDict, UserDict
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest

from t3rl_core.rollout.runner import _is_mapping


class _Dict(dict):  # type: ignore[type-arg]
    pass


class _Plain:
    def get(self, key: str, default: Any = None) -> Any:
        return default


@pytest.mark.parametrize(
    "value",
    [{}, {"a": 1}, _Dict(), OrderedDict(), UserDict(), MappingProxyType({}), [], (), "x", None, 1, _Plain()],
)
def test_is_mapping_is_isinstance_mapping(value: Any) -> None:
    assert _is_mapping(value) is isinstance(value, Mapping)
