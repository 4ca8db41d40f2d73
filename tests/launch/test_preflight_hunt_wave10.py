"""Hunt wave ten (keys, groups, launcher) and wave nine's leftovers, each refused at its key, where it was
set, with a first fix that validates when applied (tests.support.fix_applier):

- what an env's prepare_data refuses is one declaration (`EnvConfig.prepare_refusals`): BFCL's id cut
  short of the entries bfcl-eval ships is judged by it, as ReTool's test_size is, wherever a prepare_data
  stage runs (was: a second declaration, `preparation_problems`, beside it);
- every alternative a rule's fix offers (`set a=1; or set b=2`) that assigns keys is tried with the rest
  of the line and dropped, with why, when refused in turn (launch/checks/offers_tried.py; was: only an
  offer of another stage kind was; `hardware.gpus_per_node=3` was offered `hardware.tensor_parallel=3`,
  which Qwen3-4B's 32 heads refuse);

See docs/explanation/preflight.md, "Hunt wave ten: keys, groups, launcher".
"""

from __future__ import annotations

import pytest

from launch.checks.offers_tried import _ASSIGNS
from launch.config.errors import Problem
from t3rl_core.config import EnvConfig
from tests.support.refusals import errors, fixed

S1 = "+experiment=stage1_bfcl"


def _fix_validates(overrides: list[str], problem: Problem, config_dirs: tuple[str, ...] = ()) -> None:
    again = fixed(overrides, problem)
    assert errors(again, config_dirs) == [], (problem.fix, again)


# ------------------------------------------------------ what prepare_data refuses: one declaration


def test_bfcls_id_cut_is_a_prepare_refusal() -> None:
    line = [S1, "env.data.num_ids=150"]
    (problem,) = errors(line)
    assert problem.key == "env.data.num_ids", problem
    assert problem.message.startswith("prepare_data of env bfcl_multi_turn would refuse it: "), problem
    assert problem.fix == "set env.data.num_ids=200", problem.fix
    _fix_validates(line, problem)


def test_the_keys_the_cut_reads_are_blamed_by_which_was_set_last() -> None:
    line = [S1, "env.data.num_ids=150", "env.data.categories=[multi_turn_base]"]
    (problem,) = errors(line)
    assert problem.key == "env.data.categories", problem  # typed last: the cut is held to its entries
    _fix_validates(line, problem)


def test_an_env_declares_what_prepare_refuses_in_one_place() -> None:
    assert not hasattr(EnvConfig, "preparation_problems")  # was: a second declaration of the same


# ------------------------------------------------------- every alternative of a rule's fix, tried


def test_an_alternative_refused_in_turn_is_dropped_with_why() -> None:
    (problem,) = errors([S1, "hardware.gpus_per_node=3"])
    assert "tensor_parallel=3" not in problem.fix, problem.fix  # was: `…; or set hardware.tensor_parallel=3`
    assert "`hardware.tensor_parallel=3` is refused in turn at hardware.tensor_parallel" in problem.message


@pytest.mark.parametrize(
    "line",
    [
        [S1, "hardware.gpus_per_node=3"],
        [S1, "hardware.tensor_parallel=3"],
        [S1, "stages.train.curriculum.train_split=bfcl_test"],
        ["+experiment=retool", "model=glm4_9b"],
    ],
)
def test_every_alternative_offered_that_assigns_keys_takes_the_line_past_its_error(line: list[str]) -> None:
    refused = errors(line)
    typed = {(p.key, p.message) for p in refused}
    tried = 0
    for problem in refused:
        for alternative in problem.fix.split("; or "):
            if _ASSIGNS.match(alternative) is None:
                continue  # prose: a sentence, not a line to apply
            again = errors(fixed(line, problem.replace(fix=alternative)))
            tried += 1
            # nothing new, and not this error again: the line's other errors are their own fixes'
            assert {(e.key, e.message) for e in again} <= typed - {(problem.key, problem.message)}, (
                alternative,
                again,
            )
    assert tried, refused

