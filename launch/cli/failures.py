"""How a `t3rl` command ends when it cannot go on: one place that turns a kind of exception into one line
on stderr and the exit code docs/reference/cli-behaviour.md gives it, for the Typer app
(`launch.cli.lazy.LazyGroup.invoke`) and the plain `t3rl run|plan|validate` path alike.

Also the process's surroundings a newcomer's shell can hand over broken, mended before any output:
a closed stdout/stderr/stdin (`t3rl ls >&-`), a terminal width that is no width (`COLUMNS=0`), an
output encoding that cannot spell t3rl's marks (`PYTHONIOENCODING=ascii`) and a home directory the
libraries cannot write their caches into (t3rl_core.home_paths.writable_user_dirs).
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from launch.run.exit_codes import (
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_PIPE,
    EXIT_STOPPED,
    RESUME_WITH,
    STOP_SIGNALS,
    StopSignal,
)

# Set to see the traceback of an unexpected exception instead of its one-line summary.
TRACEBACK_VARIABLE = "T3RL_TRACEBACK"
# The packages of this project: a module of these missing is a bug, not a missing dependency.
OWN_PACKAGES = ("launch", "t3rl_core", "t3rl_conf")
_STOPPED = "stopped: interrupted by Ctrl-C or SIGTERM before the command finished"
# Where each command is told another directory to write into (`{where}` above); run and validate write
# under paths.runs_dir.
_OUTPUT_CHOICE = {
    "eval": "--out DIR",
    "score": "--out DIR",
    "data": "--out DIR",
    "plan": "--out DIR, or paths.plans_dir=…",
}
_RUNS_DIR_CHOICE = "paths.runs_dir=…"


def mend_surroundings() -> None:
    """Closed standard streams become /dev/null (so nothing t3rl opens later lands on fd 0-2, and
    printing to a closed stdout is silent, as Python's own print is); characters the output encoding
    cannot spell are escaped; a COLUMNS or LINES that is not a positive number is ignored (rich would
    print nothing at width 0)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    for name, fd, mode in (("stdin", 0, "r"), ("stdout", 1, "w"), ("stderr", 2, "w")):
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, closefd=False, errors="backslashreplace"))  # noqa: SIM115
    for stream in (sys.stdout, sys.stderr):
        # An output encoding that cannot spell every character (PYTHONIOENCODING=ascii, a latin-1 locale):
        # what it cannot spell is escaped instead of ending the command with UnicodeEncodeError.
        if hasattr(stream, "reconfigure") and getattr(stream, "errors", None) == "strict":
            stream.reconfigure(errors="backslashreplace")
    for name in ("COLUMNS", "LINES"):
        value = os.environ.get(name)
        if value is not None and not (value.strip().isdigit() and int(value) > 0):
            del os.environ[name]
    home = os.path.expanduser("~")
    if not os.access(home, os.W_OK) or any(
        not os.access(os.path.join(home, sub), os.W_OK) and os.path.exists(os.path.join(home, sub))
        for sub in (".cache", ".config")
    ):
        # A read-only home: libraries' per-user dirs are moved (the check above keeps this import off
        # the usual start)
        from t3rl_core.home_paths import writable_user_dirs  # lazy: see above

        writable_user_dirs()


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Each of STOP_SIGNALS (SIGTERM: a scheduler, `kill`, `timeout`; SIGHUP: a closed terminal) stops a
    command as Ctrl-C does: the same records, 130. Once a stop is under way, later ones (schedulers repeat
    them) are let go: raised again they would break the stop's own cleanup, and the default action would
    end the process with 128 + the signal. A signal the process was started ignoring (`nohup`) stays so."""
    stopping = False

    def interrupt(signum: int, frame: Any) -> None:
        nonlocal stopping
        if not stopping:
            stopping = True
            raise StopSignal(signum)

    previous: dict[int, Any] = {}
    try:
        for signum in STOP_SIGNALS:
            if signal.getsignal(signum) is not signal.SIG_IGN:
                previous[signum] = signal.signal(signum, interrupt)
    except ValueError:  # not the main thread: the signals stay with whoever handles them there
        yield
        return
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, interrupt if stopping else handler)


def exit_code_for(error: BaseException, command: str | None = None) -> int | None:
    """Print what `error` means for the user (stderr, one line but for config problems) and return the
    exit code; None for an exception of no known kind (a bug: its traceback is what helps). `command`
    (`eval`, `run`, …) picks the way to choose another directory that it takes."""
    if isinstance(error, OSError) and error.errno == errno.EPIPE:
        return reader_gone()
    # Imported only when a command failed: `import launch.cli` stays cheap (a plain command forks first).
    from launch.config.errors import ConfigError, render_problems  # lazy: see above
    from launch.run.pipeline import PipelineError  # lazy: see above
    from launch.run.record_files import RunDirError  # lazy: see above
    from t3rl_core.chat.tokenizer import TokenizerError  # lazy: see above
    from t3rl_core.os_errors import advice as advice_for  # lazy: see above
    from t3rl_core.os_errors import error_line, failed_file  # lazy: see above

    if isinstance(error, KeyboardInterrupt):
        _say(_STOPPED, "yellow")
        return EXIT_STOPPED
    if isinstance(error, ConfigError):
        from rich.console import Console  # lazy: rich, only when a command failed

        render_problems([*error.problems, *error.warnings], Console(stderr=True))
        return EXIT_CONFIG
    if isinstance(error, TokenizerError):  # a tokenizer dir given or configured that does not load
        _say(f"error: {error}")
        return EXIT_CONFIG
    if isinstance(error, RunDirError | PipelineError):
        _say(f"error: {error}")
        return EXIT_FAILED
    if isinstance(error, FileNotFoundError) and error.filename is None and not _working_directory_exists():
        _say("error: the current directory no longer exists (deleted or moved): cd into one that does")
        return EXIT_CONFIG
    if isinstance(error, UnicodeEncodeError) and error.reason == "surrogates not allowed":
        # A name in another encoding (the working dir, a path in the config) reaches Python as lone
        # surrogates, which no UTF-8 file t3rl writes (plan.sh, config.yaml, manifest.json) can hold.
        text = error.object if isinstance(error.object, str) else ""
        near = text[max(error.start - 30, 0) : error.end + 10].encode("utf-8", "backslashreplace").decode()
        _say(
            f"error: a path or value is not UTF-8 text (a name in another encoding): …{near}…; t3rl writes "
            "its records as UTF-8: rename it (or run from a directory whose path is UTF-8)"
        )
        return EXIT_FAILED
    # A failed write names its file, or its traceback does (a full disk raises from write() or close()).
    path = failed_file(error) if isinstance(error, OSError) else None
    if isinstance(error, OSError) and path is not None:
        where = _OUTPUT_CHOICE.get(command or "", _RUNS_DIR_CHOICE)
        advice = advice_for(error, where)
        record = _run_holding(path.partition(" → ")[0])
        run = record if command == "run" else None
        if record and error.errno == errno.EISDIR:
            # t3rl chose the path: "give a file's path" was no fix of a record file made a directory.
            advice = "a directory stands where t3rl keeps a file of the run's record: move it away"
        if run and error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            # a run dir that exists (a resume): another paths.runs_dir would start a new run instead
            advice = f"the run dir {run} cannot be written here: make it writable"
        said = [n[len(RESUME_WITH) :] for n in getattr(error, "__notes__", ()) if n.startswith(RESUME_WITH)]
        resume = f"; then `{said[0] if said else f't3rl run --run-dir {run}'}` resumes the run" if run else ""
        _say(error_line(path, error, advice) + resume)
        return EXIT_FAILED
    return None


def _run_holding(filename: str) -> str | None:
    """The run dir a file t3rl could not write is in (a full disk under a stage), shell-quoted: what the
    failed run left there is its record, which `t3rl run --run-dir` resumes once the cause is fixed."""
    import shlex  # lazy: only once a run failed on a file
    from pathlib import Path  # lazy: only once a run failed on a file

    for folder in Path(filename).parents:
        # (exists, not is_file: the record's own file made a directory is a failure of this dir too)
        if (folder / "config.yaml").exists() and (folder / "manifest.json").exists():
            return shlex.quote(str(folder))
    return None


def reader_gone() -> int:
    """The reader of stdout went away (`t3rl plan … | head -1`): no word, and the code a Unix tool ends
    with then (141). Standard streams that are broken pipes now point at /dev/null, or the flush at exit
    fails once more (Python's advice for EPIPE)."""
    null = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        if _broken_pipe(fd):
            os.dup2(null, fd)
    os.close(null)
    return EXIT_PIPE


def stdout_is_pipe() -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(1).st_mode)
    except OSError:
        return False


