"""Servers that end with the process that started them, even when that process is SIGKILLed (no trap,
no `finally` runs then).

On Linux, prctl(PR_SET_PDEATHSIG) has the kernel signal a process when its parent dies; the setting
survives execve. Elsewhere nothing is set, and the callers' own stop paths (traps, the run dir's
process records) are all there is.

    python -m t3rl_core.lifetime -- ARGV...    # exec ARGV, SIGKILLed when this command's parent dies

The eval stage starts its SGLang server through this wrapper, in the background of its script: the
server then dies with the script however the script ends.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Sequence

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


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
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print("usage: python -m t3rl_core.lifetime -- ARGV...", file=sys.stderr)
        return 2
    die_with_parent(os.getppid())
    os.execvp(args[0], args)
    return 127  # not reached: execvp replaces this process or raises


if __name__ == "__main__":
    raise SystemExit(main())
