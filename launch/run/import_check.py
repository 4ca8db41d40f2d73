"""Pre-flight: the plugin modules of each stage import with the interpreter and PYTHONPATH that stage
runs with (a plugin that imports in the launcher but not in the job fails in seconds, not hours in)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence

from launch.checks.import_probe import probe_argv, probe_failures, probe_reason
from launch.plan.stages import ImportCheck, Stage

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
    reason = probe_reason(done.stderr, done.returncode)
    return probe_failures(done.stdout, check.modules, reason)
