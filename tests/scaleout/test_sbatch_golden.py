"""The sbatch scripts of real plans (stage-1 BFCL train stage on 1 and 2 nodes) against golden files,
and the submitit allocation that executor=slurm asks for against the script's own #SBATCH lines.

Regenerate the goldens after an intended change with T3RL_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from launch.checks.resolve import resolve
from launch.plan.build import PlanContext, build_plan
from launch.run.executors.base import StageContext
from launch.run.executors.sbatch import render_sbatch, sbatch_directives, sbatch_parameters
from launch.run.executors.slurm import sbatch_job

GOLDEN = Path(__file__).parent / "golden"
RUN_DIR = Path("/lustre/runs/stage1_bfcl/20260101-000000")
SLURM = [
    "executor=slurm",
    "executor.account=rl",
    "executor.partition=h200",
    "executor.time_limit=1-00:00:00",
    "executor.container_image=/lustre/images/slime.sqsh",
    "executor.container_mounts=[/lustre:/lustre]",
    "executor.setup=['source /lustre/t3rl/.venv/bin/activate']",
    "executor.extra_sbatch=['--qos=high']",
]


def _train_job(hardware: str):
    resolved = resolve(["+experiment=stage1_bfcl", f"hardware={hardware}", *SLURM])
    ctx = PlanContext(
        run_dir=RUN_DIR,
        base_dir=Path("/lustre"),
        t3rl_root="/lustre/t3rl",
        python="/lustre/t3rl/.venv/bin/python",
        run_id="stage1_bfcl/20260101-000000",
    )
    plan = build_plan(resolved.run, ctx)
    stage_dir = RUN_DIR / "stages" / "train"
    stage_ctx = StageContext(RUN_DIR, stage_dir, stage_dir / "command.sh", stage_dir / "log.txt", 1, plan)
    return sbatch_job(plan.stage("train"), stage_ctx, plan.name), resolved.run.executor


@pytest.mark.parametrize(
    ("hardware", "golden"), [("h200x8", "train_1node.sbatch"), ("h200x8x2nodes", "train_2nodes.sbatch")]
)
def test_rendered_sbatch_matches_golden(hardware: str, golden: str) -> None:
    job, slurm = _train_job(hardware)
    text = render_sbatch(job, slurm)
    path = GOLDEN / golden
    if os.environ.get("T3RL_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


def test_submitit_allocation_matches_the_script_directives() -> None:
    from submitit.slurm.slurm import _make_sbatch_string

    job, slurm = _train_job("h200x8x2nodes")
    submitted = _make_sbatch_string(
        command="python -m submitit.core._submit", folder="/f", **sbatch_parameters(job, slurm)
    )
    lines = set(submitted.splitlines())
    for directive in sbatch_directives(job, slurm):
        if directive.startswith("--output="):
            continue  # submitit keeps its own output files; the job appends to log.txt itself
        name, _, value = directive.partition("=")
        if name == "--time":
            value = "1440"  # submitit takes minutes
        assert f"#SBATCH {name}={value}" in lines or f"#SBATCH {name}" in lines, (directive, submitted)
    # The work runs once, on the first node (no srun around submitit's own process).
    assert "srun" not in submitted
