"""Plans made of small shell stages, for pipeline and executor tests (also run in a child process).

Every stage appends a line to `<marks>/<name>.started` when it starts and to `<marks>/<name>.done`
when it completes, so a test counts executions and completions from the files alone.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from launch.config.schema import LocalExecutorConfig
from launch.plan.build import Plan
from launch.plan.stages import MAY_BE_EMPTY, OutputRef, Stage
from launch.run.executors.local import LocalExecutor
from launch.run.pipeline import run_pipeline
from launch.run.rundir import RunDir
from tests.support.processes import alive  # noqa: F401  (the launch tests import it from here)


def stage(name: str, marks: Path, body: str = "true", reads: tuple[str, ...] = (), **fields: object) -> Stage:
    """A shell stage; `reads` names the earlier stages whose output it reads (a rerun of one of them
    reruns it). `verify` may be a tuple of paths: each is then only to exist (MAY_BE_EMPTY)."""
    if isinstance(fields.get("verify"), tuple):
        fields["verify"] = dict.fromkeys(fields["verify"], MAY_BE_EMPTY)  # type: ignore[arg-type]
    script = f"echo x >> {marks}/{name}.started\n{body}\necho x >> {marks}/{name}.done"
    inputs = {f"from_{source}": OutputRef(source, "out") for source in reads}
    return Stage(name=name, kind="prepare_data", commands=(script,), inputs=inputs, **fields)  # type: ignore[arg-type]


def three_stage_plan(run_dir: Path, marks: Path, middle: str = "true") -> Plan:
    """a → b → c, each reading the one before."""
    stages = (stage("a", marks), stage("b", marks, middle, reads=("a",)), stage("c", marks, reads=("b",)))
    return Plan("test", run_dir, stages)


def count(marks: Path, name: str, what: str) -> int:
    path = marks / f"{name}.{what}"
    return len(path.read_text().splitlines()) if path.exists() else 0


def run(plan: Plan, run_dir: Path, grace: float = 1.0, **kwargs: object) -> object:
    executor = LocalExecutor(LocalExecutorConfig(stop_grace_s=grace), out=io.StringIO())
    return run_pipeline(plan, RunDir(run_dir), executor, **kwargs)  # type: ignore[arg-type]


if __name__ == "__main__":
    # python pipeline_helpers.py RUN_DIR MARKS MIDDLE: the three-stage plan, run to the end.
    run_dir, marks, middle = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    run_dir.mkdir(parents=True, exist_ok=True)
    run(three_stage_plan(run_dir, marks, middle), run_dir)
