"""What a plan depends on outside the config; the stage builders and `launch.plan.build` share it."""

from __future__ import annotations

import os
import sys
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
    # Whether the files the stages read get their text. False: a trial plan of the pre-flight, dropped
    # after its checks, which read no file's text (its YAML dumps were a fifth of the plan's cost).
    texts: bool = True


def this_interpreter() -> str:
    """This interpreter as the stage commands name it: `python3` of its directory when that is the same
    file (the name `t3rl`'s script starts it by), so `python -m launch run --run-dir …` resumes a run
    `t3rl run` started with no stage's command changed (was: every stage ran again, `…/python` not being
    `…/python3`). The directory is kept: a venv's interpreter is the venv only when started from it."""
    executable = sys.executable
    named = os.path.join(os.path.dirname(executable), "python3")
    try:
        return named if os.path.samefile(named, executable) else executable
    except OSError:  # no python3 beside it (Windows, an embedded interpreter)
        return executable
