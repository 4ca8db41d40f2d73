"""Fixtures of the launcher tests."""

from __future__ import annotations

import pytest
from run_configs import make_run, t3rl_stages

from launch.config.schema import RunConfig


@pytest.fixture
def stage1_run() -> RunConfig:
    return make_run(stages=t3rl_stages())
