"""`t3rl validate`'s summary line names the hardware the plan's stages use: a config whose stages all
run on the CPU (the quickstart) said 'hardware h200x8', the option every config names, which its run
never reads (`t3rl runs show` said 'none' for the same run)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from launch.cli.app import app


@pytest.mark.parametrize(
    ("experiment", "hardware"),
    [("quickstart", "hardware none (every stage runs on the CPU)"), ("stage1_bfcl", "hardware h200x8")],
)
def test_the_summary_names_the_hardware_the_stages_use(experiment: str, hardware: str) -> None:
    result = CliRunner().invoke(app, ["validate", f"+experiment={experiment}"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("valid: ")]
    assert line.endswith(hardware), line
