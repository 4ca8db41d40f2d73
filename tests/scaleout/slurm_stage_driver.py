"""Runs the two-stage test plan with executor=slurm (fake SLURM on PATH) in its own process."""

from __future__ import annotations

import sys
from pathlib import Path

from launch.run.executors.slurm import SlurmExecutor
from launch.run.pipeline import run_pipeline
from launch.run.rundir import RunDir

sys.path.insert(0, str(Path(__file__).parent))
from ray_plans import two_stage_plan

if __name__ == "__main__":
    run_dir = Path(sys.argv[1])
    executor = SlurmExecutor()
    executor.poll_s = 0.2
    result = run_pipeline(two_stage_plan(run_dir, gpus=16, nodes=2), RunDir(run_dir), executor)
    print("pipeline:", result.status, flush=True)
