"""A new run typed as the last one was, while that one did not finish: Ctrl-C, then the same `t3rl run
+experiment=…` again (the shell's history), started every stage from the beginning in a new run dir,
without a word of the run that holds the stages already done. The resume command was printed when the
first one stopped, but nothing said it again where the mistake is made. Found here, the new run says
which run it repeats and the command that resumes it instead."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from launch.config.hidden_options import shown_path
from launch.config.secrets import mask_overrides
from launch.files import is_locked
from t3rl_core import outside_json

# A stage's or the pipeline's status in state.json when the run did not finish (`running`: another t3rl
# holds it, or one was killed outright before it could record more).
_UNFINISHED = ("running", "interrupted", "stopped", "failed")


def unfinished_same_run(
    runs_dir: Path, name: str, overrides: list[str], config_dirs: list[str]
) -> str | None:
    """The note for a new run of `overrides` and `config_dirs` when the newest run of the experiment
    `name` under `runs_dir` with the same ones did not finish; None when it finished or there is none."""
    want = (mask_overrides(overrides), [os.path.abspath(d) for d in config_dirs])
    try:
        manifests = sorted(
            (runs_dir / name).glob("*/manifest.json"), reverse=True
        )  # <timestamp>: newest first
    except OSError:
        return None
    for file in manifests:
        manifest = _read(file)
        if manifest.get("record") != "run":
            continue
        dirs = manifest.get("config_dirs", [])
        if (manifest.get("overrides"), dirs if isinstance(dirs, list) else None) == want:
            return _note(file.parent)
    return None


def _read(file: Path) -> dict[str, Any]:
    """A record file's mapping; empty when it cannot be read (a damaged record is named by `t3rl runs`)."""
    try:
        data = outside_json.loads(file.read_bytes(), str(file))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _note(path: Path) -> str | None:
    """What the run dir `path` says when its record says it did not finish (a stage, or the pipeline
    between stages, recorded running, interrupted, stopped or failed); None when it finished."""
    state = _read(path / "state.json")
    stages = state.get("stages") if isinstance(state.get("stages"), dict) else {}
    ended = [
        (n, r.get("status"))
        for n, r in stages.items()
        if isinstance(r, dict) and r.get("status") in _UNFINISHED
    ]
    pipeline = state.get("pipeline") if isinstance(state.get("pipeline"), dict) else {}
    if not ended and pipeline.get("status") not in _UNFINISHED:
        return None
    how = f"its stage {ended[0][0]} is recorded {ended[0][1]}" if ended else f"it was {pipeline['status']}"
    shown = shown_path(path)
    if is_locked(path / ".lock"):
        # Still running (its t3rl holds the lock, as `t3rl runs` reads it): a resume of it is refused as
        # in use, so it is named as running, not as one to stop this one for (was: "did not finish …
        # resume that one", which `t3rl run --run-dir` then refused).
        return (
            f"note: the last run of these same overrides, {shown}, is running now (another t3rl holds it); "
            "this command starts a second run alongside it, which does every stage again. To follow that "
            f"one instead, stop this one (Ctrl-C): t3rl runs show {shlex.quote(shown)}"
        )
    return (
        f"note: the last run of these same overrides, {shown}, did not finish ({how}); this command "
        "starts a new run that does every stage again. To keep its finished stages, stop this one "
        f"(Ctrl-C) and resume that one: t3rl run --run-dir {shlex.quote(shown)}"
    )
