"""Prepare a dataset: `python -m t3rl_core.data --runtime-config RUNTIME.yaml --out DIR`, or with a
dataset's default config: `python -m t3rl_core.data bfcl --out DIR`."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from t3rl_core.config import EnvConfig, RuntimeConfig
from t3rl_core.data import default_env_config, prepare_env_data, read_manifest
from t3rl_core.data.progress import ProgressLines, reporting
from t3rl_core.data.publish import final_dir
from t3rl_core.data.rows import DataError
from t3rl_core.os_errors import stage_main

if TYPE_CHECKING:
    from rich.progress import TaskID


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m t3rl_core.data", description=__doc__)
    parser.add_argument("env", nargs="?", help="dataset name with its default config (e.g. bfcl)")
    parser.add_argument("--runtime-config", type=Path, help="runtime YAML whose env section to prepare")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    args = parser.parse_args(argv)
    if (args.env is None) == (args.runtime_config is None):
        parser.error("give either a dataset name or --runtime-config, not both")

    console = Console(stderr=True, soft_wrap=True)  # a log's lines stay whole
    try:
        if args.runtime_config:
            env = RuntimeConfig.from_yaml(args.runtime_config).env
        else:
            env = default_env_config(args.env)
    except (OSError, ValueError) as exc:
        console.print(f"[red]cannot read the env config:[/red] {escape(str(exc))}")
        return 2
    return prepare_and_show(env, args.out)


def prepare_and_show(env: EnvConfig, out: Path) -> int:
    """Prepare `env`'s splits into `out` and print a table of them (rows, size, sha256)."""
    console = Console(stderr=True, soft_wrap=True)  # a log's lines stay whole
    try:
        with _shown_progress(console, f"preparing {env.name} data"):
            prepare_env_data(env, out)
    except DataError as error:
        # A bad source line is the input's fault, not a bug: one line naming it, no traceback.
        console.print(f"[red]error:[/red] {escape(str(error))}", soft_wrap=True, highlight=False)
        return 2
    table = Table(title=escape(f"{env.name} → {final_dir(out)}"))
    for column in ("split", "rows", "MB", "sha256"):
        table.add_column(column, justify="right" if column in ("rows", "MB") else "left")
    for name, info in read_manifest(out)["splits"].items():
        table.add_row(name, str(info["rows"]), f"{info['bytes'] / 1e6:.1f}", info["sha256"][:16])
    console.print(table)
    return 0


@contextmanager
def _shown_progress(console: Console, title: str) -> Iterator[None]:
    """Each phase of the preparation as a bar on a terminal (stderr), else as progress lines (stdout)."""
    if not console.is_terminal:
        with reporting(ProgressLines()):
            yield
        return

    with Progress(
        TextColumn(f"[bold]{title}[/] {{task.description}}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as bar:
        tasks: dict[tuple[int, str], TaskID] = {}

        def show(done: int, total: int, what: str) -> None:
            if (total, what) not in tasks:
                tasks[total, what] = bar.add_task(what, total=total)
            bar.update(tasks[total, what], completed=done)

        with reporting(show):
            yield


if __name__ == "__main__":
    stage_main(main)
