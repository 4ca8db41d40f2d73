"""launch.config.pydantic_plugins: a cold plan/validate never scans the installed distributions for pydantic
plugins, and leaves the environment as it found it (a user's own setting included)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from launch.config.pydantic_plugins import SWITCH, without_plugins

REPO = Path(__file__).resolve().parents[2]
PROBE = """
import sys
import pydantic.plugin._loader as loader
scans = []
real = loader.entry_points
loader.entry_points = lambda **kw: scans.append(kw) or real(**kw)
sys.argv = ["t3rl", *sys.argv[1:]]
from launch.cli import main
try:
    main()
except SystemExit:
    pass
import os
print("scans", scans, "switch", os.environ.get("PYDANTIC_DISABLE_PLUGINS"), file=sys.__stderr__)
"""


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_a_cold_command_scans_for_no_plugin(command: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_") and k != SWITCH}
    env |= {"PYTHONPATH": str(REPO), "T3RL_NO_CACHE": "1", "T3RL_COMPOSE_AHEAD": "0"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, command, "+experiment=stage2_bfcl"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.stderr.strip().splitlines()[-1] == "scans [] switch None", done.stderr


def test_the_switch_is_restored_and_a_users_setting_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SWITCH, raising=False)
    with without_plugins():
        assert os.environ[SWITCH] == "__all__"
    assert SWITCH not in os.environ
    monkeypatch.setenv(SWITCH, "logfire")
    with without_plugins():
        assert os.environ[SWITCH] == "logfire"
    assert os.environ[SWITCH] == "logfire"
