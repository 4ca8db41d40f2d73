"""`t3rl data` and `t3rl eval`: the runtime's own work (data preparation, standalone evaluation), in process
(`t3rl eval` itself: launch.cli.eval_command; the settings it shares with pipeline runs are here).

t3rl data bfcl --out data/bfcl [env.data.seed=7] [--config-dir DIR]
t3rl eval +experiment=quickstart --engine reference --limit-per-category 5
t3rl eval +experiment=quickstart --stage eval_tiny      # that stage's settings (limits, engine, split)
t3rl eval model=qwen3_4b_instruct_2507 --engine sglang --url http://127.0.0.1:30000 --k 4
t3rl eval --runtime-config runs/x/runtime/eval.yaml --engine reference
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from launch.cli import completion
from launch.cli.eval_command import ConfigDirs, eval_command

if TYPE_CHECKING:
    from launch.checks.resolve import Resolved
    from launch.config.schema import RunConfig
    from t3rl_core.config import RuntimeConfig
    from t3rl_core.eval.config import EvalConfig


def register(app: typer.Typer) -> None:
    data_app = typer.Typer(
        help="Prepare a dataset: one JSONL file per split plus manifest.json.", no_args_is_help=True
    )
    data_app.command("bfcl")(data_bfcl)
    app.add_typer(data_app, name="data")
    app.command("eval")(eval_command)


def data_bfcl(
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="output directory")],
    overrides: Annotated[
        list[str] | None,
        completion.overrides_argument("Hydra overrides of the env, e.g. env.data.seed=7"),
    ] = None,
    config_dir: ConfigDirs = None,
) -> None:
    """BFCL multi-turn (the four categories shipped in bfcl-eval), split by T3RL's id shuffle.

    The env config is the composed one: `env.data.*` overrides and --config-dir env files
    change the splits exactly as in a run's prepare_data stage.
    """
    from t3rl_core.data.__main__ import prepare_and_show

    if out.exists() and not out.is_dir():
        raise typer.BadParameter(f"{out} is a file, not a directory for the splits", param_hint="--out")
    env = resolve_or_exit(overrides or [], config_dir or []).run.env
    if env.name != "bfcl_multi_turn":
        from launch.config.errors import EXIT_CONFIG_ERROR

        typer.echo(
            f"error env: the composed env is '{env.name}', not BFCL multi-turn\n"
            "    fix: drop the env override, or use env=bfcl_multi_turn",
            err=True,
        )
        raise typer.Exit(EXIT_CONFIG_ERROR)
    raise typer.Exit(prepare_and_show(env, out))


def with_options(config: EvalConfig, **options: Any) -> EvalConfig:
    """The eval config with the command-line options applied (None = keep); a value the config refuses
    exits 2 naming the option that gave it."""
    from pydantic import ValidationError

    from launch.cli.eval_command import OPTION_OF

    data = config.model_dump(mode="json")
    engine, url, k = options.pop("engine"), options.pop("url"), options.pop("k")
    if engine is not None and engine != data["engine"]["name"]:
        data["engine"] = {"name": engine}  # another engine: its own defaults, not the old engine's keys
    if url is not None:
        if data["engine"]["name"] != "sglang":
            raise typer.BadParameter("--url needs --engine sglang", param_hint="--url")
        data["engine"]["url"] = url
    if k is not None:
        data["samples"], data["pass_k"] = k, sorted({1, k})
        data["temperature"] = data["temperature"] or 1.0  # k greedy samples would all be equal
    data |= {key: value for key, value in options.items() if value is not None}
    try:
        return type(config).model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        option = "--url" if where.startswith("engine.url") else OPTION_OF.get(str(first["loc"][0]), where)
        raise typer.BadParameter(f"eval.{where}: {first['msg']}", param_hint=option) from None


def stage_eval_config(run: RunConfig, name: str) -> EvalConfig:
    """The eval settings of the experiment's eval stage `name`: the root `eval` with its overrides."""
    from launch.config.overlay import overlay
    from launch.config.schema import EvalStage

    spec = run.stages.get(name)
    if not isinstance(spec, EvalStage):
        evals = [n for n, s in run.stages.items() if isinstance(s, EvalStage)]
        raise typer.BadParameter(
            f"'{name}' is not an eval stage of this config (eval stages: {', '.join(evals) or 'none'})",
            param_hint="--stage",
        )
    return type(run.eval).model_validate(overlay(run.eval.model_dump(mode="json"), spec.eval))


def runtime_of(run: RunConfig) -> RuntimeConfig:
    """The runtime config of a resolved run, as an eval of its base model sees it."""
    from t3rl_core.config import RuntimeConfig

    return RuntimeConfig(env=run.env, reward=run.reward, chat=run.model.chat, parsers=run.model.parsers)


def resolve_or_exit(overrides: list[str], config_dirs: list[str]) -> Resolved:
    """The validated run config; a config error is printed (key, source, fix) and exits with code 2."""
    from rich.console import Console

    from launch.checks.resolve import resolve
    from launch.config.errors import EXIT_CONFIG_ERROR, ConfigError, render_problems

    try:
        return resolve(overrides, [os.path.abspath(os.path.expanduser(d)) for d in config_dirs])
    except ConfigError as error:
        render_problems([*error.problems, *error.warnings], Console(stderr=True))
        raise typer.Exit(EXIT_CONFIG_ERROR) from None


def prepared(runtime: RuntimeConfig, data_dir: Path, split: str) -> Path:
    """`<data_dir>/<split>.jsonl`, prepared from the runtime's env config when it is not there yet."""
    path = data_dir / f"{split}.jsonl"
    if not path.exists():
        from t3rl_core.data import prepare_from_runtime

        prepare_from_runtime(runtime, data_dir)
    return path
