"""`t3rl plan` builds its plan once: the checks build it in the plan dir it is then written to (named
before validation, made after), and that plan is the one written. When another plan took that dir
meanwhile (the same second), the plan is built again for the dir made, and names only that one."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

import launch.checks.validate
import launch.run.steps
from launch.output.plain import PlainConsole
from launch.plan.build import build_plan
from launch.run.single import run_single

STAMP = "20300101-000000"


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Path]:
    """The run dir of every plan built, in order; the command runs in tmp_path at a fixed stamp."""
    built: list[Path] = []

    def counted(run: Any, ctx: Any) -> Any:
        built.append(ctx.run_dir)
        return build_plan(run, ctx)

    monkeypatch.setattr(launch.checks.validate, "build_plan", counted)
    monkeypatch.setattr(launch.run.steps, "build_plan", counted)
    monkeypatch.setattr("launch.run.single.stamp_now", lambda: STAMP)
    monkeypatch.chdir(tmp_path)
    return built


def _plan() -> int:
    console = PlainConsole(file=io.StringIO(), soft_wrap=True)
    return run_single(["+experiment=quickstart"], [], None, None, None, dry=True, console=console)


def test_the_plan_checked_is_the_plan_written(builds: list[Path], tmp_path: Path) -> None:
    assert _plan() == 0
    plan_dir = (tmp_path / "plans" / "quickstart" / STAMP).resolve()
    assert builds == [plan_dir]
    assert f"{plan_dir}/stages" in (plan_dir / "plan.sh").read_text()


def test_a_dir_taken_meanwhile_gets_a_plan_of_its_own(builds: list[Path], tmp_path: Path) -> None:
    taken = tmp_path / "plans" / "quickstart" / STAMP
    taken.mkdir(parents=True)
    assert _plan() == 0
    plan_dir = taken.with_name(f"{STAMP}-1").resolve()
    assert builds == [taken.resolve(), plan_dir]
    plan_sh = (plan_dir / "plan.sh").read_text()
    assert f"{plan_dir}/stages" in plan_sh and f"{taken.resolve()}/" not in plan_sh
