"""One truth per setting: a value the user set that a later layer silently replaces is refused, naming
both places.

- An experiment's own keys merge where `_self_` stands in its defaults list: a group file merged after
  it replaces what the experiment wrote (`Provenance.shadowed`).
- A managed service writes its URL into the env key it serves (`env_url_key`): a URL the user set
  there would be replaced.
- An sbatch option in `executor.extra_sbatch` that t3rl writes from a key (launch.config.sbatch_options).
- A variable in `hardware.env_vars` that t3rl derives for the job (launch.plan.slime_args.job_env)
  and a pass-through flag that t3rl derives (launch.plan.pass_through) are refused where the argv is
  built.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

from launch.checks.context import Context, Scope, per_scope
from launch.checks.eval_configs import eval_configs, eval_key
from launch.config.errors import Problem
from launch.config.fixes import list_override, quoted, typed_text
from launch.config.sbatch_options import derived_option
from launch.config.schema import SlurmExecutorConfig


def experiment_values_kept(ctx: Context) -> Iterator[Problem]:
    """A key an experiment file sets is not replaced by a config file merged after it."""
    for key, shadow in ctx.provenance.shadowed.items():
        written, value = typed_text(shadow.raw), typed_text(_value(ctx.data, key))
        yield Problem(
            key,
            f"{shadow.source} sets {key}={written}, but {shadow.by}, merged after it (the "
            f"experiment's defaults list puts `_self_` before that default), replaces it with {value}",
            source=shadow.source,
            fix=f"set {key}={written} (or put `_self_` last in the experiment's defaults list, "
            "so that its own values win)",
        )


def service_urls_not_set_twice(ctx: Context) -> Iterator[Problem]:
    """An env key a service writes its URL into is not also set by the user to something else."""
    for name, service in ctx.run.services.items():
        if service.env_url_key is None:
            continue
        key = f"env.{service.env_url_key}"
        origin = ctx.provenance.origin(key)
        value = _value(ctx.data, key)
        if origin is None or not origin.source.startswith("override") or value in (None, service.url):
            continue
        yield Problem(
            key,
            f"{key} is set to {value}, but services.{name} serves that key: the stages it runs with get "
            f"{service.url} instead",
            fix=f"set services.{name}.env_url_key=null (use your URL and start no service), or drop the "
            f"override of {key}",
        )


# Flags t3rl writes into every SGLang server it starts (t3rl_core.eval.server.launch_argv,
# t3rl_core.services.ServiceSpec.argv), with their aliases in SGLang, → the field that sets each
# ("{server}" is the server's own section, "model" the run's model).
_SERVER_FLAGS = {
    ("--model-path", "--model"): "{checkpoint}",
    ("--tp", "--tp-size", "--tensor-parallel-size"): "{server}.tp",
    ("--host",): "{server}.host",
    ("--port",): "{server}.port",
    ("--api-key",): "{server}.api_key",
    ("--tool-call-parser",): "model.parsers.tool_call_parser",
    ("--reasoning-parser",): "model.parsers.reasoning_parser",
}


def one_server_per_env_url(ctx: Context) -> Iterator[Problem]:
    """A service that serves the env's URL, and an env that would start its own server there too."""
    for name, service in ctx.run.services.items():
        if service.env_url_key is None:
            continue
        parent = service.env_url_key.rpartition(".")[0]
        section = _value(ctx.data, f"env.{parent}" if parent else "env")
        if isinstance(section, dict) and section.get("command"):
            key = f"env.{parent}.command" if parent else "env.command"
            yield Problem(
                key,
                f"services.{name} starts the server at env.{service.env_url_key}, and {key} would start "
                "another one there",
                fix=f"set {key}=null (the service runs it)",
            )


