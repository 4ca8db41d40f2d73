"""What `t3rl eval` sets up before it runs: the resolved config or an exit 2 naming what is wrong, an
eval stage's settings, the command-line options applied to them, the runtime config, the prepared
split. Its own module so that the command and the other runtime commands share it without importing
each other."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from pydantic import ValidationError
from rich.console import Console

from launch.checks.resolve import resolve
from launch.checks.rules.usual import unusual
from launch.cli.option_fields import EVAL_FIELDS, option_key, option_of, usual
from launch.config.errors import ConfigError, Problem, did_you_mean, render_problems
from launch.config.overlay import overlay
from launch.config.schema import EvalStage
from launch.run.exit_codes import EXIT_CONFIG
from t3rl_core.config import RuntimeConfig

if TYPE_CHECKING:
    from launch.checks.resolve import Resolved
    from launch.config.schema import RunConfig
    from t3rl_core.eval.config import EvalConfig


def with_options(config: EvalConfig, **options: Any) -> EvalConfig:
    """The eval config with the command-line options applied (None = keep), each by its keyword
    (`limit_per_category=`), set where launch.cli.option_fields says; a value the config refuses exits 2
    naming the option that gave it."""
    data = config.model_dump(mode="json")
    engine, url, k = options.pop("engine", None), options.pop("url", None), options.pop("k", None)
    if engine is not None and engine != data["engine"]["name"]:
        data["engine"] = {"name": engine}  # another engine: its own defaults, not the old engine's keys
    if url is not None:
        if data["engine"]["name"] != "sglang":
            raise typer.BadParameter("--url needs --engine sglang", param_hint="--url")
        data["engine"]["url"] = url
    if k is not None:
        data["samples"], data["pass_k"] = k, sorted({1, k})
        data["temperature"] = data["temperature"] or 1.0  # k greedy samples would all be equal
    by_key = {option_key(option): option for option in EVAL_FIELDS}
    unusual_values = []
    for key, value in options.items():
        if value is not None:
            *section, name = EVAL_FIELDS[by_key[key]].split(".")
            place = data
            for part in section:
                place = place[part]
            place[name] = value
            unusual_values.append(_unusual_option(by_key[key], value))
    try:
        validated = type(config).model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise typer.BadParameter(
            f"eval.{where}: {first['msg']}", param_hint=option_of(where) or where
        ) from None
    warnings = [problem for problem in unusual_values if problem is not None]
    if warnings:
        render_problems(warnings, Console(stderr=True))
    return validated


def _unusual_option(option: str, value: Any) -> Problem | None:
    """The pre-flight's warning for a value above its field's usual ceiling, worded for the option:
    validate warns about one set in the config, and an option's value is set after it ran."""
    ceiling = usual(option)
    if ceiling is None:
        return None
    return unusual(option, value, ceiling, fix_as=f"{option} {{}}", source="the command line")


def stage_eval_config(run: RunConfig, name: str) -> EvalConfig:
    """The eval settings of the experiment's eval stage `name`: the root `eval` with its overrides."""
    spec = run.stages.get(name)
    if not isinstance(spec, EvalStage):
        evals = [n for n, s in run.stages.items() if isinstance(s, EvalStage)]
        guess = did_you_mean(name, evals)
        meant = f"did you mean --stage {guess}? " if guess else ""
        raise typer.BadParameter(
            f"'{name}' is not an eval stage of this config ({meant}eval stages: "
            f"{', '.join(evals) or 'none'})",
            param_hint="--stage",
        )
    return type(run.eval).model_validate(overlay(run.eval.model_dump(mode="json"), spec.eval))


def runtime_of(run: RunConfig) -> RuntimeConfig:
    """The runtime config of a resolved run, as an eval of its base model sees it."""
    return RuntimeConfig(env=run.env, reward=run.reward, chat=run.model.chat, parsers=run.model.parsers)


def resolve_or_exit(overrides: list[str], config_dirs: list[str], out: Path | None = None) -> Resolved:
    """The validated run config; a config error is printed (key, source, fix) and exits with code 2.
    `out`: the --out DIR the command writes instead of one under paths.runs_dir (`Context.record_dir`:
    then paths.runs_dir is not judged for it)."""
    dirs = [os.path.abspath(os.path.expanduser(d)) for d in config_dirs]
    try:
        return resolve(overrides, dirs, None, str(out.expanduser()) if out is not None else None)
    except ConfigError as error:
        render_problems([*error.problems, *error.warnings], Console(stderr=True))
        raise typer.Exit(EXIT_CONFIG) from None


def prepared(runtime: RuntimeConfig, data_dir: Path, split: str) -> Path:
    """`<data_dir>/<split>.jsonl`, prepared from the runtime's env config unless the dir holds an intact
    preparation (its manifest lists every file with its sha256): a split left by a preparation that
    was stopped is prepared again, never read as whole."""
    from t3rl_core.data import prepare_from_runtime  # lazy: the data preparers, only for an eval's split
    from t3rl_core.data.check import problems  # lazy: the data preparers, only for an eval's split

    path = data_dir / f"{split}.jsonl"
    if not path.is_file() or problems(data_dir) or path.name not in _listed(data_dir):
        prepare_from_runtime(runtime, data_dir)
    return path


def _listed(data_dir: Path) -> set[str]:
    """The files the data dir's manifest lists (a split left by another preparation is not one)."""
    from t3rl_core.data import read_manifest  # lazy: the data preparers, only for an eval's split

    splits = read_manifest(data_dir).get("splits", {})
    return {str(info.get("file")) for info in splits.values() if isinstance(info, dict)}
