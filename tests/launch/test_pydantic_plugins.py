"""launch.config.pydantic_plugins: a cold plan/validate never scans the installed distributions for pydantic
plugins, and leaves the environment as it found it (a user's own setting included)."""

from __future__ import annotations

import json
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
import json
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


LOADER_PROBE = """
import json, sys
from launch.config.pydantic_plugins import loader_without_metadata
loader_without_metadata()
import pydantic.plugin._loader as loader
before = "importlib.metadata" in sys.modules
group = sys.argv[1]
seen = sorted((p.name, p.value) for p in loader.entry_points(group=group))
import importlib.metadata
real = sorted((p.name, p.value) for p in importlib.metadata.entry_points(group=group))
print(json.dumps([before, seen == real, len(real)]), file=sys.__stderr__)
"""


def test_the_loader_is_imported_without_metadata_and_scans_the_same(tmp_path: Path) -> None:
    """pydantic's loader comes without importlib.metadata, and a scan through it (the switch unset)
    reads the entry points importlib.metadata gives, for the group asked (console_scripts: many)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_")} | {"PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", LOADER_PROBE, "console_scripts"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    before, same, found = json.loads(done.stderr.strip().splitlines()[-1])
    assert before is False
    assert same is True and found > 3
