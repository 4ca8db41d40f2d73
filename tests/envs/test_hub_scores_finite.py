"""A verifiers environment's scores cross into t3rl through one reading (`boundary.scores`): its state's
`reward` and `metrics` are finite real numbers, or the rollout fails naming the state's key. The outcome
and `t3rl score verifiers` read them with float(): the text '  3 ' was a reward of 3.0, 'nan' and '1e999'
went on as non-finite scores, a bool as 1.0, None (a rollout its rubric never scored) as 0.0, and two
functions' finite scores of 1e308 summed to inf."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_hub_kinds_one import module, play

from t3rl_core.envs.verifiers.config import VerifiersEnvConfig

# verifiers (and t3rl's modules that import it: boundary, rescore) is imported in the tests: ~4 s per
# process, and every xdist worker collects this module.

# A SingleTurnEnv whose rubric writes the state's reward (and a metric) as `kind` names: what a custom
# rubric or environment can leave there; "sum" is verifiers' own weighted sum of two finite scores.
WRITES = """
import verifiers as vf
from datasets import Dataset

VALUES = {
    "nan": float("nan"), "text_nan": "nan", "text_inf": "inf", "text_huge": "1e999", "padded": "  3 ",
    "bool": True, "none": None, "huge_int": 10**400, "one": 1.0, "int": 2,
}

class Writing(vf.Rubric):
    def __init__(self, kind, metric):
        super().__init__(funcs=[lambda completion: 1e308, lambda completion: 1e308] if kind == "sum" else
                         [lambda completion: 1.0])
        self.kind, self.metric = kind, metric

    async def score_rollout(self, state):
        await super().score_rollout(state)
        if self.kind != "sum":
            state["reward"] = VALUES[self.kind]
        state["metrics"] = {"solved": VALUES[self.metric] if self.metric != "bool_ok" else True}

def load_environment(kind: str = "one", metric: str = "one"):
    data = Dataset.from_list([{"question": "q", "answer": "a"}] * 2)
    env = vf.SingleTurnEnv(dataset=data)
    env.rubric = Writing(kind, metric)  # alone, not in the group verifiers builds (which sums as floats)
    return env
"""

ITEM = {"prompt": [{"role": "user", "content": "q"}], "completion": [{"role": "assistant", "content": "a"}]}
REFUSED = ["nan", "text_nan", "text_inf", "text_huge", "padded", "bool", "none", "huge_int", "sum"]


@pytest.fixture
def env_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return module(tmp_path, monkeypatch, "vf_writes_reward", WRITES)


@pytest.mark.parametrize("kind", REFUSED)
def test_a_state_reward_that_is_no_finite_number_fails_the_rollout(
    kind: str, env_id: str, tmp_path: Path
) -> None:
    from t3rl_core.envs.verifiers.boundary import RubricProblem
    from t3rl_core.envs.verifiers.rescore import rescore

    config = VerifiersEnvConfig(id=env_id, args={"kind": kind})
    words = rf"environment '{env_id}': state\['reward'\] \(the rubric's weighted score\)"
    with pytest.raises(RubricProblem, match=words):
        play(config, tmp_path / "out")
    with pytest.raises(RubricProblem, match=words):
        rescore(ITEM, config)


@pytest.mark.parametrize("metric", ["nan", "text_nan", "padded", "none", "huge_int"])
def test_a_state_metric_that_is_no_finite_number_fails_the_rollout(
    metric: str, env_id: str, tmp_path: Path
) -> None:
    from t3rl_core.envs.verifiers.boundary import RubricProblem
    from t3rl_core.envs.verifiers.rescore import rescore

    config = VerifiersEnvConfig(id=env_id, args={"metric": metric})
    with pytest.raises(RubricProblem, match=r"state\['metrics'\]\['solved'\]"):
        play(config, tmp_path / "out")
    with pytest.raises(RubricProblem, match=r"state\['metrics'\]\['solved'\]"):
        rescore(ITEM, config)


@pytest.mark.parametrize(("kind", "reward"), [("one", 1.0), ("int", 2.0)])
def test_a_finite_state_reward_is_the_outcomes(kind: str, reward: float, env_id: str, tmp_path: Path) -> None:
    from t3rl_core.envs.verifiers.rescore import rescore

    config = VerifiersEnvConfig(id=env_id, args={"kind": kind, "metric": "bool_ok"})
    outcome: dict[str, Any] = play(config, tmp_path / "out")
    assert outcome["reward"] == reward and type(outcome["reward"]) is float
    assert outcome["metrics"] == {"solved": 1.0}  # a check's bool is a share
    verdict = rescore(ITEM, config)
    assert verdict.reward == reward and verdict.details == {"solved": 1.0}
