"""The `--out DIR` of every command that writes a directory of its own (`t3rl eval`, `t3rl score`,
`t3rl data`): a directory t3rl cannot make or write here (a file in its place, a read-only tree, the
kernel's /proc) is a bad argument, refused before any work with the option named (exit 2), not a
failure at the command's first mkdir (`unwritable`, pre-flight's own probe of an `OutputDir`).
tests/launch/test_local_dirs.py finds every such option."""

from __future__ import annotations

from pathlib import Path

import typer

from launch.checks.rules.local_dirs import unwritable


def check_writable(out: Path, hint: str = "--out") -> Path:
    """`out`, or BadParameter saying why t3rl cannot write there."""
    why = unwritable(out.expanduser())
    if why is not None:
        raise typer.BadParameter(f"{why}; choose a directory you can write", param_hint=hint)
    return out


def writable_out(value: Path | None) -> Path | None:
    """The typer callback of an `--out DIR` option (`check_writable` of a given value)."""
    return None if value is None else check_writable(value)
