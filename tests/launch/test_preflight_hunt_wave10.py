"""Hunt wave ten (keys, groups, launcher) and wave nine's leftovers, each refused at its key, where it was
set, with a first fix that validates when applied (tests.support.fix_applier):

- what an env's prepare_data refuses is one declaration (`EnvConfig.prepare_refusals`): BFCL's id cut
  short of the entries bfcl-eval ships is judged by it, as ReTool's test_size is, wherever a prepare_data
  stage runs (was: a second declaration, `preparation_problems`, beside it);

See docs/explanation/preflight.md, "Hunt wave ten: keys, groups, launcher".
"""

from __future__ import annotations

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
