"""One sweep point's launcher for the parallel-sweep tests: the two-stage test plan in `run_dir` with
executor=ray or executor=slurm, exiting as `t3rl run` does (0 done, 1 failed, 130 stopped).

    sweep_point_driver.py ray ADDRESS RUN_DIR LINES EXIT_CODE [BARRIER]
    sweep_point_driver.py slurm - RUN_DIR LINES EXIT_CODE

BARRIER (DIR:COUNT): the train job waits for COUNT jobs to start (tests/scaleout/ray_plans.TRAIN_CODE).
"""

from __future__ import annotations

import sys
from pathlib import Path

from launch.run.executors.base import Executor
from launch.run.pipeline import run_pipeline
from launch.run.rundir import RunDir

sys.path.insert(0, str(Path(__file__).parent))
from ray_plans import two_stage_plan


def _executor(kind: str, address: str) -> Executor:
    if kind == "ray":
        from launch.config.schema import RayExecutorConfig
        from launch.run.executors.ray_jobs import RayExecutor

        return RayExecutor(RayExecutorConfig(address=address, stop_grace_s=20))
    from launch.run.executors.slurm import SlurmExecutor

    executor = SlurmExecutor()
    executor.poll_s = 0.2
    return executor


if __name__ == "__main__":
    kind, address, run_dir, lines, code = sys.argv[1:6]
    train: dict[str, object] = {"lines": int(lines), "exit_code": int(code)}
    if len(sys.argv) > 6:
        train["barrier"] = sys.argv[6]
    if kind == "slurm":
        train |= {"gpus": 16, "nodes": 2}
    plan = two_stage_plan(Path(run_dir), **train)
    try:
        result = run_pipeline(plan, RunDir(Path(run_dir)), _executor(kind, address))
    except KeyboardInterrupt:
        sys.exit(130)
    print("pipeline:", result.status, flush=True)
    sys.exit(0 if result.status == "succeeded" else 1)
