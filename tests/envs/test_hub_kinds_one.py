"""Hub environments that break the contract in ways no issue named: each is refused where it crosses into
t3rl, with a message naming what is wrong. The environments are written in the test, in verifiers' or
OpenEnv's own terms, as a hub would publish them."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from t3rl_core.envs.verifiers.config import VerifiersEnvConfig
from t3rl_core.envs.verifiers.data import prepare
from t3rl_core.envs.verifiers.env import VerifiersEnvFactory
from t3rl_core.types import AnswerAction

# A SingleTurnEnv whose one reward function returns what `kind` names (or raises).
SCORED = """
import verifiers as vf
from datasets import Dataset

def load_environment(kind: str = "one", rows: int = 2):
    def score(completion) -> float:
        if kind == "raise":
            raise ZeroDivisionError("division by zero")
        return {"one": 1.0, "nan": float("nan"), "inf": float("inf"), "none": None, "text": "high"}[kind]
    data = Dataset.from_list([{"question": "q", "answer": "a"}] * rows)
    return vf.SingleTurnEnv(dataset=data, rubric=vf.Rubric(funcs=[score]))
"""


def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> str:
    """Install `source` as the environment module `name` (an installed hub env imports by name)."""
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)  # imported again from this test's file
    return name


def play(config: VerifiersEnvConfig, out: Path) -> dict[str, Any]:
    """One episode of the first eval row, answered with the dataset's answer; the env's outcome."""
    row = json.loads(prepare(config, out)["verifiers_eval"].read_text().splitlines()[0])
    factory = VerifiersEnvFactory(config)

    async def go() -> dict[str, Any]:
        env = factory(row, "eval")
        await env.reset()
        await env.step(AnswerAction(text="a"))
        await env.finish()
        return env.outcome()

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("nan", r"reward function 'score' returned nan"),
        ("inf", r"reward function 'score' returned inf"),
        ("none", r"reward function 'score' returned NoneType None, not a number"),
        ("text", r"reward function 'score' returned str 'high', not a number"),
        ("raise", r"reward function 'score' raised ZeroDivisionError: division by zero"),
    ],
)
def test_a_rubric_that_scores_no_number_fails_the_episode(
    kind: str, words: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verifiers scores a raising or None-returning function 0.0 with a log line: trained on as a zero."""
    name = module(tmp_path, monkeypatch, f"vf_scored_{kind}", SCORED)
    config = VerifiersEnvConfig(id=name, args={"kind": kind})
    with pytest.raises(ValueError, match=f"environment '{name}'.*{words}"):
        play(config, tmp_path / "out")


def test_a_rubric_that_scores_a_number_still_scores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = module(tmp_path, monkeypatch, "vf_scored_ok", SCORED)
    outcome = play(VerifiersEnvConfig(id=name), tmp_path / "out")
    assert outcome["reward"] == 1.0 and outcome["metrics"]["score"] == 1.0


LOADERS = {
    "vf_returns_dict": "def load_environment():\n    return {'dataset': []}\n",
    "vf_loader_needs_key": "import os\ndef load_environment():\n    return os.environ['VF_TEST_KEY']\n",
    "vf_empty_eval": SCORED.replace("dataset=data,", "dataset=data, eval_dataset=data.select([]),"),
}


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("vf_returns_dict", r"returned dict, not a verifiers Environment"),
        ("vf_loader_needs_key", r"load_environment\(\*\*\{\}\) raised KeyError: 'VF_TEST_KEY'"),
        ("vf_empty_eval", r"its verifiers_eval dataset is empty"),
    ],
)
def test_a_loader_that_gives_no_playable_environment_is_refused(
    name: str, words: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VF_TEST_KEY", raising=False)
    module(tmp_path, monkeypatch, name, LOADERS[name])
    with pytest.raises((TypeError, RuntimeError, ValueError), match=f"environment '{name}'.*{words}"):
        prepare(VerifiersEnvConfig(id=name), tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing half-written
