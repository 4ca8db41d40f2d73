"""`model=glm4_9b` plans GLM-4-0414's native pair: its template, t3rl's own parser in the runtime config,
and an eval server started without a `--tool-call-parser` SGLang would not know."""

from __future__ import annotations

from pathlib import Path

import yaml

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError
from launch.plan.build import PlanContext, build_plan

GLM = ["+experiment=stage1_bfcl", "model=glm4_9b", "hardware.tensor_parallel=2"]


def test_glm4_9b_plans_the_native_template_and_parser() -> None:
    run = resolve(GLM).run
    plan = build_plan(run, PlanContext(Path("/RUN"), Path("/BASE"), "/T3RL", "/venv/bin/python", "glm", {}))
    runtime = yaml.safe_load(next(text for path, text in plan.files.items() if path.endswith("/train.yaml")))
    assert runtime["t3rl"]["parsers"]["tool_call_parser"] == "glm4_0414"
    assert runtime["t3rl"]["chat"]["chat_template"] == "glm4_0414"
    script = plan.stage("eval").script()
    assert "sglang.launch_server" in script and "--tool-call-parser" not in script


def test_glm45_parser_does_not_read_the_native_calls() -> None:
    try:
        resolve([*GLM, "model.parsers.tool_call_parser=glm45"])
    except ConfigError as caught:
        problem = next(p for p in caught.problems if p.key == "model.parsers.tool_call_parser")
        assert "does not read the calls the glm4_0414 chat template writes" in problem.message
        assert "model.parsers.tool_call_parser=glm4_0414" in problem.fix
    else:
        raise AssertionError("glm45 on the 0414 template was accepted")
