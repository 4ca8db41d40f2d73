"""The dry executor: plans only. The run dir, plan.sh and every command.sh are written; nothing runs."""

from __future__ import annotations

from typing import Any, TextIO

from launch.plan.stages import Stage
from launch.run.executors.base import Executor, StageContext, StageResult


class DryExecutor(Executor):
    dry = True

    def __init__(self, config: Any = None, out: TextIO | None = None) -> None:
        self.config = config

    def run_stage(self, stage: Stage, ctx: StageContext) -> StageResult:
        return StageResult("planned", message=f"see {ctx.command_file}")
