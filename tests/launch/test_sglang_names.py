"""The static SGLang parser names in launch/checks/sglang_names.py equal SGLang's real registries."""

from __future__ import annotations

import pytest

from launch.checks import sglang_names
from t3rl_core.chat.families import FAMILIES


@pytest.mark.slow
def test_static_names_equal_sglang_registries() -> None:
    from t3rl_core.parsers.sglang_loader import reasoning_parser_names, tool_call_parser_names

    assert sorted(sglang_names.TOOL_CALL_PARSERS) == tool_call_parser_names()
    assert sorted(sglang_names.REASONING_PARSERS) == reasoning_parser_names()


def test_family_maps_cover_every_family_with_registered_names() -> None:
    assert set(sglang_names.FAMILY_TOOL_CALL_PARSERS) == set(FAMILIES)
    assert set(sglang_names.FAMILY_REASONING_PARSERS) == set(FAMILIES)
    for family in FAMILIES.values():
        fitting = sglang_names.FAMILY_TOOL_CALL_PARSERS[family.name]
        assert set(fitting) <= set(sglang_names.TOOL_CALL_PARSERS)
        # The chat module's own default parser for the family is one we accept.
        assert family.tool_call_parser in fitting
        reasoning = sglang_names.FAMILY_REASONING_PARSERS[family.name]
        assert set(reasoning) <= set(sglang_names.REASONING_PARSERS)
        assert family.reasoning_parser is None or family.reasoning_parser in reasoning
