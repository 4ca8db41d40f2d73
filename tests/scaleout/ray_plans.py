"""Small plans for the executor=ray tests: a local prepare stage and a "train" stage whose slime job is
a Python one-liner (the same `SlimeJob` shape a real train stage submits, with a tiny entrypoint)."""

from __future__ import annotations

import sys
from pathlib import Path

from launch.plan.build import Plan
from launch.plan.slime_args import SlimeJob
from launch.plan.stages import Stage

# Prints numbered lines slowly enough that a test can interrupt the launcher in the middle. With
# T3RL_TEST_BARRIER set (DIR:COUNT) it first marks its start in DIR and waits until COUNT jobs have
# (120 s at most, a failure guard), so that jobs meant to run at once do, however late each started.
TRAIN_CODE = (
    "import os, sys, time\n"
    "if os.environ.get('T3RL_TEST_BARRIER'):\n"
    "    where, count = os.environ['T3RL_TEST_BARRIER'].rsplit(':', 1)\n"
    "    open(os.path.join(where, str(os.getpid())), 'w').close()\n"
    "    deadline = time.monotonic() + 120\n"
    "    while len(os.listdir(where)) < int(count) and time.monotonic() < deadline:\n"
    "        time.sleep(0.05)\n"
    "for i in range(int(sys.argv[1])):\n"
    "    print('train line', i, os.environ['T3RL_TEST_VALUE'], flush=True)\n"
    "    time.sleep(float(sys.argv[2]))\n"
    "sys.exit(int(sys.argv[3]))\n"
)


def train_stage(
    lines: int = 6,
    interval_s: float = 0.4,
    exit_code: int = 0,
    gpus: int = 1,
    nodes: int = 1,
    barrier: str = "",
) -> Stage:
    """`barrier` (DIR:COUNT, see TRAIN_CODE): the job prints only once COUNT jobs marked DIR."""
    env = {"T3RL_TEST_VALUE": "from-runtime-env", **({"T3RL_TEST_BARRIER": barrier} if barrier else {})}
    job = SlimeJob(
        script="-c",
        argv=(TRAIN_CODE, str(lines), str(interval_s), str(exit_code)),
        env_vars=env,
        address=None,
        python=sys.executable,
        gpus=gpus,
        nodes=nodes,
    )
    return Stage(
        name="train",
        kind="train",
        commands=(tuple(job.submit_argv()),),
        needs_ray_head=True,
        gpus=gpus,
        nodes=nodes,
        slime_job=job,
    )


def prepare_stage(run_dir: Path) -> Stage:
    out = run_dir / "stages" / "prep" / "prepared.txt"
    return Stage(
        name="prep",
        kind="prepare_data",
        commands=(f"echo prepared > {out}",),
        outputs={"file": str(out)},
    )


def two_stage_plan(run_dir: Path, **train: object) -> Plan:
    return Plan(name="raytest", run_dir=run_dir, stages=(prepare_stage(run_dir), train_stage(**train)))  # type: ignore[arg-type]


class NoteReporter:
    """A pipeline reporter that prints nothing and keeps the pipeline's notes."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def decisions(self, plan: object, decisions: object) -> None:
        pass

    def stage_started(self, stage: object, decision: object, attempt: int) -> None:
        pass

    def stage_finished(self, stage: object, result: object, seconds: float) -> None:
        pass

    def note(self, stage: object, text: str) -> None:
        self.notes.append(text)
