"""A real two-point sweep of the data-preparation experiment `rec` (retool_prepare_only), recorded once
per test module, and what `t3rl runs show <sweep dir>` prints of it: for tests of a sweep's points and
their own records (tests/launch/test_sweep_point_records.py, test_sweep_point_fingerprint.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from launch.cli.app import app
from launch.cli.runs import show_run
from tests.support.retool_prepare_only import rec_config_dir


def record_sweep(root: Path, patch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Run `rec` over two test sizes below `root` (its working dir while `patch` lasts): the sweep dir,
    and the config dir its points compose from."""
    conf = rec_config_dir(root, patch)
    args = ["run", "-m", "+experiment=rec", "env.data.test_size=3,4", "--config-dir", str(conf)]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "300"}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (sweep_dir,) = (root / "runs" / "rec").iterdir()
    return sweep_dir, conf


def shown(sweep: Path) -> dict[str, str]:
    """`t3rl runs show <sweep dir>`: each point's row by its run dir, and all it printed (`all`)."""
    out = io.StringIO()
    assert show_run(sweep, Console(file=out, width=400, highlight=False)) == 0
    lines = out.getvalue().splitlines()
    rows = {name: next(line for line in lines if f" {name} " in line) for name in ("p00", "p01")}
    return {**rows, "all": " ".join(out.getvalue().split())}


def score_first_best(sweep: Path) -> None:
    """p00 best (0.9 against 0.5): scored as a search's trials are (a metric named without its stage:
    sweep.json's number is kept while the point's record says it succeeded)."""
    data = json.loads((sweep / "sweep.json").read_text())
    data["metric"] = "overall.accuracy"
    for point, metric in zip(data["points"], (0.9, 0.5), strict=True):
        point["metric"] = metric
    (sweep / "sweep.json").write_text(json.dumps(data))
