"""An OpenEnv environment's server as a managed service of the stages that play it (services kind
`command`): planned into the stage's script, started healthy, stopped with the stage, and counted on the
resource ledger like any server; the env's own `command` and the service cannot both start one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError
from launch.plan.build import build_plan
from launch.plan.context import PlanContext
from t3rl_core.eval.server import _alive, _healthy
from t3rl_core.services import ServiceSpec, start, stop

APP = "t3rl_core.envs.openenv.counter_example:app"


def _service(port: int) -> str:
    command = f"[{sys.executable},-m,uvicorn,'{APP}',--port,'{{port}}']"
    fields = f"kind: command, command: {command}, port: {port}, env_url_key: url, url_path: ''"
    return f"+services.env_server={{{fields}}}"


def _overrides(port: int) -> list[str]:
    return ["+experiment=hub_env_grpo", "env=openenv", "env.command=null", _service(port)]


def test_a_command_service_is_planned_for_the_stages_that_play_the_env(port: int) -> None:
    run = resolve(_overrides(port)).run
    assert run.services["env_server"].kind == "command"
    plan = build_plan(run, PlanContext(Path("/r"), Path("/b"), "/t", sys.executable, "id", {}))
    for name in ("train", "eval"):
        script = plan.stage(name).script()
        assert "t3rl_core.services start" in script and "t3rl_core.services stop" in script
    assert f"http://127.0.0.1:{port}" in plan.files["/r/runtime/eval.yaml"]


def test_the_env_starting_its_own_server_as_well_is_refused(port: int) -> None:
    overrides = [o for o in _overrides(port) if o != "env.command=null"]
    with pytest.raises(ConfigError) as caught:
        resolve(overrides)
    (problem,) = [p for p in caught.value.problems if p.key == "env.command"]
    assert problem.fix.startswith("set env.command=null")


def test_a_command_service_needs_its_command_and_has_no_model(port: int) -> None:
    with pytest.raises(ConfigError, match="set command"):
        resolve(["+experiment=hub_env_grpo", "env=openenv", "+services.s={kind: command, env_url_key: url}"])


def test_the_service_starts_healthy_and_stops(port: int, tmp_path: Path) -> None:
    spec = ServiceSpec(
        name="env_server",
        kind="command",
        command=[sys.executable, "-m", "uvicorn", APP, "--port", "{port}"],
        port=port,
        startup_timeout_s=120,
        pid_file=str(tmp_path / "env_server.pid"),
        log_file=str(tmp_path / "env_server.log"),
    )
    start(spec, owner=None)
    try:
        assert _healthy(spec.url)
        pid = int(Path(spec.pid_file).read_text())
    finally:
        stop(spec)
    assert not _alive(pid)
