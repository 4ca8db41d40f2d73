"""Servers that end with the process that started them, even when that process is SIGKILLed (no trap,
no `finally` runs then).

On Linux, prctl(PR_SET_PDEATHSIG) has the kernel signal a process when its parent dies; the setting
survives execve. Elsewhere nothing is set, and the callers' own stop paths (traps, the run dir's
process records) are all there is.

    python -m t3rl_core.lifetime -- ARGV...    # exec ARGV, SIGKILLed when this command's parent dies
    python -m t3rl_core.lifetime --parent PID -- ARGV...   # ... when PID dies (at once if it is gone)

`--parent` names the process that started the wrapper, as that process knows it: the wrapper's own
parent is read only once its interpreter has started, and a parent killed before that (seconds on a
busy machine) is no longer its parent, so the wrapper would tie the server to whatever adopted it.

The eval stage starts its SGLang server through this wrapper, in the background of its script: the
server then dies with the script however the script ends.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Sequence

from t3rl_core import module_help

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
USAGE = "usage: python -m t3rl_core.lifetime [--parent PID] -- ARGV..."


def die_with_parent(parent: int, sig: int = signal.SIGKILL) -> None:
    """Have the kernel send `sig` to this process when its parent dies (call it in the child, e.g. as a
    Popen preexec_fn of a single-threaded parent, or before an exec). If `parent` is gone already (the
    child was reparented before the call), the signal comes at once."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl(PR_SET_PDEATHSIG): {os.strerror(error)}")
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if module_help.asked(args, USAGE, __doc__):
        return 0
    parent = os.getppid()
    if args[:1] == ["--parent"] and len(args) > 1 and args[1].isdigit():
        parent, args = int(args[1]), args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args or args[0] == "--parent":
        print(USAGE, file=sys.stderr)
        return 2
    die_with_parent(parent)
    os.execvp(args[0], args)
    return 127  # not reached: execvp replaces this process or raises


if __name__ == "__main__":
    raise SystemExit(main())
