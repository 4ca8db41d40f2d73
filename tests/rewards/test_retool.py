"""ReTool's {−1, 0, 1} outcome reward (retool.md §5) on hand-worked responses."""

from __future__ import annotations

import threading

import pytest

from t3rl_core.rewards.base import RewardInput
from t3rl_core.rewards.retool import ReToolOutcomeReward, ReToolRewardConfig, last_boxed

REWARD = ReToolOutcomeReward(ReToolRewardConfig())
CODE = "Let me compute.\n<code>\n```python\nprint(17 * 23)\n```\n</code>\n"
WORK = CODE + "<interpreter>\n391\n</interpreter>\n"


def score(response: str, ground_truth: str = "391") -> dict[str, float]:
    result = REWARD(RewardInput(outcome={"response": response, "ground_truth": ground_truth}))
    assert result.value == result.metrics["score"]
    return result.metrics


def test_correct_wrong_and_unformatted():
    # format: ends with <answer>…\boxed{…}…</answer>; acc: the boxed answer equals the reference.
    assert score(WORK + "<answer>\n\\boxed{391}\n</answer>") == {
        "score": 1.0,
        "format": 1.0,
        "graded": 1.0,
        "acc": 1.0,
    }
    assert score(WORK + "<answer>\n\\boxed{390}\n</answer>") == {
        "score": 0.0,
        "format": 1.0,
        "graded": 1.0,
        "acc": 0.0,
    }
    # No <answer> block: −1 even though the boxed value is right.
    assert score(WORK + "The answer is \\boxed{391}.") == {
        "score": -1.0,
        "format": 0.0,
        "graded": 1.0,
        "acc": 0.0,
    }
    # An <answer> without \boxed fails the format.
    assert score("<answer> 391 </answer>")["score"] == -1.0


def test_nothing_may_follow_the_answer_but_one_final_newline():
    # Text after </answer> → −1, although the answer itself is right (acc 1 is still reported).
    assert score("<answer>\\boxed{391}</answer> Done.") == {
        "score": -1.0,
        "format": 0.0,
        "graded": 1.0,
        "acc": 1.0,
    }
    # `$` without MULTILINE also matches before a single final newline; two break it.
    assert score("<answer>\\boxed{391}</answer>\n")["score"] == 1.0
    assert score("<answer>\\boxed{391}</answer>\n\n")["score"] == -1.0
    # The response is cut at the first <|im_end|> (Agent-R1 reads the assistant block up to it).
    assert score("<answer>\\boxed{391}</answer><|im_end|><|endoftext|>")["score"] == 1.0


def test_mathematical_equivalence():
    assert score("<answer>\\boxed{11/12}</answer>", "\\frac{11}{12}")["score"] == 1.0
    assert score("<answer>\\boxed{0.125}</answer>", "\\frac{1}{8}")["score"] == 1.0
    assert score("<answer>\\boxed{x = 8}</answer>", "8")["score"] == 1.0
    assert score("<answer>\\boxed{\\sqrt{8}}</answer>", "2\\sqrt{2}")["score"] == 1.0
    assert score("<answer>\\boxed{129}</answer>", "130")["score"] == 0.0


def test_which_boxed_answer_counts():
    # The last \boxed inside the answer.
    assert score("<answer>\\boxed{1} or rather \\boxed{391}</answer>")["score"] == 1.0
    # The first <answer> block: the format regex spans both blocks, the answer is read from the first.
    two = "<answer>\\boxed{390}</answer> wait <answer>\\boxed{391}</answer>"
    assert score(two) == {"score": 0.0, "format": 1.0, "graded": 1.0, "acc": 0.0}
    # Nested braces stay balanced.
    assert score("<answer>\\boxed{\\frac{1}{2}}</answer>", "0.5")["score"] == 1.0


def test_last_boxed():
    assert last_boxed("\\boxed{\\frac{a}{b}} and \\boxed{x^{2}}") == "x^{2}"
    assert last_boxed("no box") is None
    assert last_boxed("\\boxed{12") is None


def test_a_grading_exception_scores_minus_one(monkeypatch):
    def explode(*_: object) -> bool:
        raise RuntimeError("sympy blew up")

    monkeypatch.setattr(ReToolOutcomeReward, "equivalent", explode)
    assert score("<answer>\\boxed{391}</answer>")["score"] == -1.0


def test_grading_off_the_main_thread():
    """math-verify's SIGALRM timeouts cannot be set there; grading must still work."""
    results: list[dict[str, float]] = []
    response = "<answer>\\boxed{11/12}</answer>"
    worker = threading.Thread(target=lambda: results.append(score(response, "\\frac{11}{12}")))
    worker.start()
    worker.join()
    assert results == [{"score": 1.0, "format": 1.0, "graded": 1.0, "acc": 1.0}]


def test_missing_outcome_fields_name_the_env():
    with pytest.raises(KeyError, match="retool_python"):
        REWARD(RewardInput(outcome={"response": "x"}))
