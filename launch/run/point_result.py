"""How a sweep point's launcher tells the sweep how it ended: a small JSON file the sweep names in
the point's environment. Apart from `launch.run.parallel` (the sweep side) so that every `t3rl
run|plan`, which writes it only when it fails inside a sweep, does not import the sweep machinery."""

from __future__ import annotations

import os
from pathlib import Path

from launch.files import atomic_write_json

# Where a point's launcher writes how it ended ({"code", "error"}): set by the scheduler per child.
RESULT_ENV = "T3RL_POINT_RESULT"
RESULT_FILE = "point_result.json"


def record_result(code: int, error: str | None) -> None:
    """In a point's launcher: say how it ended, for the sweep (nothing when not run by a sweep)."""
    path = os.environ.get(RESULT_ENV)
    if path:
        atomic_write_json(Path(path), {"code": code, "error": error})
