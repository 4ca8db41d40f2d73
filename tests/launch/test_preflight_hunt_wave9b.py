"""Hunt wave nine's leftovers, each refused at its key, where it was set, with a first fix that validates
when applied (tests.support.fix_applier), and the valid setting beside it still passes:

- an SFT stage of a family slime cannot mask, on demonstrations (ReTool's SFT stage on `model=glm4_9b`):
  the offer `set stages.sft.curriculum.mode=rl` is tried with the rest of the line and dropped, the reason
  it is refused in turn named (launch/checks/offers_tried.py; was: offered, refused when applied);
- a stop token id slime is given outside the model's vocabulary (`--rollout-stop-token-ids 999999`, `-1`,
  in `model.architecture.extra_args`): refused at the key, the ids dropped as the fix (launch/checks/rules/
  stop_token_ids.py; was: accepted, the id never matches a sampled token);
- a ReTool `env.data.test_size` that holds out every problem (`1000000`), alone or as a sweep's point:
  refused at the key, the point named, before any stage runs (the env declares what its prepare_data
  refuses, `EnvConfig.prepare_refusals`; launch/checks/rules/prepare_refusals.py; was: the point's
  prepare_data stage failed).

See docs/explanation/preflight.md, "Hunt wave nine, leftovers".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from launch.config.errors import Problem
from tests.support.cli_app import invoke
from tests.support.refusals import errors, fixed
from tests.support.retool_prepare_only import EXPERIMENT


def _fix_validates(overrides: list[str], problem: Problem, config_dirs: tuple[str, ...] = ()) -> None:
    again = fixed(overrides, problem)
    assert errors(again, config_dirs) == [], (problem.fix, again)


# ------------------------------------------------ an offered stage kind the stage's data would refuse

RETOOL_GLM = ["+experiment=retool", "model=glm4_9b"]


def test_an_rl_offer_the_sft_data_refuses_is_dropped_with_why() -> None:
    (problem,) = [p for p in errors(RETOOL_GLM) if p.key == "model.family"]
    assert "mode=rl" not in problem.fix, problem.fix  # was: `…; or set stages.sft.curriculum.mode=rl`
    assert "refused in turn at stages.sft.curriculum.mode" in problem.message, problem.message
    assert problem.fix.startswith("set model=qwen2_5_3b_instruct"), problem.fix
    _fix_validates(RETOOL_GLM, problem)


def test_with_several_hardware_keys_typed_no_refused_offer_is_proposed() -> None:
    line = [*RETOOL_GLM, "hardware.gpus_per_node=7", "hardware.gpu_memory_gib=4"]
    (problem,) = [p for p in errors(line) if p.key == "model.family"]
    assert "mode=rl" not in problem.fix, problem.fix  # was: `set stages.sft.curriculum.mode=rl`, refused
    assert "retool_sft holds demonstrations" in problem.message, problem.message
    # the swap replaces both hardware keys typed (wave ten; was: no swap, the applier replaced one override)
    _fix_validates(line, problem)


# --------------------------------------------------- a stop token id outside the model's vocabulary

S1 = "+experiment=stage1_bfcl"  # Qwen3: 151936 embedding rows
EXTRA = "model.architecture.extra_args"


@pytest.mark.parametrize(
    ("typed", "outside", "meant"),
    [
        ("[--rollout-stop-token-ids,'999999']", "999999", "[]"),
        ("['--rollout-stop-token-ids=151936']", "151936", "[]"),  # one past the last row
        ("[--rollout-stop-token-ids,'151645','-1']", "-1", "[--rollout-stop-token-ids,'151645']"),
    ],
)
def test_a_stop_token_id_outside_the_vocabulary_is_refused(typed: str, outside: str, meant: str) -> None:
    line = [S1, f"{EXTRA}={typed}"]
    (problem,) = errors(line)  # was: valid, the stop never happens
    assert problem.key == EXTRA, problem
    assert f"holds {outside}, outside the model's vocabulary [0, 151936)" in problem.message, problem
    assert problem.source == f"override `{EXTRA}={typed}`", problem
    assert problem.fix == f"set {EXTRA}={meant}", problem.fix
    _fix_validates(line, problem)


@pytest.mark.parametrize(
    "typed", ["[--rollout-stop-token-ids,'0','151935']", "[--rollout-stop-token-ids,'151645']"]
)
def test_a_stop_token_id_within_the_vocabulary_stands(typed: str) -> None:
    assert errors([S1, f"{EXTRA}={typed}"]) == []


# ------------------------------------------- a data size past what the data holds, in a sweep's point


@pytest.fixture(scope="module")
def rec_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A config dir of ReTool's data preparation alone, on its 14 bundled sample problems."""
    conf = tmp_path_factory.mktemp("wave9b") / "conf"
    (conf / "experiment").mkdir(parents=True)
    (conf / "experiment" / "rec.yaml").write_text(EXPERIMENT)
    return str(conf)


def test_a_test_size_holding_out_every_problem_is_refused_before_prepare(rec_dir: str) -> None:
    line = ["+experiment=rec", "env.data.test_size=1000000"]
    (problem,) = errors(line, (rec_dir,))  # was: valid, prepare_data failed when it ran
    assert problem.key == "env.data.test_size", problem
    assert "14 problem(s) leave no training rows after holding out test_size=1000000" in problem.message
    assert problem.fix == "set env.data.test_size=7", problem.fix
    _fix_validates(line, problem, (rec_dir,))
    assert errors(["+experiment=rec", "env.data.test_size=13"], (rec_dir,)) == []  # one train row left
    (at_the_edge,) = errors(["+experiment=rec", "env.data.test_size=14"], (rec_dir,))  # none left
    assert at_the_edge.key == "env.data.test_size", at_the_edge


def test_a_sweeps_point_past_the_data_is_named_before_any_point_runs(rec_dir: str, tmp_path: Path) -> None:
    argv = ["validate", "-m", "+experiment=rec", "env.data.test_size=4,1000000", "--config-dir", rec_dir]
    result = invoke(argv, T3RL_CACHE_DIR=str(tmp_path))
    assert result.exit_code == 2, result.output
    assert "1 of 2 points are invalid" in result.output, result.output
    row = next(line for line in result.output.splitlines() if "test_size=1000000" in line)
    assert "prepare_data of env retool_python would refuse it" in row, result.output
