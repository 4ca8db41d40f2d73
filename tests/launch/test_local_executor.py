"""Local executor: live logs, its own Ray head, and nothing left running after Ctrl-C or a failure."""

from __future__ import annotations

import io
import json
import signal
import threading
import time
from pathlib import Path

import pytest
from pipeline_helpers import alive

from launch.checks.rules import kinds
from launch.config.schema import LocalExecutorConfig
from launch.plan.build import Plan
from launch.plan.stages import Stage
from launch.run.executors.local import LocalExecutor, ray_temp_dir
from launch.run.pipeline import run_pipeline
from launch.run.rundir import RunDir


def _wait_for(path: Path, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists() or not path.read_text().strip():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def _run(tmp_path: Path, script: str, *, grace: float = 2.0, out: io.StringIO | None = None, **stage_fields):
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    plan = Plan("t", run_dir, (Stage("s", "prepare_data", (script,), **stage_fields),))
    executor = LocalExecutor(
        LocalExecutorConfig(stop_grace_s=grace), out=out or io.StringIO(), **_ray(tmp_path)
    )
    return run_dir, run_pipeline(plan, RunDir(run_dir), executor)


def _ray(tmp_path: Path) -> dict[str, str]:
    """A fake `ray` that records its arguments (the real one needs minutes and a GPU-less cluster)."""
    fake = tmp_path / "ray"
    fake.write_text(f'#!/usr/bin/env bash\necho "$@" >> {tmp_path}/ray.calls\necho "fake ray $1"\n')
    fake.chmod(0o755)
    return {"ray_bin": str(fake)}


def _status(run_dir: Path) -> dict:
    return json.loads((run_dir / "state.json").read_text())["stages"]["s"]


def test_output_goes_live_to_the_terminal_and_to_the_log(tmp_path):
    out = io.StringIO()
    run_dir, result = _run(tmp_path, "echo hello from the stage; echo to stderr >&2", out=out)
    assert result.status == "succeeded"
    assert "hello from the stage" in out.getvalue() and "to stderr" in out.getvalue()
    log = (run_dir / "stages" / "s" / "log.txt").read_text()
    assert "hello from the stage" in log and "to stderr" in log


def test_secrets_in_the_output_are_masked(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", "sk-secret-value-123")
    out = io.StringIO()
    run_dir, _ = _run(tmp_path, 'echo "key is $WANDB_API_KEY"', out=out)
    log = (run_dir / "stages" / "s" / "log.txt").read_text()
    assert "sk-secret-value-123" not in log and "sk-secret-value-123" not in out.getvalue()
    assert "key is ***" in log


def test_failing_command_stops_its_children_and_is_recorded_failed(tmp_path):
    pid_file = tmp_path / "child.pid"
    run_dir, result = _run(tmp_path, f"sleep 60 &\necho $! > {pid_file}\nexit 7")
    assert result.status == "failed"
    assert result.results["s"].returncode == 7
    assert not alive(int(pid_file.read_text()))
    assert _status(run_dir)["status"] == "failed" and _status(run_dir)["returncode"] == 7


def test_children_that_ignore_sigterm_are_killed_after_the_grace_period(tmp_path):
    pid_file = tmp_path / "child.pid"
    # The child writes its pid once it ignores SIGTERM, and the stage ends only then (a fixed 0.2 s let a
    # child still starting die of the SIGTERM, which tested nothing of the grace period).
    child = f"bash -c 'trap \"\" TERM; echo $$ > {pid_file}; sleep 60' &"
    script = f"{child}\nfor _ in $(seq 2400); do [ -s {pid_file} ] && break; sleep 0.05; done\nexit 1"
    started = time.monotonic()
    _, result = _run(tmp_path, script, grace=0.5)
    assert result.status == "failed"
    assert not alive(int(pid_file.read_text()))
    # Killed, not waited for: its sleep would have ended at 60 s. Not a measure of speed: the test takes
    # under a second here, and a bound of 10 s failed a starved process whose process-table scans were slow.
    assert time.monotonic() - started < 50


def test_ctrl_c_stops_the_stage_and_its_children_and_records_stopped(tmp_path):
    pid_file = tmp_path / "child.pid"
    script = f"sleep 60 &\necho $! > {pid_file}\nwait"
    main = threading.main_thread().ident
    assert main is not None

    def interrupt() -> None:
        _wait_for(pid_file)
        signal.pthread_kill(main, signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, script)
    child = int(pid_file.read_text())
    assert not alive(child)
    record = _status(tmp_path / "run")
    assert record["status"] == "stopped"
    assert "stopped by the user" in (tmp_path / "run" / "stages" / "s" / "log.txt").read_text()


def test_ray_head_is_started_for_the_stage_and_stopped_even_when_it_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(kinds, "visible_cuda_gpus", lambda: 8)  # the stage's GPUs, as on a GPU machine
    _, result = _run(tmp_path, "exit 1", needs_ray_head=True, gpus=8)
    assert result.status == "failed"
    calls = (tmp_path / "ray.calls").read_text().splitlines()
    # Stopped as the stage's processes are (its execution id): `ray stop` stops every head of the machine.
    temp = ray_temp_dir(tmp_path / "run" / "stages" / "s")
    assert calls == [
        f"start --head --port 6379 --dashboard-port 8265 --num-gpus 8 --temp-dir {temp} --disable-usage-stats"
    ]


def test_no_ray_head_for_stages_that_do_not_need_one(tmp_path):
    _run(tmp_path, "true")
    assert not (tmp_path / "ray.calls").exists()


def test_ctrl_c_as_the_stage_starts_still_stops_it(tmp_path, monkeypatch):
    """A Ctrl-C that lands between the stage's start and the executor's watch over it (the instant after
    Popen returns: seconds on a busy machine) stops the stage too; it was left running."""
    import launch.run.executors.local as local
    from launch.run.executors.local import _groups_of_run

    class InterruptedAtOnce:  # the reader thread's creation: the first step after Popen returned
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise KeyboardInterrupt

    monkeypatch.setattr(local, "threading", type("Threading", (), {"Thread": InterruptedAtOnce}))
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, "sleep 60")
    record = _status(tmp_path / "run")
    assert record["status"] == "stopped"
    assert _groups_of_run(record["run_id"]) == [], "the stage outlived the Ctrl-C"
