"""launch.config.secrets.scrub_obj decides with one joined scrub (`holds_secret`) whether anything needs
masking, and then copies the data as it is: whatever the data holds, its result is the definition's, every
key and string scrubbed on its own and every secret entry, list item and flag value masked (`_scrub`),
with the same types (lists, tuples, dicts for other mappings) and the same leaves. Adversarial data from
tests/launch/test_holds_secret_one_scan.py (credential shapes, secret keys, subtrees and flags, the mask
itself, texts cut at the joins)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any
from unittest import mock

from hypothesis import given, settings

from launch.config import secrets
from launch.config.secrets import _known, _scrub, scrub_obj, secret_values
from tests.launch.test_holds_secret_one_scan import DATA
from tests.launch.test_scrub_texts import SECRET


def _typed(obj: Any) -> Any:
    """`obj` with each node's type beside it: `==` alone takes a tuple for a list and 1 for True."""
    if isinstance(obj, Mapping):
        return (type(obj), [(_typed(k), _typed(v)) for k, v in obj.items()])
    if isinstance(obj, list | tuple):
        return (type(obj), [_typed(v) for v in obj])
    return (type(obj), obj)


def _one_by_one(obj: Any, secrets: list[str] | None) -> Any:
    values = secret_values() if secrets is None else frozenset(secrets) | _known()
    return _scrub(obj, values, "")


@given(DATA)
@settings(max_examples=600, deadline=None)
def test_the_same_as_scrubbing_each_text(data: Any) -> None:
    assert _typed(scrub_obj(data, [SECRET])) == _typed(_one_by_one(data, [SECRET]))
    assert _typed(scrub_obj(data)) == _typed(_one_by_one(data, None))


def test_clean_data_is_copied_with_the_scrubs_types() -> None:
    inner = [1, ("a", None)]
    data = MappingProxyType({"model": {"hf_id": "Qwen/Qwen3-4B"}, "args": inner, "f": 0.5})
    copied = scrub_obj(data, [SECRET])
    assert _typed(copied) == _typed(_one_by_one(data, [SECRET]))
    assert type(copied) is dict and copied["args"] is not inner  # a copy, as the scrub makes


def test_a_secret_anywhere_is_masked() -> None:
    data = {"a": [{"b": f"run-{SECRET}"}], "args": ["--api-key", "abc"], "api_key": "x"}
    masked = {"a": [{"b": "run-***"}], "args": ["--api-key", "***"], "api_key": "***"}
    assert scrub_obj(data, [SECRET]) == masked


def test_clean_data_takes_one_scrub() -> None:
    """A plan's config.yaml and manifest.json: one scrub of their texts joined, not one per text."""
    data = {"model": {"hf_id": "Qwen/Qwen3-4B", "name": "qwen3_4b"}, "stages": [{"kind": "train"}] * 3}
    with mock.patch("launch.config.secrets.scrub_text", wraps=secrets.scrub_text) as scrub:
        assert scrub_obj(data, [SECRET]) == data
    assert scrub.call_count == 1