def server_flags_not_passed_through(ctx: Context) -> Iterator[Problem]:
    """A server's extra_args neither repeat a flag nor pass one t3rl writes from another key."""
    servers = [
        (f"services.{n}", s.extra_args, f"services.{n}.model_path") for n, s in ctx.run.services.items()
    ]
    for stage, config, overrides in eval_configs(ctx.run):
        key = eval_key(stage, overrides, "server.extra_args")
        servers.append((key.removesuffix(".extra_args"), config.server.extra_args, "the eval's checkpoint"))
    seen: set[str] = set()
    for section, extra, checkpoint in servers:
        key = f"{section}.extra_args"
        if key in seen:
            continue
        seen.add(key)
        flags = [(i, t.partition("=")[0]) for i, t in enumerate(extra) if t.startswith("--")]
        names = [flag for _, flag in flags]
        for index, flag in flags:
            owner = next((o for aliases, o in _SERVER_FLAGS.items() if flag in aliases), None)
            twice = names.count(flag) > 1
            if owner is None and not twice:
                continue
            end = (
                index + 1
                if "=" in extra[index] or index + 1 >= len(extra) or extra[index + 1].startswith("--")
                else index + 2
            )
            rest = [*extra[:index], *extra[end:]]
            field = owner.format(server=section, checkpoint=checkpoint) if owner else None
            why = (
                f"t3rl writes {flag} from {field}: SGLang's argparse keeps the last of the two"
                if field
                else f"{flag} is given twice: SGLang's argparse keeps the last"
            )
            yield Problem(
                key,
                f"'{' '.join(extra[index:end])}' in {key}: {why}",
                fix=f"set {list_override(key, rest)}"
                + (f" (then set {field})" if field and "." in field else ""),
            )
            break


def sbatch_options_not_passed_through(ctx: Context) -> Iterator[Problem]:
    """executor.extra_sbatch never repeats an option t3rl writes into the job script."""
    executor = ctx.run.executor
    if not isinstance(executor, SlurmExecutorConfig):
        return
    key = "executor.extra_sbatch"
    for index, option in enumerate(executor.extra_sbatch):
        found = derived_option(option)
        if found is None:
            continue
        name, field = found
        if field and field.startswith("executor.") and not getattr(executor, field.removeprefix("executor.")):
            continue  # t3rl writes this option only when its key is set: the pass-through one is the one
        value = option.partition("=")[2]
        # --exclusive=user|mcs|topo: a sharing mode the boolean key cannot say.
        mode = name == "exclusive" and bool(value)
        rest = [*executor.extra_sbatch[:index], *executor.extra_sbatch[index + 1 :]]
        dropped = list_override(key, rest)
        if mode:
            fix = "set executor.exclusive=false (the option says the sharing mode)"
        elif field and field.startswith("executor.") and (value or name == "exclusive"):
            fix = f"set {field}={quoted(value) if value else 'true'} {dropped}"
        elif field:
            fix = f"set {dropped} (t3rl asks for --{name} from {field}: set that instead)"
        else:
            fix = f"set {dropped} (t3rl names --{name} itself)"
        source = f"from {field}" if field else "itself"
        spelled = option.lstrip("-").partition("=")[0]
        clash = "sbatch keeps the last of the two" if name.startswith(spelled) else "SLURM counts both"
        yield Problem(
            key,
            f"'{option}' in {key}: t3rl writes --{name} into every job script {source}, and {clash}",
            fix=fix,
        )
        return


def started_server_listens_at_its_url(ctx: Context) -> Iterator[Problem]:
    """A server the env starts (`EnvConfig.started_server()`) or a command service listens on the port
    the URL it is called at names: the command's `--port` and the URL say the same thing twice."""
    server = ctx.run.env.started_server()
    if server is not None:
        parts = urlsplit(server.url)
        expected = parts.port or (443 if parts.scheme == "https" else 80)
        url_key = f"env.{server.url_key}"
        moved = parts._replace(netloc=f"{parts.hostname}:{{port}}").geturl()
        yield from _port_agrees(ctx, url_key, expected, moved, f"env.{server.command_key}", server.command)
    for name, service in ctx.run.services.items():
        if service.kind == "command" and service.command:
            port_key = f"services.{name}.port"
            yield from _port_agrees(
                ctx, port_key, service.port, "{port}", f"{port_key[:-5]}.command", service.command
            )


def _port_agrees(
    ctx: Context, url_key: str, expected: int, url_at: str, command_key: str, command: Sequence[str]
) -> Iterator[Problem]:
    """A problem when the command's literal --port is not `expected` (`url_at`: the fixed URL key's
    value, `{port}` standing for the command's port)."""
    tokens = list(command)
    index, port = _port_of(tokens)
    if port is None or port == expected or port == _published_to(tokens, expected):
        return
    key = ctx.latest(url_key, command_key)
    if key == url_key:
        fix = f"set {url_key}={url_at.format(port=port)} (where the command starts the server)"
    else:
        tokens[index] = str(expected) if "=" not in tokens[index] else f"--port={expected}"
        fix = f"set {list_override(command_key, tokens)} (the port it is called at)"
    yield Problem(
        key,
        f"{command_key} starts the server on port {port}, but it is called at port {expected} "
        f"({url_key}): t3rl would wait for a server that never answers there",
        fix=fix,
    )


