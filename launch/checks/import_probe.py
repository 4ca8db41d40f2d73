"""Import modules with another interpreter and report which fail: the probe the pre-flight runs
(launch.checks.probes) and the one each run's executor runs where its stages run
(launch.run.import_check)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from t3rl_core.secret import log_tail

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


def probe_reason(stderr: str, returncode: int) -> str:
    """Why a probe that printed no verdict failed: the last line of its stderr, masked with the whole of
    it first (a private key the interpreter printed over lines ends with a line of no form of its own)."""
    return log_tail(stderr.strip(), lines=1) or f"exit code {returncode}"


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
