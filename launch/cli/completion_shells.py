"""`t3rl --install-completion [SHELL]` and `t3rl --show-completion [SHELL]`: the shell named, else the one
t3rl runs in, among the shells Typer has a completion script for.

Typer's two options are flags: `t3rl --show-completion zsh` printed the script of the shell it detected
(bash's, in bash), `--install-completion fish` installed bash's, and in tcsh (or any shell without a script)
Typer said `Shell tcsh not supported.` and nothing of what there is instead. Here the shell is read from
the word after the option, checked against Typer's own table of scripts (`SHELLS`), and one it has no script
for is refused (exit 2) naming those it has and what lists the config without completion.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import typer
from typer._completion_shared import _completion_scripts, _get_shell_name, get_completion_script, install

OPTIONS = ("--install-completion", "--show-completion")
# The shells completion has a script for: Typer's table, by the names it takes (pwsh is PowerShell).
SHELLS = tuple(_completion_scripts)
PROG, COMPLETE_VAR = "t3rl", "_T3RL_COMPLETE"
_WITHOUT = (
    "Without completion, `t3rl ls` lists the config groups and `t3rl ls GROUP` a group's options; or "
    "complete in a shell that has it: start bash, then t3rl --install-completion bash"
)


def completion_request(args: Sequence[str], ctx: Any) -> None:
    """Do what `t3rl --install-completion|--show-completion [SHELL]` asks and exit 0; refuse a shell
    without a script (exit 2). Any other command line: nothing."""
    option, _, value = args[0].partition("=") if args else ("", "", "")
    if option not in OPTIONS:
        return
    words = [value] if value else list(args[1:2])
    if len(args) > 1 + (not value):
        raise typer.BadParameter(
            f"{option} takes one SHELL, and {' '.join(args[1 + (not value) :])} followed it: "
            f"t3rl {option} {words[0] if words else 'bash'}",
            ctx,
            param_hint=f"'{option}'",
        )
    shell = words[0] if words else detected_shell()
    if shell is None:
        raise typer.BadParameter(
            f"t3rl cannot tell which shell it runs in: name it, e.g. t3rl {option} bash (one of "
            f"{', '.join(SHELLS)})",
            ctx,
            param_hint=f"'{option}'",
        )
    if shell not in SHELLS:
        from launch.config.errors import did_you_mean  # lazy: only for a shell to refuse

        near = did_you_mean(shell, SHELLS)
        meant = f"Did you mean t3rl {option} {near}? " if near else ""
        raise typer.BadParameter(
            f"t3rl completes in {', '.join(SHELLS)}; {shell} has no completion script, so nothing was "
            f"{'installed' if option == OPTIONS[0] else 'shown'}. {meant}{_WITHOUT}",
            ctx,
            param_hint=f"'{option}'",
        )
    if option == OPTIONS[1]:
        typer.echo(get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell))
    else:
        shell, path = install(shell=shell, prog_name=PROG, complete_var=COMPLETE_VAR)
        typer.secho(f"{shell} completion installed in {path}", fg="green")
        typer.echo("Completion will take effect once you restart the terminal")
    raise typer.Exit(0)


def detected_shell() -> str | None:
    """The shell t3rl runs in (its parent process's name), None when it cannot be told."""
    return _get_shell_name()
