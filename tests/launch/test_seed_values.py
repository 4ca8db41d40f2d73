"""The shipped experiments carry the seed systems' values (t3rl notes §4, §11; each value's source is
in the YAML comment next to it)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from launch.checks.resolve import resolve
from launch.plan.build import PlanContext, build_plan

CTX = PlanContext(Path("/run"), Path("/base"), "/t3rl", "/venv/bin/python", "test-run", {})


def runtime(plan, stage: str) -> dict:
    path = next(p for p in plan.files if p.endswith(f"/runtime/{stage}.yaml"))
    return yaml.safe_load(plan.files[path])["t3rl"]


@pytest.mark.parametrize("experiment", ["stage1_bfcl", "stage2_bfcl"])
def test_bfcl_stages_follow_t3rls_instruct2507_recipe(experiment: str) -> None:
    run = resolve([f"+experiment={experiment}"]).run
    plan = build_plan(run, CTX)
    train = runtime(plan, "train")
    assert train["env"]["max_step_limit"] == 20
    assert train["parsers"] == {
        "tool_call_parser": "qwen",
        "reasoning_parser": "qwen3-thinking",
        "think_tags": ["<thinking>", "</thinking>"],
    }
    assert train["mis"]["tis_level"] == "token" and train["mis"]["tis_mode"] == "truncate"
    eval_file = next(p for p in plan.files if p.endswith("/runtime/eval.eval.yaml"))
    assert yaml.safe_load(plan.files[eval_file])["split"] == "bfcl_unseen"
