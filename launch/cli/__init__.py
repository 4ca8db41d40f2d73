"""The `t3rl` command line: the Typer app (`launch.cli.app`) and one module per command group."""

from __future__ import annotations

import gc
import os
import sys

from launch.cli.deferred_patterns import defer_library_patterns, defer_yaml_reader
from launch.cli.failures import (
    exit_code_for,
    mend_surroundings,
    reader_gone,
    reader_went_away,
    sigterm_as_interrupt,
    stdout_is_pipe,
    unexpected,
)
from launch.cli.forward_ref_code import share_compiled
from launch.config import compose_ahead

# Before any of the command's modules imports PyYAML: its pure-Python reader's pattern is compiled only
# if that reader runs (launch.cli.deferred_patterns).
defer_yaml_reader()
# Likewise the patterns a few standard modules compile on import (launch.cli.deferred_patterns).
defer_library_patterns()
# Before pydantic is imported: its core schema's ~740 string annotations compile ~200 distinct texts.
share_compiled()

# Commands whose plain form, `t3rl COMMAND OVERRIDES…` with no option at all (the everyday form, and how
# a sweep starts each point), runs its body directly: building the Typer app and coercing its parameters
# costs a cold start more than the whole composition does. Any option (--help, -m, --config-dir, …),
# another command or a shell-completion request goes through Typer as usual.
PLAIN_COMMANDS = ("plan", "run", "validate")
# Plain commands that end without starting a stage: they import ~140 modules and exit, and the collector's
# young-generation passes over those imports cost about a tenth of a cold validate's CPU and free next to
# nothing (~100 passes, ~700 objects), so such a process runs without the collector (it ends once its
# config is checked or its plan written).
SHORT_COMMANDS = ("plan", "validate")

# Modules holding nanobind extensions: nanobind reports every instance still alive at exit as
# "nanobind: leaked …", and frozen objects are never collected, so with these loaded we do not freeze.
NANOBIND_USERS = ("triton", "xgrammar", "torch", "sglang")


def main() -> None:
    """The `t3rl` console script (`launch.cli:main`); importing this package alone stays cheap."""
    mend_surroundings()
    piped = stdout_is_pipe()
    try:
        try:
            code = _command(sys.argv[1:])
        except SystemExit as done:
            code = reader_went_away(done.code, piped)
        # What is still buffered is written here, where a reader that went away is told (at exit Python
        # would print "Exception ignored … BrokenPipeError" and end with 120).
        sys.stdout.flush()
    except BrokenPipeError:
        code = reader_gone()
    except Exception as error:  # of no kind `exit_code_for` knows: one line, not a traceback
        code = unexpected(error)
    finally:
        # The interpreter's last garbage collections at exit walk every object imported or built (~40 ms
        # of a short command); frozen objects are skipped. Files t3rl writes are closed before this point.
        if not any(name in sys.modules for name in NANOBIND_USERS):
            gc.freeze()
    sys.exit(code)


def _command(args: list[str]) -> int | str | None:
    """Run the command line; its exit code (None = 0, a string is printed and means 1, as sys.exit)."""
    if is_plain(args):
        if args[0] in SHORT_COMMANDS:
            gc.disable()
        return run_plain(args[0], args[1:])
    from launch.cli.app import app  # lazy: Typer and the app, never for a plain plan/run/validate

    app()
    return 0


def is_plain(args: list[str]) -> bool:
    """`plan|run|validate` followed by overrides only (nothing that starts with '-'), not completing, in
    plain ASCII text (a character pasted for it is refused by the app: launch.cli.pasted_characters)."""
    completing = any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ)
    return (
        bool(args)
        and args[0] in PLAIN_COMMANDS
        and not any(a.startswith("-") for a in args[1:])
        and not completing
        # other text goes through the app, which refuses a character pasted for plain text
        and all(arg.isascii() and arg.isprintable() for arg in args)
        # a word that is no override (`help`, another command) is read with the app's commands named
        and all("=" in arg or arg.startswith("~") for arg in args[1:])
    )


def run_plain(command: str, overrides: list[str]) -> int:
    """What the Typer app does for `command` with these overrides and every option at its default."""
    # First of all, before Hydra or pydantic is imported: a child composes while this process imports.
    compose_ahead.start(overrides)
    # lazy: after the fork: the composing child must not pay for it
    from launch.config.secrets import scrub_standard_streams

    scrub_standard_streams()  # as the app's callback does before any command
    try:
        with sigterm_as_interrupt():
            if command == "validate":
                # lazy: only the command that runs, after the fork
                from launch.cli.validate_command import validate_command

                return validate_command(overrides, [])
            # lazy: only the command that runs, after the fork
            from launch.cli.run_command import run_command

            return run_command(overrides, False, None, None, None, [], dry=command == "plan")
    except (Exception, KeyboardInterrupt) as error:  # as the Typer app ends (LazyGroup.invoke)
        code = exit_code_for(error, command)
        if code is None:
            raise
        return code
    finally:
        compose_ahead.discard()  # a command that ended before resolving leaves no child behind
