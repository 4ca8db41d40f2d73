"""A t3rl command run cold in a fresh interpreter, as a user runs it (no composition cache, nothing
forked ahead), under a probe that reports what it saw as the last line of its stderr (JSON)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def probed(probe: str, args: list[str], cwd: Path) -> Any:
    """Run `python -c PROBE ARGS…` (the probe ends by calling launch.cli.main) in `cwd`; what its last
    stderr line holds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_")}
    env |= {"PYTHONPATH": str(REPO), "T3RL_NO_CACHE": "1", "T3RL_COMPOSE_AHEAD": "0"}
    done = subprocess.run(
        [sys.executable, "-c", probe, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stderr.strip().splitlines()[-1])
