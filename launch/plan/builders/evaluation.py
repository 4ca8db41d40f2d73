"""eval stages: `python -m t3rl_core.eval` on the base model or a converted checkpoint."""

from __future__ import annotations

import shlex

from launch.config.errors import ConfigError
from launch.config.model_size import data_parallel, server_tp
from launch.config.schema import ConvertTorchDistToHfStage, EvalStage
from launch.config.server_options import server_argv_problems
from launch.plan.anchored_paths import anchored
from launch.plan.builders.builder import PlanBuilder, problem
from launch.plan.stages import FILE, Command, Stage, render_command
from t3rl_core.eval.config import ServerConfig
from t3rl_core.eval.server import SERVER_LOG, launch_argv
from t3rl_core.secret import Secret
from t3rl_core.secret_launch import argv_for, split
from t3rl_core.yaml_text import safe_dump


def evaluate(builder: PlanBuilder, name: str, spec: EvalStage) -> Stage:
    config = builder.eval_config(name, spec)
    inputs, hf = builder.hf_source()
    curriculum = builder.first_curriculum()
    if spec.checkpoint is not None:
        source = builder.stages.get(spec.checkpoint)
        if source is None or source.kind != "convert_torch_dist_to_hf":
            raise problem(
                f"stages.{name}.checkpoint",
                f"'{spec.checkpoint}' is not an earlier convert_torch_dist_to_hf stage",
                "name the conversion stage of the checkpoint",
            )
        inputs = {"checkpoint": builder.ref(spec.checkpoint, "hf")}
        hf = builder.path(inputs["checkpoint"])
        trained = builder.specs[spec.checkpoint]
        assert isinstance(trained, ConvertTorchDistToHfStage)
        curriculum = builder.curriculum_of(trained.source)
    inputs["data"] = builder.data_ref(name, config.split)
    stage_dir = builder.stage_dir(name)
    runtime = builder.write_runtime(name, builder.runtime_config(hf, curriculum, for_eval=True))
    anchored_config = anchored(config, builder.ctx.base_dir)  # the stage runs elsewhere than the launcher
    eval_yaml = (
        safe_dump(anchored_config.model_dump(mode="json"), sort_keys=False) if builder.ctx.texts else ""
    )
    eval_file = builder.add_file(builder.runtime_file(name, ".eval"), eval_yaml)
    cmd = [
        builder.cluster_python(),
        "-m",
        "t3rl_core.eval",
        "--runtime-config",
        runtime,
        "--eval-config",
        eval_file,
        "--data",
        builder.path(inputs["data"]),
        "--out",
        stage_dir,
        "--resume",
        "--no-progress",
    ]
    gpus = 0
    engine = config.engine
    commands: tuple[Command, ...] = (tuple(cmd),)
    requires: dict[str, str] = {}
    requires_env: dict[str, str] = {}
    if engine.name == "sglang" and getattr(engine, "url", None) is None:
        gpus = server_tp(builder.run.model.architecture, builder.run.hardware, config.server.tp)
        where = "server" in spec.eval and "extra_args" in spec.eval["server"]
        key = f"stages.{name}.eval.server.extra_args" if where else "eval.server.extra_args"
        hardware = builder.run.hardware
        problems = server_argv_problems(
            config.server.extra_args,
            key,
            tp=gpus,
            gpus=hardware.node_gpus or hardware.gpus_per_node,
            context_length=builder.run.model.context_length,
        )
        if problems:
            raise ConfigError(problems)
        commands = _with_server(builder, cmd, hf, gpus, config.server, stage_dir)
        for flag, reference in split(_server_argv(builder, hf, gpus, config.server))[1]:
            secret = Secret(reference)
            what = (
                f"eval.server.api_key={secret}, the key of its SGLang server"
                if (flag, secret) == ("--api-key", config.server.api_key)
                else f"{flag} {secret} of its SGLang server (eval.server.extra_args)"
            )
            if secret.kind == "env":
                requires_env[secret.target] = f"{what}: export it"
            else:
                requires[secret.target] = f"{what}: the file holding it"
    if engine.name == "hf" and getattr(engine, "model_path", None):
        model = builder.abs(engine.model_path)  # type: ignore[attr-defined]
        requires[f"{model}/config.json"] = f"the HF model stages.{name}.eval.engine.model_path names"
    outputs = {
        "dir": stage_dir,
        "summary": f"{stage_dir}/summary.json",
        "report": f"{stage_dir}/report.md",
    }
    what = spec.checkpoint or "base model"
    env, imports, notes = builder.local_plugin_env(
        {
            "env": builder.run.env,
            "reward": builder.run.reward,
            "model.chat": builder.run.model.chat,
            f"stages.{name}.eval": config,
        }
    )
    return Stage(
        name,
        "eval",
        commands,
        inputs=inputs,
        outputs=outputs,
        # Each data-parallel replica of the server holds `gpus` (its TP) GPUs.
        gpus=gpus * data_parallel(config.server.extra_args),
        # An eval of no episode is refused before it starts: each record holds at least one line.
        verify=dict.fromkeys(
            (outputs["summary"], f"{stage_dir}/trajectories.jsonl", outputs["report"]), FILE
        ),
        summary=f"{engine.name} eval of {what} on {config.split}",
        env=env,
        imports=imports,
        notes=notes,
        requires=requires,
        requires_env=requires_env,
    )


