"""What a plan depends on outside the config; the stage builders and `launch.plan.build` share it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from t3rl_core.records import Record


class PlanContext(Record):
    """What a plan depends on outside the config."""

    run_dir: Path
    # Relative config paths (runs_dir "runs", models_dir "models") are taken relative to this.
    base_dir: Path
    # Directory holding the t3rl_core package (PYTHONPATH of the Ray job).
    t3rl_root: str
    # Interpreter with t3rl installed, for the t3rl_core stage commands.
    python: str
    run_id: str
    environ: Mapping[str, str] = {}
