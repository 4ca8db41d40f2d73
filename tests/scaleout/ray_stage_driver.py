"""Runs the two-stage test plan with executor=ray in its own process (a test kills or interrupts it)."""

from __future__ import annotations

import sys
from pathlib import Path

from launch.config.schema import RayExecutorConfig
from launch.run.executors.ray_jobs import RayExecutor
from launch.run.pipeline import run_pipeline
from launch.run.rundir import RunDir

sys.path.insert(0, str(Path(__file__).parent))
from ray_plans import two_stage_plan

if __name__ == "__main__":
    address, run_dir, lines = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    plan = two_stage_plan(run_dir, lines=lines)
    result = run_pipeline(
        plan, RunDir(run_dir), RayExecutor(RayExecutorConfig(address=address, stop_grace_s=20))
    )
    print("pipeline:", result.status, flush=True)
