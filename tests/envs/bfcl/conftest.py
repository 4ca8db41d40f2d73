"""Shared BFCL fixtures: the 800 dataset rows, built in memory once per test run from bfcl-eval's data."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.tiny_stack import built_bfcl_rows


@pytest.fixture(scope="session")
def bfcl_rows() -> list[dict[str, Any]]:
    return built_bfcl_rows()


@pytest.fixture(scope="session")
def row_by_id(bfcl_rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["metadata"]["index"]: row for row in bfcl_rows}
