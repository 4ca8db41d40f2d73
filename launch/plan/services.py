"""Managed services in a plan: which stages need which server, the stage's commands wrapped in its
start/stop (t3rl_core.services), and the server's URL written into the stage's env."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from launch.config.errors import ConfigError, Problem
from launch.config.schema import RunConfig, ServiceConfig
from launch.config.server_options import server_argv_problems
from launch.plan.anchored_paths import local_or_hub
from launch.plan.stages import Stage
from t3rl_core.secret import Secret
from t3rl_core.secret_launch import argv_for, split
from t3rl_core.yaml_text import safe_dump


def services_of(run: RunConfig, name: str, kind: str) -> list[tuple[str, ServiceConfig]]:
    """The services stage `name` (of `kind`) runs with."""
    return [(service, spec) for service, spec in run.services.items() if spec.serves(name, kind)]


def with_urls(env: dict[str, Any], services: list[tuple[str, ServiceConfig]]) -> dict[str, Any]:
    """`env` (plain data) with each service's URL at its env_url_key."""
    for _, spec in services:
        if spec.env_url_key is None:
            continue
        *parents, leaf = spec.env_url_key.split(".")
        node = env
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = spec.url
    return env


def wrap(
    stage: Stage,
    services: list[tuple[str, ServiceConfig]],
    python: str,
    run_dir: str,
    base_dir: Path | None = None,
) -> Stage:
    """The stage with each service started first and stopped on exit (however the stage ends); a
    service's local model directory given relative is anchored at `base_dir` (it starts elsewhere)."""
    if not services:
        return stage
    files = dict(stage.files)
    before: list[str] = []
    requires, requires_env = dict(stage.requires), dict(stage.requires_env)
    for service, spec in services:
        # A service's replicas share its GPU list (or the stage's first tp GPUs).
        gpus = len(spec.gpus) or spec.tp
        problems = server_argv_problems(
            spec.extra_args, f"services.{service}.extra_args", tp=spec.tp, gpus=gpus, context_length=None
        )
        if problems:
            raise ConfigError(problems)
        path = f"{run_dir}/runtime/{stage.name}.{service}.service.yaml"
        stage_dir = f"{run_dir}/stages/{stage.name}"
        launch = spec.launch if spec.launch is not None else [python, "-m", "sglang.launch_server"]
        served = [*launch, *spec.extra_args] if spec.kind == "sglang" else []
        for flag, reference in _references(service, served):
            what = f"{flag} {reference} of service {service} (services.{service}.extra_args)"
            if reference.kind == "env":
                requires_env[reference.target] = f"{what}: export it"
            else:
                requires[reference.target] = f"{what}: the file holding it"
        runtime = {
            "name": service,
            "kind": spec.kind,
            "model_path": local_or_hub(spec.model_path, base_dir)
            if spec.model_path and base_dir is not None
            else spec.model_path,
            "command": spec.command,
            "health_path": spec.health_path,
            "tp": spec.tp,
            "gpus": spec.gpus,
            "host": spec.host,
            "port": spec.port,
            "startup_timeout_s": spec.startup_timeout_s,
            "extra_args": spec.extra_args,
            "launch": launch,
            "pid_file": f"{stage_dir}/{service}.pid",
            "log_file": f"{stage_dir}/{service}.log",
        }
        files[path] = safe_dump(runtime, sort_keys=False)
        manage = f"{shlex.quote(python)} -m t3rl_core.services {{}} --config {shlex.quote(path)}"
        before += [manage.format("start"), f"trap {shlex.quote(manage.format('stop'))} EXIT"]
    summary = f"{stage.summary} (with {', '.join(name for name, _ in services)})"
    return stage._replace(
        commands=(*before, *stage.commands),
        files=files,
        summary=summary,
        requires=requires,
        requires_env=requires_env,
    )


def _references(service: str, argv: list[str]) -> list[tuple[str, Secret]]:
    """The flags of `argv` given by reference (env:NAME, file:PATH), which the server's own process
    reveals (t3rl_core.secret_launch); a ConfigError when its launch is no Python entry point."""
    try:
        argv_for(argv)
    except ValueError as error:
        fix = f"set services.{service}.launch=[PYTHON,-m,MODULE] (or [PYTHON,SCRIPT.py])"
        raise ConfigError([Problem(f"services.{service}.launch", str(error), fix=fix)]) from None
    return [(flag, Secret(reference)) for flag, reference in split(argv)[1]]
