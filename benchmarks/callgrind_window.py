"""A child process under callgrind, counted only from its `ready` file to its `done` file.

The child runs under `valgrind --tool=callgrind --instr-atstart=no`, does its warm-up, writes
`<scratch>/ready` (its pid), waits for `<scratch>/go`, runs what is counted, writes `<scratch>/done`,
and waits for `<scratch>/end` before it exits (callgrind writes its dumps then). The child writes each
file beside and renames it, so that it is read whole.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def wait_for(path: Path, child: subprocess.Popen[bytes]) -> None:
    while not path.exists():
        if child.poll() is not None:
            raise SystemExit(f"the child ended before {path.name} (exit {child.returncode})")
        time.sleep(0.5)


@contextmanager
def counted(command: list[str], env: dict[str, str], scratch: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Runs `command` with callgrind's instrumentation on from `ready` to `done`; yields the child once
    `done` is there (the caller reads what it wrote), then lets it end."""
    # In `scratch`, not the caller's directory: a `python -c` child puts its working directory first on
    # sys.path, so run from the checkout it imported the checkout's t3rl_core whatever tree PYTHONPATH
    # named (an A/B of `--pythonpath <snapshot>` against the checkout counted the checkout twice).
    child = subprocess.Popen(
        command, cwd=scratch, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for(scratch / "ready", child)
        pid = (scratch / "ready").read_text()
        subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
        (scratch / "go").touch()
        wait_for(scratch / "done", child)
        subprocess.run(["callgrind_control", "-i", "off", pid], check=True, capture_output=True)
        yield child
        (scratch / "end").touch()
        child.wait()
    finally:
        if child.poll() is None:
            child.kill()
