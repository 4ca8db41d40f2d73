"""Pre-flight: the plugin modules of each stage import with the interpreter and PYTHONPATH that stage
runs with (a plugin that imports in the launcher but not in the job fails in seconds, not hours in)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence

from launch.plan.stages import ImportCheck, Stage

# Imports each module named in argv and prints {module: error} for those that fail.
_PROBE = """
import importlib, json, sys
failed = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except BaseException as exc:
        failed[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps(failed))
"""
TIMEOUT_S = 120


def import_problems(stages: Sequence[Stage]) -> list[str]:
    """One line per plugin module that does not import where its stages run (empty = all import)."""
    checks: dict[tuple[str, str | None], set[str]] = {}
    users: dict[tuple[str, str | None], list[str]] = {}
    for stage in stages:
        if stage.imports is not None:
            key = (stage.imports.python, stage.imports.pythonpath)
            checks.setdefault(key, set()).update(stage.imports.modules)
            users.setdefault(key, []).append(stage.name)
    lines = []
    for key, modules in checks.items():
        check = ImportCheck(key[0], key[1], tuple(sorted(modules)))
        for module, error in _failures(check).items():
            lines.append(
                f"plugin module {module} does not import with {check.python} "
                f"(PYTHONPATH={check.pythonpath or ''}), needed by {', '.join(users[key])}: {error}"
            )
    return lines


def probe_argv(python: str, modules: Sequence[str]) -> list[str]:
    """The command that imports `modules` with `python` and prints the failures as its last line."""
    return [python, "-c", _PROBE, *modules]


def probe_failures(output: str, modules: Sequence[str], otherwise: str) -> dict[str, str]:
    """Module → error from a probe's output; every module fails with `otherwise` when the probe itself
    did not get to print its verdict (interpreter missing, environment broken)."""
    lines = output.strip().splitlines()
    try:
        failed = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        return {module: otherwise for module in modules}
    return failed if isinstance(failed, dict) else {module: otherwise for module in modules}


def _failures(check: ImportCheck) -> dict[str, str]:
    env = dict(os.environ)
    if check.pythonpath is not None:
        env["PYTHONPATH"] = check.pythonpath
    try:
        done = subprocess.run(
            probe_argv(check.python, check.modules),
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {module: f"cannot run {check.python}: {exc}" for module in check.modules}
    reason = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
    return probe_failures(done.stdout, check.modules, reason)