def _published_to(tokens: list[str], port: int) -> int | None:
    """The container port a `docker run -p HOST:CONTAINER` in the argv publishes at `port` (the
    service's `{port}` standing for it): the command's --port is then the container's."""
    for index, token in enumerate(tokens):
        spec = None
        if token in ("-p", "--publish") and index + 1 < len(tokens):
            spec = tokens[index + 1]
        elif token.startswith(("--publish=", "-p")) and token != "-p":
            spec = token.removeprefix("--publish=").removeprefix("-p")
        if spec is None or ":" not in spec:
            continue
        host, _, inside = spec.split("/")[0].rpartition(":")
        if host.rpartition(":")[2] in (str(port), "{port}") and inside.isdigit():
            return int(inside)
    return None


def _port_of(tokens: list[str]) -> tuple[int, int | None]:
    """(index of the token holding the value, the port) of a `--port N` / `--port=N` in an argv."""
    for index, token in enumerate(tokens):
        value = token.partition("=")[2] if token.startswith("--port=") else None
        if token == "--port" and index + 1 < len(tokens):
            index, value = index + 1, tokens[index + 1]
        if value is not None and value.isdigit():
            return index, int(value)
    return -1, None


# The job environment t3rl derives (launch.plan.slime_args.job_env), → the setting it follows.
# CUDA_DEVICE_MAX_CONNECTIONS has its own rule (Megatron's assertion: launch.checks.rules.topology).
_DERIVED_ENV = {
    "PYTHONPATH": "paths.megatron_root and paths.slime_root (plus t3rl's own package)",
    "PYTORCH_CUDA_ALLOC_CONF": "the SFT mode of a train stage",
    "WANDB_MODE": "tracking.mode",
    "WANDB_DIR": "tracking.dir",
    "TENSORBOARD_DIR": "tracking.dir",
    # Ray hands each worker its GPUs through this variable; a value of the job's own would override it.
    "CUDA_VISIBLE_DEVICES": "the GPUs Ray assigns each worker (hardware.gpus_per_node)",
}


@per_scope
def derived_env_not_overridden(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """A variable of hardware.env_vars that t3rl also writes into the job's environment is refused."""
    for name, value in scope.hardware.env_vars.items():
        if name not in _DERIVED_ENV:
            continue
        key = f"{scope.hw('env_vars')}.{name}"
        follows = _DERIVED_ENV[name]
        # A map assigned on the command line merges into the old one: only deleting the key drops it.
        yield Problem(
            key,
            f"{name}={value} would replace the {name} t3rl writes into the job from {follows}",
            fix=f"delete it: ~{key} (and change {follows.split(' ')[0]} instead)",
        )


@per_scope
def schedule_given_once(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """num_rollout and num_epoch both set: slime keeps num_rollout and ignores num_epoch without a word."""
    cur = scope.curriculum
    if cur is None or cur.num_rollout is None or cur.num_epoch is None:
        return
    rollout, epoch = scope.cur("num_rollout"), scope.cur("num_epoch")
    key = ctx.latest(rollout, epoch)
    dropped = epoch if key == rollout else rollout
    yield Problem(
        key,
        f"num_rollout {cur.num_rollout} and num_epoch {cur.num_epoch} both set the stage's length; slime "
        "keeps num_rollout and ignores num_epoch",
        fix=f"set {dropped}=null (the length is then {key.rsplit('.', 1)[1]}'s)",
    )


@per_scope
def over_sampling_has_a_filter(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Drawing more prompts than a rollout keeps only matters to a dynamic-sampling filter that drops
    groups: without one, slime keeps the first rollout_batch_size groups (a warning)."""
    cur = scope.curriculum
    if cur is None or cur.over_sampling_batch_size in (None, cur.rollout_batch_size):
        return
    if cur.dynamic_sampling_filter is None:
        key = scope.cur("over_sampling_batch_size")
        yield Problem(
            key,
            f"over_sampling_batch_size {cur.over_sampling_batch_size} draws more prompts than the rollout's "
            f"{cur.rollout_batch_size}, but no dynamic_sampling_filter drops any: the extra ones are wasted",
            fix=f"set {key}=null, or a {scope.cur('dynamic_sampling_filter')}",
            severity="warning",
        )


def _value(data: Any, key: str) -> Any:
    for part in key.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


RULES = (
    experiment_values_kept,
    service_urls_not_set_twice,
    one_server_per_env_url,
    server_flags_not_passed_through,
    sbatch_options_not_passed_through,
    started_server_listens_at_its_url,
    derived_env_not_overridden,
    schedule_given_once,
    over_sampling_has_a_filter,
)
