"""A stand-in for the stages' interpreter (`paths.cluster_python=…`) whose data preparation blocks.

It runs the real interpreter, except that BFCL's data preparation (`-m t3rl_core.data --runtime-config
…`) first appends its pid to `stage.pids` beside it and waits for a `gate` file there: a test that
interrupts a run while it prepares data waits for that pid instead of betting that the preparation
(a second or two) outlasts the test's own steps, which on a busy machine it need not.
"""

from __future__ import annotations

import shlex
import stat
import sys
from pathlib import Path

_SCRIPT = """#!/bin/bash
here=$(dirname "$0")
if [[ "$1 $2 $3" == "-m t3rl_core.data --runtime-config" ]]; then
  echo $$ >> "$here/stage.pids"
  while [ ! -e "$here/gate" ]; do sleep 0.05; done
fi
exec {python} "$@"
"""


def gated_python(where: Path) -> Path:
    """Write the stand-in into the directory `where`; its path (`where/gate` opens the gate)."""
    where.mkdir(parents=True, exist_ok=True)
    python = where / "python"
    python.write_text(_SCRIPT.format(python=shlex.quote(sys.executable)))
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return python


def preparing(where: Path) -> int:
    """How many data preparations started through the stand-in in `where`."""
    pids = where / "stage.pids"
    return len(pids.read_text().split()) if pids.exists() else 0