def _server_argv(builder: PlanBuilder, hf: str, tp: int, server: ServerConfig) -> list[str]:
    """`python -m sglang.launch_server …` of the eval's server; its key and any flag of extra_args
    given by reference (env:NAME, file:PATH) stay references (t3rl_core.secret_launch reveals them)."""
    parsers = builder.run.model.parsers
    argv = launch_argv(
        hf,
        tp=tp,
        tool_call_parser=parsers.tool_call_parser,
        # With think_tags the server's parser would split on its own tags; t3rl parses /generate text itself.
        reasoning_parser=None if parsers.think_tags else parsers.reasoning_parser,
        config=server,
        launch=(builder.cluster_python(), "-m", "sglang.launch_server"),
    )
    return argv if server.api_key is None else [*argv, "--api-key", str(server.api_key)]


def _with_server(
    builder: PlanBuilder, cmd: list[str], hf: str, tp: int, server: ServerConfig, stage_dir: str
) -> tuple[Command, ...]:
    """The stage's script starts the SGLang server itself (so plan.sh shows its exact argv, and the
    stage runs by hand as written), stops it whenever the script exits (the trap; a SIGKILLed script
    runs no trap, so the server also carries a parent-death signal), and hands its pid to the eval,
    which waits for /health and fails at once if the server dies first. A credential the server takes
    is read by the server's own process (t3rl_core.secret_launch), which also masks it in its output
    (SGLang logs its arguments): no command line, file or log holds it."""
    python = builder.cluster_python()
    # Through t3rl_core.lifetime: the server dies with this script even if the script is SIGKILLed.
    # The shell that starts the wrapper names itself: a shell killed while the wrapper's interpreter
    # starts is no longer its parent by the time the wrapper could ask. $BASHPID, read in that shell:
    # "$$" names the outermost shell (plan.sh's, not its ( … ) stage's, which the wrapper then took for
    # a dead parent and killed itself), and either read in the `… &` line is read by the forked child.
    wrapper = render_command((python, "-m", "t3rl_core.lifetime")) + ' --parent "$server_parent" \\\n    '
    launch = ("--", *argv_for(_server_argv(builder, hf, tp, server)))
    log = shlex.quote(f"{stage_dir}/{SERVER_LOG}")
    url = f"http://{server.host}:{server.port}"
    key_guard = _key_guard(server.api_key) if server.api_key is not None else ()
    return (
        "# The SGLang server of this eval, in the background; stopped whenever this script exits.",
        f"mkdir -p {shlex.quote(stage_dir)}",
        *key_guard,
        "server_parent=$BASHPID",
        wrapper + render_command(launch) + f" \\\n    >>{log} 2>&1 &",
        "server_pid=$!",
        'trap \'kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true\' EXIT',
        render_command((*cmd, "--url", url)) + ' \\\n    --server-pid "$server_pid"',
    )


def _key_guard(key: Secret) -> tuple[Command, ...]:
    """Stop the script before the server starts when its key is unset or empty where the stage runs:
    SGLang takes an empty --api-key as no key, and would answer anyone."""
    what = f"eval.server.api_key ({key})"
    if key.kind == "env":
        return (f': "${{{key.target}:?{what}: export {key.target} where this stage runs}}"',)
    path = shlex.quote(key.target)
    message = shlex.quote(f"{what}: {key.target} is missing, unreadable or empty")
    return (f"[ -r {path} ] && [ -s {path} ] || {{ echo {message} >&2; exit 1; }}",)
