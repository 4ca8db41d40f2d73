"""`t3rl data` and `t3rl eval`: the runtime's own work (data preparation, standalone evaluation), in process.

t3rl data bfcl --out data/bfcl [env.data.seed=7] [--config-dir DIR]
t3rl eval +experiment=quickstart --engine reference --limit-per-category 5
t3rl eval +experiment=quickstart --stage eval_tiny      # that stage's settings (limits, engine, split)
t3rl eval model=qwen3_4b_instruct_2507 --engine sglang --url http://127.0.0.1:30000 --k 4
t3rl eval --runtime-config runs/x/runtime/eval.yaml --engine reference
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

if TYPE_CHECKING:
    from launch.checks.resolve import Resolved
    from launch.config.schema import RunConfig
    from t3rl_core.config import RuntimeConfig
    from t3rl_core.eval.config import EvalConfig

ENGINES = ("reference", "hf", "sglang")


def register(app: typer.Typer) -> None:
    data_app = typer.Typer(
        help="Prepare a dataset: one JSONL file per split plus manifest.json.", no_args_is_help=True
    )
    data_app.command("bfcl")(data_bfcl)
    app.add_typer(data_app, name="data")
    app.command("eval")(eval_command)


ConfigDirs = Annotated[
    list[str] | None,
    typer.Option("--config-dir", help="Extra config dir searched after t3rl's (repeatable)."),
]


def data_bfcl(
    out: Annotated[Path, typer.Option("--out", help="output directory")],
    overrides: Annotated[
        list[str] | None,
        typer.Argument(help="Hydra overrides of the env, e.g. env.data.seed=7", show_default=False),
    ] = None,
    config_dir: ConfigDirs = None,
) -> None:
    """BFCL multi-turn (the four categories shipped in bfcl-eval), split by T3RL's id shuffle.

    The env config is the composed one: `env.data.*` overrides and --config-dir env files
    change the splits exactly as in a run's prepare_data stage.
    """
    from t3rl_core.data.__main__ import prepare_and_show

    env = _resolve(overrides or [], config_dir or []).run.env
    if env.name != "bfcl_multi_turn":
        from launch.config.errors import EXIT_CONFIG_ERROR

        typer.echo(
            f"error env: the composed env is '{env.name}', not BFCL multi-turn\n"
            "    fix: drop the env override, or use env=bfcl_multi_turn",
            err=True,
        )
        raise typer.Exit(EXIT_CONFIG_ERROR)
    raise typer.Exit(prepare_and_show(env, out))


def eval_command(
    overrides: Annotated[
        list[str] | None, typer.Argument(help="Hydra overrides, e.g. +experiment=quickstart")
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option(help=f"engine: {', '.join(ENGINES)} or a plugin's name (default: eval.engine)"),
    ] = None,
    url: Annotated[str | None, typer.Option(help="SGLang server URL (engine sglang)")] = None,
    split: Annotated[str | None, typer.Option(help="prepared split (default: eval.split)")] = None,
    k: Annotated[int | None, typer.Option("--k", help="samples per task; reports pass@1 and pass@k")] = None,
    limit_per_category: Annotated[int | None, typer.Option(help="tasks per category")] = None,
    out: Annotated[
        Path | None, typer.Option(help="output dir (default: <runs_dir>/eval-<engine>-<time>)")
    ] = None,
    data: Annotated[
        Path | None, typer.Option(help="split file or data dir (default: prepared into <out>/data)")
    ] = None,
    runtime_config: Annotated[
        Path | None, typer.Option(help="a runtime YAML instead of composing the config from overrides")
    ] = None,
    serve_checkpoint: Annotated[
        Path | None, typer.Option(help="HF dir to serve with SGLang (engine sglang)")
    ] = None,
    tp: Annotated[int, typer.Option(help="SGLang TP size for --serve-checkpoint")] = 1,
    resume: Annotated[
        bool, typer.Option(help="keep finished episodes of an interrupted eval in --out")
    ] = False,
    stage: Annotated[
        str | None,
        typer.Option(
            help="an eval stage of the experiment whose settings to use (its limits, engine, split), "
            "e.g. --stage eval_tiny"
        ),
    ] = None,
    config_dir: ConfigDirs = None,
) -> None:
    """Evaluate a model (or the scripted reference policy) on a prepared split, here and now.

    The engine is checked before the first episode (SGLang: /health and /get_model_info); an engine
    that does not answer, or more engine failures than eval.max_engine_failure_rate allows, exits 1
    with summary.json `complete: false` and the reason. The out dir also gets config.yaml,
    overrides.yaml and manifest.json, as a pipeline run dir does."""
    from t3rl_core.engines.base import EngineUnavailable
    from t3rl_core.eval.config import EvalConfig
    from t3rl_core.eval.evaluate import evaluate
    from t3rl_core.secret import SecretResolutionError

    if engine is not None and engine not in ENGINES:
        _check_engine_plugin(engine)
    if runtime_config is not None:
        if stage is not None:
            raise typer.BadParameter("--stage needs the experiment's overrides", param_hint="--stage")
        if overrides:
            raise typer.BadParameter(
                "give overrides or --runtime-config, not both", param_hint="--runtime-config"
            )
        from t3rl_core.config import RuntimeConfig

        runtime, config, runs_dir = RuntimeConfig.from_yaml(runtime_config), EvalConfig(), Path("runs")
        composed: dict[str, Any] = {"t3rl": runtime.model_dump(mode="json")}
    else:
        resolved = _resolve(overrides or [], config_dir or [])
        run = resolved.run
        config = run.eval if stage is None else stage_eval_config(run, stage)
        runtime, runs_dir = runtime_of(run), Path(run.paths.runs_dir)
        composed = dict(resolved.config)
    config = with_options(
        config, engine=engine, url=url, split=split, k=k, limit_per_category=limit_per_category
    )
    out = out or runs_dir / f"eval-{config.engine.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    write_eval_record(out, composed | {"eval": config.model_dump(mode="json")}, overrides or [])
    try:
        if data is None:
            _check_server(config)  # seconds, where preparing the data first could take minutes
        data_path = data or _prepared(runtime, out / "data", config.split)
        summary = evaluate(
            runtime, config, data_path, out, serve_checkpoint=serve_checkpoint, tp=tp, resume=resume
        )
    except (EngineUnavailable, SecretResolutionError) as error:
        _fail(f"eval failed: {error}", out)
    if not summary["complete"]:
        _fail(None, out)  # the reason was printed under the table


def _check_server(config: EvalConfig) -> None:
    """A running SGLang server (engine sglang with a url) answers its health check."""
    engine = config.engine
    if engine.name == "sglang" and getattr(engine, "url", None):
        import asyncio

        from t3rl_core.engines.sglang_http import SGLangEngine

        async def check() -> None:
            client = SGLangEngine(engine)  # type: ignore[arg-type]
            try:
                await client.check()
            finally:
                await client.aclose()

        asyncio.run(check())


def _fail(message: str | None, out: Path) -> NoReturn:
    """Print why the eval failed (unless already printed; the record stays in `out`) and exit 1."""
    from rich.console import Console
    from rich.markup import escape

    from launch.config.secrets import scrub_text
    from launch.files import atomic_write_json

    summary = out / "summary.json"
    if message is not None and not summary.exists():  # failed before it started: the record says so
        atomic_write_json(summary, {"complete": False, "reason": scrub_text(message)})
    console = Console(stderr=True)
    if message is not None:
        console.print(f"[red]{escape(scrub_text(message))}[/]", soft_wrap=True)
    console.print(f"record: {summary}", soft_wrap=True)
    raise typer.Exit(1)


def write_eval_record(out: Path, config: dict[str, Any], overrides: list[str]) -> None:
    """config.yaml, overrides.yaml and manifest.json of a standalone eval dir (secrets masked)."""
    import yaml

    from launch.config.secrets import scrub_obj
    from launch.run.rundir import RunDir, collect_manifest
    from launch.run.steps import t3rl_root

    record = RunDir(out)
    record.path.mkdir(parents=True, exist_ok=True)
    record.write_config(yaml.safe_dump(scrub_obj(config), sort_keys=False), overrides)
    manifest = collect_manifest(
        run_name="eval",
        run_id=record.path.name,
        t3rl_root=t3rl_root(),
        topology={},
        seeds={"eval": config["eval"]["seed"]},
        overrides=overrides,
        config_dirs=[],
        created_at=record.read_manifest().get("created_at"),
    )
    record.write_manifest(manifest)


def _check_engine_plugin(name: str) -> None:
    """An engine that is not built in must be a plugin that loads (import path or entry point)."""
    from t3rl_core.registries import ENGINES as REGISTRY

    try:
        REGISTRY.entry(name)
    except ValueError as err:
        raise typer.BadParameter(
            f"{err}; built-in engines: {', '.join(ENGINES)}", param_hint="--engine"
        ) from None


def with_options(config: EvalConfig, **options: Any) -> EvalConfig:
    """The eval config with the command-line options applied (None = keep)."""
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
    return type(config).model_validate(data)


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


def _resolve(overrides: list[str], config_dirs: list[str]) -> Resolved:
    """The validated run config; a config error is printed (key, source, fix) and exits with code 2."""
    from rich.console import Console

    from launch.checks.resolve import resolve
    from launch.config.errors import EXIT_CONFIG_ERROR, ConfigError, render_problems

    try:
        return resolve(overrides, [os.path.abspath(os.path.expanduser(d)) for d in config_dirs])
    except ConfigError as error:
        render_problems([*error.problems, *error.warnings], Console(stderr=True))
        raise typer.Exit(EXIT_CONFIG_ERROR) from None


def _prepared(runtime: RuntimeConfig, data_dir: Path, split: str) -> Path:
    """`<data_dir>/<split>.jsonl`, prepared from the runtime's env config when it is not there yet."""
    path = data_dir / f"{split}.jsonl"
    if not path.exists():
        from t3rl_core.data import prepare_from_runtime

        prepare_from_runtime(runtime, data_dir)
    return path
