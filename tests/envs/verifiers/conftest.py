"""The hub environments written for these tests import by module name, as installed ones do."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HUB_ENVS = Path(__file__).parent / "hub_envs"
# The ToolEnv shipped as env=verifiers's default (a module path is an environment id too).
CALCULATOR = "t3rl_core.envs.verifiers.calculator_example"


@pytest.fixture(autouse=True, scope="session")
def hub_envs_installed() -> Iterator[None]:
    sys.path.insert(0, str(HUB_ENVS))
    yield
    sys.path.remove(str(HUB_ENVS))
