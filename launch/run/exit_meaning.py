"""How a stage's command ended, in words, for its record: the one message every failed local exit gets.

`exit code 137` said nothing of what happened: bash reports a child killed by signal N as 128 + N (and
Python's Popen a process killed itself as -N), and a stage's processes are most often killed unasked
by the kernel's out-of-memory killer (SIGKILL). The message names the signal and its usual cause, and
ends with the last lines the stage printed in this attempt (the record, sweep.md and a point's error
are read where the live output is gone).
"""

from __future__ import annotations

import signal
from pathlib import Path

# The usual cause of each signal a stage is killed by while nobody stopped it.
_CAUSES = {
    signal.SIGKILL: (
        "the kernel's out-of-memory killer sends it when the machine runs out of memory (`dmesg` or "
        "`journalctl -k` names the process it killed), or someone ran kill -9"
    ),
    signal.SIGSEGV: "a crash in native code (a C, C++ or CUDA extension)",
    signal.SIGBUS: "a crash in native code, or a memory-mapped file that shrank or a full /dev/shm",
    signal.SIGABRT: "aborted by native code (a failed assertion, an allocation a C++ library could not do)",
    signal.SIGTERM: "asked to stop by something other than t3rl (a scheduler, a shutdown, kill)",
    signal.SIGINT: "interrupted (Ctrl-C in the stage's own terminal, or kill -INT)",
    signal.SIGHUP: "its terminal went away",
}
# A log's last bytes read for its tail: enough for a few long lines, never the whole of a big log.
_TAIL_BYTES = 16 * 1024
# The header LocalExecutor writes at the start of each attempt: the tail is of this attempt only.
ATTEMPT_HEADER = "===== t3rl: stage "


def exit_meaning(code: int) -> str:
    """`code` in words: the signal it stands for, with its usual cause, else the exit code."""
    number = -code if code < 0 else code - 128 if code > 128 else 0
    try:
        sig = signal.Signals(number)
    except ValueError:
        return f"exit code {code}"
    cause = _CAUSES.get(sig)
    return f"killed by {sig.name} (exit code {code})" + (f": {cause}" if cause else "")


def log_tail(log_file: Path, lines: int = 3, width: int = 160) -> list[str]:
    """The last `lines` non-empty lines the latest attempt wrote to `log_file`, each cut to `width`."""
    try:
        with log_file.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - _TAIL_BYTES))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    attempt = text.rsplit(ATTEMPT_HEADER, 1)[-1] if ATTEMPT_HEADER in text else text
    body = attempt.splitlines()[1:] if ATTEMPT_HEADER in text else attempt.splitlines()
    kept = [line.strip() for line in body if line.strip()][-lines:]
    return [line if len(line) <= width else line[: width - 1] + "…" for line in kept]


def failed_exit_message(code: int, log_file: Path) -> str:
    """One line for a stage whose command exited `code` (≠ 0): what it means, its log, how it ends."""
    tail = log_tail(log_file)
    ends = "; its log ends: " + " / ".join(tail) if tail else "; it printed nothing"
    return f"{exit_meaning(code)}; see {log_file}{ends}"
