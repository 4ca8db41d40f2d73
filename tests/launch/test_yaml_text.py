"""Plan files are emitted by libyaml when PyYAML has it (t3rl_core.yaml_text): the text must be what
PyYAML's own emitter writes, so a plan reads the same on an install without libyaml."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from launch.checks.resolve import resolve
from launch.plan.build import PlanContext, build_plan
from t3rl_core.yaml_text import WIDTH, safe_dump

CONF = Path(__file__).resolve().parents[2] / "conf"
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))


@pytest.mark.skipif(not hasattr(yaml, "CSafeDumper"), reason="PyYAML without libyaml: one emitter only")
@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_yaml_file_of_a_plan_reads_as_pyyamls_own_emitter_writes_it(
    experiment: str, tmp_path: Path
) -> None:
    resolved = resolve([f"+experiment={experiment}"])
    ctx = PlanContext(tmp_path / "run", tmp_path, "t3rl", "python", "run-id", {})
    plan = build_plan(resolved.run, ctx)
    files = {path: text for stage in plan.stages for path, text in stage.files.items()}
    files = {path: text for path, text in files.items() if path.endswith(".yaml")}
    assert files, "every experiment's plan writes runtime configs"
    for path, text in files.items():
        assert text == yaml.safe_dump(yaml.safe_load(text), sort_keys=False, width=WIDTH), path
    pyyaml = yaml.safe_dump(resolved.config, sort_keys=False, width=WIDTH)
    assert safe_dump(resolved.config, sort_keys=False) == pyyaml


def test_options_reach_the_emitter() -> None:
    data = {"b": 1, "a": "é"}
    assert safe_dump(data) == 'a: "\\xE9"\nb: 1\n'
    assert safe_dump(data, sort_keys=False, allow_unicode=True) == "b: 1\na: é\n"
