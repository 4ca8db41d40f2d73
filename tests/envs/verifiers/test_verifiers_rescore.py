"""`t3rl score verifiers`: rollouts verifiers itself played and saved (prompt and completion messages)
re-scored by the environment's rubric from the transcript alone, equal to the rollout's own reward."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from tests.envs.verifiers.conftest import CALCULATOR
from tests.envs.verifiers.openai_standin import reply
from tests.envs.verifiers.test_verifiers_world import library_rollout, prepared, runtime

pytestmark = pytest.mark.slow


def saved(output: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """A rollout as verifiers' results file keeps it (messages as JSON)."""
    dump = [m if isinstance(m, dict) else m.model_dump(exclude_none=True) for m in output["completion"]]
    prompt = row["metadata"]["verifiers"]["prompt"]
    return {"id": row["metadata"]["index"], "prompt": prompt, "completion": dump, "answer": row["label"]}


def test_rubric_rescores_saved_rollouts(tmp_path: Path) -> None:
    expected = []
    cases = [
        (runtime("vf_guess", {"secret": 6}), [reply("3"), reply("8"), reply("6")]),
        (
            runtime(CALCULATOR, {"num_examples": 1}),
            [reply(calls=[("add", {"a": 3, "b": 4})]), reply("It is 7.")],
        ),
    ]
    files = []
    for n, (config, script) in enumerate(cases):
        row = prepared(config, tmp_path / f"data{n}")["verifiers_train"][0]
        output = library_rollout(config, row, script)
        path = tmp_path / f"rollouts{n}.jsonl"
        path.write_text(json.dumps(saved(output, row)) + "\n")
        files.append((config, path, output["reward"]))
    for config, path, reward in files:
        args = ",".join(f"{key}:{value}" for key, value in config.env.args.items())
        overrides = ["env=verifiers", f"env.id={config.env.id}", f"env.args={{{args}}}"]
        result = CliRunner().invoke(app, ["score", "verifiers", str(path), *overrides, "--no-progress"])
        assert result.exit_code == 0, result.output
        (verdict,) = [
            json.loads(line)
            for line in (path.with_suffix(".scored") / "verdicts.jsonl").read_text().splitlines()
        ]
        assert verdict["reward"] == pytest.approx(reward)
        expected.append(reward)
    # The guess rubric counts the turns (1 / 3 of 0.25); the calculator's reads the tool message.
    assert expected == pytest.approx([1.0 + 0.25 / 3, 1.5])


def test_scoring_needs_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"prompt": [], "completion": []}) + "\n")
    result = CliRunner().invoke(app, ["score", "verifiers", str(path), "--no-progress"])
    assert result.exit_code == 2 and "env=verifiers env.id" in result.output
