"""The warning for a T3RL_* variable t3rl does not read (`_variables_nothing_reads`) imports difflib only
when such a variable is set: with only variables t3rl reads (T3RL_NO_CACHE, as benchmarks and CI set
them), a cold plan or validate does not pay for the import. Run in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = """
import sys
from launch.checks.resolve import _variables_nothing_reads
loaded = "difflib" in sys.modules
print(loaded, [p.key for p in _variables_nothing_reads()], "difflib" in sys.modules)
"""


def _probe(**variables: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_")} | variables
    return subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_variables_t3rl_reads_import_no_difflib() -> None:
    assert _probe(T3RL_NO_CACHE="1", T3RL_COMPOSE_AHEAD="0") == "False [] False"


def test_a_misspelt_variable_is_still_warned_about() -> None:
    assert _probe(T3RL_NO_CACHE="1", T3RL_NO_CAHCE="1") == "False ['$T3RL_NO_CAHCE'] True"
