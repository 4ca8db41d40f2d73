"""`t3rl data` and `t3rl eval`: the runtime's own work (data preparation, standalone evaluation), in process
(`t3rl eval` itself: launch.cli.eval_command; the settings it shares with pipeline runs are here).

t3rl data bfcl --out data/bfcl [env.data.seed=7] [--config-dir DIR]
t3rl eval +experiment=quickstart --engine reference --limit-per-category 5
t3rl eval +experiment=quickstart --stage eval_tiny      # that stage's settings (limits, engine, split)
t3rl eval model=qwen3_4b_instruct_2507 --engine sglang --url http://127.0.0.1:30000 --k 4
t3rl eval --runtime-config runs/x/runtime/eval.yaml --engine reference
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from launch.cli import completion
from launch.cli.eval_command import ConfigDirs, eval_command
from launch.cli.eval_setup import resolve_or_exit
from launch.cli.out_option import writable_out
from launch.run.exit_codes import EXIT_CONFIG
from t3rl_core.data.__main__ import prepare_and_show

if TYPE_CHECKING:
    pass


def register(app: typer.Typer) -> None:
    data_app = typer.Typer(
        help="Prepare a dataset: one JSONL file per split plus manifest.json.\n\n"
        "Examples:\n\n"
        "  t3rl data bfcl --out data/bfcl\n\n"
        "  t3rl data bfcl +experiment=stage1_bfcl --out data/bfcl-stage1",
        no_args_is_help=True,
    )
    data_app.command("bfcl")(data_bfcl)
    app.add_typer(data_app, name="data")
    app.command("eval")(eval_command)


def data_bfcl(
    out: Annotated[
        Path, typer.Option("--out", metavar="DIR", help="output directory", callback=writable_out)
    ],
    overrides: Annotated[
        list[str] | None,
        completion.overrides_argument("Hydra overrides of the env, e.g. env.data.seed=7"),
    ] = None,
    config_dir: ConfigDirs = None,
) -> None:
    """BFCL multi-turn (the four categories shipped in bfcl-eval), split by T3RL's id shuffle.

    The env config is the composed one: `env.data.*` overrides and --config-dir env files
    change the splits exactly as in a run's prepare_data stage. The splits appear in DIR whole or
    not at all (written beside it, moved in with manifest.json last): an interrupted preparation
    leaves nothing to be taken for prepared, and a rerun prepares again.

    Examples:

      t3rl data bfcl --out data/bfcl

      t3rl data bfcl +experiment=stage1_bfcl env.data.seed=7 --out data/bfcl-seed7
    """
    if (out / "config.yaml").is_file():  # the data's manifest.json would replace the record's
        raise typer.BadParameter(
            f"{out} holds a run's, plan's or eval's record; the splits go into a dir of their own",
            param_hint="--out",
        )
    env = resolve_or_exit(overrides or [], config_dir or [], out).run.env  # writes --out alone
    if env.name != "bfcl_multi_turn":
        typer.echo(
            f"error env: the composed env is '{env.name}', not BFCL multi-turn\n"
            "    fix: drop the env override, or use env=bfcl_multi_turn",
            err=True,
        )
        raise typer.Exit(EXIT_CONFIG)
    raise typer.Exit(prepare_and_show(env, out))
