"""A sweep of a training setting its eval inherits gives each point's eval another budget (the benchmark
identity's `budget`), and their summaries are then never compared: sweep.md does not rank them, after
every point has trained. `t3rl validate -m` says so before anything runs, with the eval's own setting
as the fix (launch/run/sweep_evals.py); a sweep the eval does not see is not warned about."""

from __future__ import annotations

import pytest

from tests.support.cli_app import fix_of, invoke

STAGE1 = "+experiment=stage1_bfcl"


def _sweep(*overrides: str) -> str:
    result = invoke(["validate", "-m", STAGE1, *overrides])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_swept_setting_the_eval_inherits_is_warned_with_the_eval_pinned() -> None:
    output = _sweep("stages.train.curriculum.max_num_steps=20,30")
    assert "warning stages.eval: the points' eval 'eval' would measure different things" in output, output
    assert "budget.max_num_steps" in output, output
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("warning stages.eval:"))
    fix = fix_of("\n".join(lines[start : start + 3]))
    assert fix.startswith("pin the eval's own: +stages.eval.eval.max_num_steps=20"), fix
    pinned = _sweep("stages.train.curriculum.max_num_steps=20,30", "+stages.eval.eval.max_num_steps=20")
    assert "would measure different things" not in pinned, pinned


@pytest.mark.parametrize(
    "swept",
    [
        "reward=progress,binary",
        # the eval sets its own response length (eval_max_response_len) and decodes greedily
        "stages.train.curriculum.rollout_max_response_len=8000,10000",
        "stages.train.curriculum.rollout_top_p=0.9,1.0",
    ],
)
def test_a_sweep_the_eval_does_not_see_is_not_warned(swept: str) -> None:
    assert "would measure different things" not in _sweep(swept)


SEARCH = ["validate", "-m", STAGE1, "+hparams_search=bfcl_lr_kl_reward"]


def test_a_searched_setting_the_eval_inherits_is_refused_before_the_study_with_the_eval_pinned() -> None:
    """A study refuses the metric of a trial whose eval measured another benchmark (IncomparableEval),
    which it learns only after that trial trained; the space's edges are planned before it starts."""
    searched = "stages.train.curriculum.max_num_steps=range(20,40,10)"
    result = invoke([*SEARCH, searched])
    assert result.exit_code == 2, result.output
    assert "error stages.eval: the trials' eval 'eval' would measure different things" in result.output
    fix = fix_of(result.output)
    assert fix.startswith("pin the eval's own: +stages.eval.eval.max_num_steps=20"), fix
    assert invoke([*SEARCH, searched, "+stages.eval.eval.max_num_steps=20"]).exit_code == 0


def test_the_shipped_search_is_not_refused() -> None:
    assert invoke(SEARCH).exit_code == 0