def reader_went_away(code: int | str | None, stdout_was_pipe: bool) -> int | str | None:
    """`code`, or 141 when the command ended with 1 because the reader of its stdout pipe went away:
    rich (Console.on_broken_pipe) and Click (which wraps the streams) both end so, without a word."""
    if code != 1 or not stdout_was_pipe:
        return code
    click_utils = sys.modules.get("click.utils")  # loaded when Click ran the command
    wrapped = click_utils is not None and isinstance(sys.stdout, click_utils.PacifyFlushWrapper)
    try:
        null = os.stat(os.devnull)
        out = os.fstat(1)
    except OSError:
        return code
    # rich pointed stdout at /dev/null (its way of quieting the flush at exit); Click wrapped it.
    if (out.st_dev, out.st_ino) == (null.st_dev, null.st_ino) or wrapped:
        return reader_gone()
    return code


def _broken_pipe(fd: int) -> bool:
    """`fd` is a pipe whose reader has gone (writing to it would fail with EPIPE)."""
    import select  # lazy: only once a write failed

    try:
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(event & select.POLLERR for _, event in poller.poll(0))
    except (OSError, ValueError):
        return False


def _working_directory_exists() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


def unexpected(error: BaseException) -> int:
    """The last word on an exception of no known kind, in the console script only: one line naming it and
    how to see its traceback, exit 1. With T3RL_TRACEBACK=1 it is raised as it is."""
    if os.environ.get(TRACEBACK_VARIABLE, "") not in ("", "0"):
        raise error
    if isinstance(error, ModuleNotFoundError) and (error.name or "").partition(".")[0] not in OWN_PACKAGES:
        return _not_set_up(error.name or "?")
    what = (str(error).strip().splitlines() or [""])[0]
    from t3rl_core.shadowed import shadows  # lazy: only once a command failed

    found = shadows(own=OWN_PACKAGES, error=error)
    if found:  # the user's file, not t3rl: named with the fix (a plugin's json.py on PYTHONPATH)
        _say(
            f"error: t3rl failed ({type(error).__name__}: {what}) with a module of the import path in the "
            f"place of another: {found[0].sentence()}. fix: {found[0].fix()}"
        )
        return EXIT_FAILED
    _say(
        f"error: t3rl failed unexpectedly: {type(error).__name__}: {what}. This is a bug in t3rl: please "
        f"report it with the command line; `{TRACEBACK_VARIABLE}=1 t3rl …` shows where it happened"
    )
    return EXIT_FAILED


def _not_set_up(module: str) -> int:
    """t3rl started by a Python its stack is not installed in (`python3 -m launch …` from a checkout
    without ./scripts/setup.sh): said without rich, which may be what is missing."""
    sys.stderr.write(
        f"error: the Python module '{module}' is not installed in {sys.executable}: t3rl runs in the .venv "
        "that ./scripts/setup.sh makes; run ./scripts/setup.sh once, then .venv/bin/t3rl … "
        "(or `source .venv/bin/activate`)\n"
    )
    return EXIT_FAILED


def _say(text: str, colour: str = "red") -> None:
    from rich.console import Console  # lazy: rich, only when a command failed
    from rich.markup import escape  # lazy: rich, only when a command failed

    head, _, rest = text.partition(":")
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        console.print(f"[{colour}]{escape(head)}:[/]{escape(rest)}")
    except BrokenPipeError:  # stderr too went away (`t3rl … 2>&1 | head -1`): nobody is there to read it
        reader_gone()
