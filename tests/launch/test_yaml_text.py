"""Plan files are emitted by libyaml when PyYAML has it (t3rl_core.yaml_text): the text must be what
PyYAML's own emitter writes, so a plan reads the same on an install without libyaml."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from launch.checks.resolve import resolve
from launch.plan.build import PlanContext, build_plan
from t3rl_core.yaml_text import WIDTH, safe_dump, safe_load

CONF = Path(__file__).resolve().parents[2] / "conf"
# Texts PyYAML rejects, each for another reason (libyaml words some of them differently).
BROKEN = (
    "name: broken\nhardware: [1,\n",
    "name: x\n  bad: indent\n",
    "model:\n\tname: x\n",
    "name: a: b\n",
    "name: 'unterminated\n",
    "end_of_turn: ***\n",
)
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


def _outcome(load: object, text: str) -> tuple[str, object]:
    try:
        return "ok", load(text)  # type: ignore[operator]
    except yaml.YAMLError as error:
        return type(error).__name__, str(error)


def test_every_shipped_config_file_reads_as_pyyamls_own_parser_reads_it() -> None:
    files = sorted(CONF.rglob("*.yaml"))
    assert len(files) > 40
    for path in files:
        text = path.read_text()
        assert safe_load(text) == yaml.safe_load(text), path


@pytest.mark.parametrize("text", BROKEN)
def test_a_text_pyyaml_rejects_is_rejected_in_pyyamls_words(text: str) -> None:
    expected = _outcome(yaml.safe_load, text)
    assert expected[0] != "ok"
    assert _outcome(safe_load, text) == expected


@pytest.mark.skipif(not hasattr(yaml, "CSafeLoader"), reason="PyYAML without libyaml: one parser only")
def test_libyaml_parses_when_pyyaml_has_it(monkeypatch: pytest.MonkeyPatch) -> None:
    loaders: list[type] = []
    inner = yaml.load

    def spy(text: str, Loader: type) -> object:
        loaders.append(Loader)
        return inner(text, Loader=Loader)

    monkeypatch.setattr(yaml, "load", spy)
    assert safe_load("a: [1, 2]\n") == {"a": [1, 2]}
    assert loaders == [yaml.CSafeLoader]
