"""Managed services of a stage (e.g. tau2's LLM customer, an OpenEnv environment's server): an SGLang
server, or any HTTP server a command starts, started before the stage's commands, healthy before they
run, stopped when the stage ends however it ends.

    python -m t3rl_core.services start --config SERVICE.yaml   # returns once /health answers
    python -m t3rl_core.services stop --config SERVICE.yaml    # idempotent

A stage's command.sh runs `start`, then `trap '… stop …' EXIT`, then its own commands. The server runs
in its own session (SGLang forks workers), so `stop` signals its whole process group: SIGTERM, then
SIGKILL after the grace period. `start` first stops a server a killed earlier attempt left behind
(its pid file), refuses a port something else holds (a health check would pass against it), and on a
failed start stops what it began and prints the end of the server's log.

A trap does not run when the shell is SIGKILLed, so the server is not left to the trap alone: `start`
leaves a keeper process (`keep`) that owns the server and stops it as soon as the stage's shell is
gone (polled every 0.2 s) or the keeper is signalled; if the keeper itself is SIGKILLed, the kernel
SIGKILLs the server (PR_SET_PDEATHSIG, t3rl_core.lifetime).
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from pydantic import Field

from t3rl_core.eval.server import ServerStartError, _alive, _healthy, _port_in_use, stop_group
from t3rl_core.fields import (
    Argv,
    Delay,
    LocalPath,
    PathComponent,
)
from t3rl_core.secret import log_tail
from t3rl_core.secret_env import environment_for_untrusted
from t3rl_core.secret_launch import argv_for
from t3rl_core.service_fields import ServiceFields
from t3rl_core.yaml_text import safe_load

SGLANG_LAUNCH = ("python3", "-m", "sglang.launch_server")


class ServiceSpec(ServiceFields):
    """One running service as a stage's command.sh starts it (written by the plan from the run's
    `services.<name>`, whose fields it shares)."""

    name: PathComponent
    stop_grace_s: Delay = 20.0
    # argv prefix that starts the server (the default is SGLang's; tests use a stand-in).
    launch: Argv = Field(default_factory=lambda: list(SGLANG_LAUNCH))
    pid_file: LocalPath
    log_file: LocalPath

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def argv(self) -> list[str]:
        if self.kind == "command":
            assert self.command is not None, "a command service names its command"
            return [token.format(host=self.host, port=self.port) for token in self.command]
        assert self.model_path is not None, "an SGLang service names its model"
        return [
            *self.launch,
            "--model-path", self.model_path,
            "--tp", str(self.tp),
            "--host", self.host,
            "--port", str(self.port),
            *self.extra_args,
        ]  # fmt: skip


def start(spec: ServiceSpec, owner: int | None = None) -> None:
    """Start the server and wait until it is healthy (ServerStartError otherwise, nothing left running).
    It lives until `stop`, or until the `owner` process (default: the caller's parent, i.e. the
    stage's shell) ends, however it ends: a keeper process watches both (see `keep`)."""
    stop(spec)  # a server an earlier, killed attempt of this stage left behind
    if _port_in_use(spec.host, spec.port):
        raise ServerStartError(f"{spec.name}: port {spec.port} on {spec.host} is already in use")
    Path(spec.log_file).parent.mkdir(parents=True, exist_ok=True)
    keeper_argv = [sys.executable, "-m", "t3rl_core.services", "keep", "--spec", spec.model_dump_json()]
    keeper_argv += ["--owner", str(owner if owner is not None else os.getppid())]
    with open(spec.log_file, "ab") as log:
        keeper = subprocess.Popen(keeper_argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + spec.startup_timeout_s
    try:
        while not (Path(spec.pid_file).exists() and _healthy(spec.url, path=spec.health_path)):
            if keeper.poll() is not None:
                raise ServerStartError(f"{spec.name} exited with code {keeper.returncode} before /health")
            if time.monotonic() > deadline:
                where = f"{spec.url}{spec.health_path}"
                raise ServerStartError(
                    f"{spec.name} not healthy at {where} in {spec.startup_timeout_s:.0f} s"
                )
            time.sleep(0.2)
    except BaseException as err:
        stop(spec)
        keeper.kill()
        keeper.wait()
        tail = log_tail(Path(spec.log_file).read_text(errors="replace"))
        raise ServerStartError(f"{err}; last lines of {spec.log_file}:\n{tail}") from None


class _Stopped(Exception):
    """The keeper was asked to stop (SIGTERM, SIGINT, SIGHUP)."""


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    raise _Stopped


def keep(spec: ServiceSpec, owner: int) -> int:
    """Run the server until it exits, `owner` ends or this keeper is signalled; then stop it.

    The server runs in its own session (SGLang forks workers; `stop` signals the whole group) and, on
    Linux, is SIGKILLed by the kernel if this keeper dies first (PR_SET_PDEATHSIG), so nothing outlives
    the stage even when the stage's shell and this keeper are both SIGKILLed. Returns the server's exit
    code, or 0 when the keeper stopped it."""
    from t3rl_core.lifetime import die_with_parent

    # A command service (an environment's server) runs what the model asks for: it gets no credential
    # but those its own command reads by reference.
    env = dict(os.environ)
    if spec.kind == "command":
        env = environment_for_untrusted(spec.argv(), env)
    if spec.gpus:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, spec.gpus))
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _raise_stopped)
    server: subprocess.Popen[bytes] | None = None
    stopped = False
    try:
        with open(spec.log_file, "ab") as log:
            server = subprocess.Popen(
                # Flags given by reference (extra_args: --api-key env:NAME) are revealed by the server's
                # own process, which masks them in its output: neither its argv nor this log holds them.
                argv_for(spec.argv()),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
                preexec_fn=functools.partial(die_with_parent, os.getpid()),
            )
        Path(spec.pid_file).write_text(str(server.pid))
        while server.poll() is None and _alive(owner):
            time.sleep(0.2)
    except _Stopped:
        pass
    finally:
        if server is not None and server.poll() is None:
            stopped = stop(spec)
    return 0 if stopped or server is None else server.returncode


def stop(spec: ServiceSpec) -> bool:
    """Stop the server of the pid file, if any (True when one was running)."""
    path = Path(spec.pid_file)
    try:
        pid = int(path.read_text().strip())
    except (OSError, ValueError):
        return False
    running = _alive(pid)
    # The whole group, until each of its processes has ended (children whose leader exited first too):
    # the server's port and GPUs are free only then.
    stop_group(pid, spec.stop_grace_s if running else 0.0)
    path.unlink(missing_ok=True)
    return running


def main(argv: Sequence[str] | None = None) -> int:
    cli = argparse.ArgumentParser(prog="python -m t3rl_core.services", description=__doc__.split("\n\n")[0])
    cli.add_argument("action", choices=["start", "stop", "keep"])
    cli.add_argument("--config", type=Path, help="the service's YAML (written by the plan)")
    cli.add_argument("--spec", help=argparse.SUPPRESS)  # keep: the spec as JSON (start passes it)
    cli.add_argument("--owner", type=int, help=argparse.SUPPRESS)  # keep: the process it dies with
    args = cli.parse_args(argv)
    if args.action == "keep":
        return keep(ServiceSpec.model_validate_json(args.spec), args.owner)
    if args.config is None:
        cli.error("--config is required")
    spec = ServiceSpec.model_validate(safe_load(args.config.read_text()))
    if args.action == "stop":
        was = stop(spec)
        print(f"{spec.name}: {'stopped' if was else 'not running'}", file=sys.stderr)
        return 0
    try:
        start(spec)
    except ServerStartError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"{spec.name}: healthy at {spec.url}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
