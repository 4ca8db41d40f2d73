"""`t3rl run -m` with points at once (executor.max_parallel), Ctrl-C, and `--run-dir <sweep dir>` resume,
end to end through the CLI with a one-stage CPU experiment (BFCL data preparation)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_cli_run import EXPERIMENT, invoke

from tests.support.gated_python import gated_python, preparing

pytestmark = pytest.mark.slow


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    # A cache of its own: the points must really prepare their data (seconds), not link a copy.
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("T3RL_RUNS_DIR", "T3RL_CHECKPOINTS_DIR", "T3RL_MODELS_DIR", "WANDB_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _conf(workdir: Path) -> Path:
    conf = workdir / "myconf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "cli_data_only.yaml").write_text(EXPERIMENT)
    return workdir / "myconf"


def _points(workdir: Path) -> tuple[Path, list[dict]]:
    (sweep,) = (workdir / "runs" / "cli_data_only").iterdir()
    return sweep, json.loads((sweep / "sweep.json").read_text())["points"]


def _handle(run_dir: Path) -> dict:
    """The recorded handle of a point's prepare_data stage ({} before there is one)."""
    state = run_dir / "state.json"
    if not state.exists():
        return {}
    return json.loads(state.read_text())["stages"].get("prepare_data", {}).get("handle") or {}


def test_points_run_at_once_each_with_its_own_launcher_log(workdir: Path) -> None:
    conf = _conf(workdir)
    result = invoke(
        "run", "-m", "+experiment=cli_data_only", "env.data.seed=1,2", "executor.max_parallel=2",
        "--config-dir", str(conf),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    sweep, points = _points(workdir)
    assert [p["status"] for p in points] == ["succeeded", "succeeded"]
    assert all(p["started_at"] and p["finished_at"] for p in points)
    for p in points:
        assert "done" in (Path(p["run_dir"]) / "launcher.log").read_text()
    # Not a terminal: plain lines per change, then the final table.
    assert "point 0 (env.data.seed=1): running prepare_data" in result.output
    assert "2 at a time" in result.output and "(2/2 ok)" in result.output
    assert "| stage | job |" in (sweep / "sweep.md").read_text()


def test_ctrl_c_stops_every_point_prints_the_resume_command_and_the_sweep_resumes(workdir: Path) -> None:
    conf = _conf(workdir)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # Each point's data preparation blocks until the gate opens (after the Ctrl-C): a preparation of a
    # second or two could end before the Ctrl-C on a busy machine.
    python = gated_python(workdir / "interpreter")
    launcher = subprocess.Popen(
        [sys.executable, "-m", "launch", "run", "-m", "+experiment=cli_data_only", "env.data.seed=1,2",
         "executor.max_parallel=2", "--config-dir", str(conf), f"paths.cluster_python={python}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 120  # a failure guard: three launchers, their checks, two stages' start
    try:
        # Both preparations run, and each point's launcher recorded its stage's process group.
        while True:
            assert time.monotonic() < deadline and launcher.poll() is None
            runs = workdir / "runs" / "cli_data_only"
            if runs.exists() and list(runs.iterdir()) and preparing(python.parent) == 2:
                sweep, points = _points(workdir)
                if all(p["run_dir"] and _handle(Path(p["run_dir"])) for p in points):
                    break
            time.sleep(0.05)
        launcher.send_signal(signal.SIGINT)
        output, _ = launcher.communicate(timeout=60)
    finally:
        launcher.kill()
    assert launcher.returncode == 130, output
    assert f"resume the sweep with: t3rl run --run-dir {sweep}" in output
    _, points = _points(workdir)
    assert [p["status"] for p in points] == ["interrupted", "interrupted"]
    for p in points:
        state = json.loads((Path(p["run_dir"]) / "state.json").read_text())
        assert state["stages"]["prepare_data"]["status"] == "stopped"

    (python.parent / "gate").touch()
    resumed = invoke("run", "--run-dir", str(sweep))
    assert resumed.exit_code == 0, resumed.output
    assert "resuming 2 point(s)" in resumed.output
    _, points = _points(workdir)
    assert [p["status"] for p in points] == ["succeeded", "succeeded"]
    # A finished sweep has nothing left to resume; overrides are refused (each point keeps its own).
    again = invoke("run", "--run-dir", str(sweep))
    assert again.exit_code == 0 and "nothing to resume" in again.output
    refused = invoke("run", "--run-dir", str(sweep), "env.data.seed=3")
    assert refused.exit_code == 1 and "its points resume with their own overrides" in refused.output


def test_points_at_once_record_why_each_failed(workdir: Path) -> None:
    # Each point's data preparation fails (its interpreter exits 3 there, and runs the pre-flight's probes);
    # the sweep records each point's words. (A --only stage no stage of a new point feeds, the cause here
    # before, is refused before the sweep starts since hunt wave 9.)
    conf = _conf(workdir)
    python = workdir / "failing-python"
    python.write_text(
        '#!/bin/bash\n[[ "$1 $2" == "-m t3rl_core.data" ]] && exit 3\n'
        f'exec {shlex.quote(sys.executable)} "$@"\n'
    )
    python.chmod(0o755)
    result = invoke(
        "run", "-m", "+experiment=cli_data_only", "env.data.seed=1,2", "executor.max_parallel=2",
        "--config-dir", str(conf), f"paths.cluster_python={python}",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    (sweep_json,) = (workdir / "runs").rglob("sweep.json")
    points = json.loads(sweep_json.read_text())["points"]
    assert [p["status"] for p in points] == ["failed", "failed"]
    assert all(p["error"].startswith("stage prepare_data: exit code 3;") for p in points), points
    assert "resume the rest with: t3rl run --run-dir" in result.output
