"""Managed services: tau2's LLM customer as an SGLang server a stage starts, health-checks, hands to the
env by URL and stops when the stage ends (however it ends); planned for train and eval stages, run for
real with a stand-in server."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError
from launch.config.schema import ServiceConfig
from launch.plan.build import PlanContext, build_plan
from launch.plan.services import wrap
from launch.plan.stages import Stage, render_command
from tests.support.tiny_stack import free_port

FAKE = str(Path(__file__).resolve().parents[1] / "support" / "fake_sglang.py")
CTX = PlanContext(Path("/RUN"), Path("/BASE"), "/T3RL", "/venv/bin/python", "svc", {})
USER_SIM = [
    "+services.user_sim.model_path=/models/Qwen3-4B-Instruct-2507",
    "+services.user_sim.tp=2",
    "+services.user_sim.gpus=[6,7]",
    "hardware.gpus_per_node=4",  # training on GPUs 0-3 leaves the service its own GPUs
]


def test_tau2_stages_start_the_user_model_and_the_env_gets_its_url() -> None:
    plan = build_plan(resolve(["+experiment=tau2_pipeline", *USER_SIM]).run, CTX)
    users = [s for s in plan.stages if s.kind in ("train", "eval")]
    assert users and all("user_sim" in s.summary for s in users)
    for stage in users:
        start, trap = stage.commands[:2]
        config = f"/RUN/runtime/{stage.name}.user_sim.service.yaml"
        assert start == f"/venv/bin/python -m t3rl_core.services start --config {config}"
        assert trap.startswith("trap ") and trap.endswith(" EXIT") and " stop " in trap
        service = yaml.safe_load(plan.files[f"/RUN/runtime/{stage.name}.user_sim.service.yaml"])
        assert (service["tp"], service["gpus"], service["port"]) == (2, [6, 7], 30001)
        assert service["launch"] == ["/venv/bin/python", "-m", "sglang.launch_server"]
        runtime = yaml.safe_load(plan.files[f"/RUN/runtime/{stage.name}.yaml"])["t3rl"]
        assert runtime["env"]["user"]["base_url"] == "http://127.0.0.1:30001/v1"
    others = [s for s in plan.stages if s.kind not in ("train", "eval")]
    assert all("t3rl_core.services" not in render_command(c) for s in others for c in s.commands)


@pytest.mark.parametrize(
    ("extra", "key", "words"),
    [
        (["+services.user_sim.stages=[grpo,evl]"], "services.user_sim.stages", "no stage named 'evl'"),
        (["+services.user_sim.gpus=[6]"], "services.user_sim.gpus", "1 GPUs for a server with tp 2"),
        (["+services.user_sim.gpus=[8,9]"], "services.user_sim.gpus", "do not exist on a 8-GPU node"),
    ],
)
def test_bad_services_are_config_errors(extra: list[str], key: str, words: str) -> None:
    base = [o for o in USER_SIM if not any(o.split("=")[0] == e.split("=")[0] for e in extra)]
    with pytest.raises(ConfigError) as caught:
        resolve(["+experiment=tau2_pipeline", *base, *extra])
    assert any(p.key == key and words in p.message for p in caught.value.problems), caught.value


def test_a_url_key_the_env_lacks_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"has no key 'user\.base_url'"):
        resolve(["+experiment=stage1_bfcl", "+services.judge.model_path=/m"])


def _run_stage(tmp_path: Path, commands: tuple, *fake: str, port: int | None = None) -> tuple[int, Path, int]:
    """Wrap `commands` with a stand-in user-model server and run them with bash, as command.sh does."""
    port = port or free_port()
    service = ServiceConfig(
        model_path="/m", port=port, launch=[sys.executable, FAKE, *fake], startup_timeout_s=120
    )
    stage = wrap(Stage("s", "train", commands), [("user_sim", service)], sys.executable, str(tmp_path))
    for path, text in stage.files.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    (tmp_path / "stages" / "s").mkdir(parents=True, exist_ok=True)
    script = "set -euo pipefail\n" + "\n".join(render_command(c) for c in stage.commands) + "\n"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    # Failure guards (a whole stage: a keeper, a stand-in server, the stage's commands): starved (nice 19
    # beside busy cores) the stage took 50 s of the 60 this bound was.
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=300)
    return done.returncode, tmp_path / "stages" / "s", port


def _gone(pid: int) -> bool:
    """Whether `pid` ended (a zombie counts) within 60 s, a failure guard. Its /proc entry is read alone: a
    process seen alive by kill(pid, 0) could be reaped before its stat was read (FileNotFoundError)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.1)
    return False


def test_the_server_is_healthy_while_the_stage_runs_and_stopped_after_it_fails(tmp_path: Path) -> None:
    child, port = tmp_path / "child.pid", free_port()
    health = f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{port}/health')"
    commands = (f'{sys.executable} -c "{health}"', "echo ran > " + str(tmp_path / "ran"), "exit 3")
    code, stage_dir, _ = _run_stage(tmp_path, commands, "--fake-child-pid", str(child), port=port)
    assert code == 3 and (tmp_path / "ran").exists()  # healthy during the stage; its own exit code
    assert not (stage_dir / "user_sim.pid").exists()
    assert _gone(int(child.read_text()))  # the server's forked worker is stopped too
    assert "fake sglang starting" in (stage_dir / "user_sim.log").read_text()


def test_a_server_that_cannot_start_stops_the_stage_before_its_commands(tmp_path: Path) -> None:
    code, stage_dir, _ = _run_stage(tmp_path, ("echo ran > " + str(tmp_path / "ran"),), "--fake-exit", "1")
    assert code != 0 and not (tmp_path / "ran").exists()
    assert not (stage_dir / "user_sim.pid").exists()


# Fields both declare on purpose: the run's GPU list is refused repeated by the GPU ledger (whose fix knows
# the free GPUs), and the run's launch prefix None is the cluster's python, which the plan writes out.
OWN_IN_EACH = {"gpus", "launch"}


def test_a_setting_of_a_service_and_of_its_spec_is_declared_once() -> None:
    """The run's `services.<name>` and the spec a stage starts the server from share each field they both
    have (its domain and default) from one class, rather than each typing it again."""
    from t3rl_core.services import ServiceSpec

    def declared_in(model: type, name: str) -> type:
        return next(c for c in model.__mro__ if name in inspect.get_annotations(c))

    shared = (set(ServiceConfig.model_fields) & set(ServiceSpec.model_fields)) - OWN_IN_EACH
    assert {"port", "host", "startup_timeout_s", "tp", "health_path"} <= shared
    twice = sorted(n for n in shared if declared_in(ServiceConfig, n) is not declared_in(ServiceSpec, n))
    assert twice == []
