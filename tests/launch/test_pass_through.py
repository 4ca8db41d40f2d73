"""A pass-through flag that t3rl derives is refused, naming the key it comes from; the fix moves it."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_configs import make_run, t3rl_stages

from launch.config.errors import ConfigError
from launch.config.slime_flags import owner
from launch.plan.build import build_plan
from launch.plan.context import PlanContext
from launch.plan.pass_through import check_pass_through

CTX = PlanContext(Path("/RUN"), Path("/BASE"), "/T3RL", "/venv/bin/python", "pt", {})
KEY = "model.architecture.extra_args"


def _plan_with(extra: list[str]) -> None:
    run = make_run(stages=t3rl_stages())
    arch = run.model.architecture.model_copy(update={"extra_args": extra})
    build_plan(run.model_copy(update={"model": run.model.model_copy(update={"architecture": arch})}), CTX)


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (["--lr", "1e-5"], "stages.train_stage1.curriculum.optimizer.lr"),
        (["--tensor-model-parallel-size", "4"], "hardware.tensor_parallel"),
        (["--rollout-batch-size=64"], "stages.train_stage1.curriculum.rollout_batch_size"),
        (["--seed", "7"], "seed"),
        (["--use-kl-loss"], "stages.train_stage1.curriculum.algorithm.use_kl_loss"),
    ],
)
def test_a_derived_flag_in_extra_args_names_its_key(extra: list[str], field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _plan_with(["--rotary-percent", "0.5", *extra])
    problem = caught.value.problems[0]
    assert problem.key == KEY and field in problem.message + problem.fix
    # The fix keeps the flags t3rl does not derive.
    assert problem.fix.startswith(f"set {KEY}=[--rotary-percent,'0.5']")


def test_flags_t3rl_does_not_derive_pass_through() -> None:
    _plan_with(["--rotary-percent", "0.5", "--no-rope-fusion"])


def test_every_flag_the_builders_write_that_names_a_field_is_found_by_owner() -> None:
    plan = build_plan(make_run(stages=t3rl_stages()), CTX)
    argv = plan.stage("train_stage1").slime_job.argv
    flags = [t for t in argv if t.startswith("--")]
    owned = {f: owner(f, "stages.s") for f in flags}
    # Every curriculum, optimizer and algorithm flag the builders write has its field.
    for flag in ("--lr", "--rollout-batch-size", "--eps-clip", "--num-epoch", "--rollout-temperature"):
        if flag in owned:
            assert owned[flag] is not None, flag


def test_check_pass_through_reads_values_and_inline_forms() -> None:
    with pytest.raises(ConfigError) as caught:
        check_pass_through(["--lr", "1e-6", "--seed", "1"], ["--seed=3", "--x"], KEY, "stages.s")
    assert "'--seed=3'" not in caught.value.problems[0].message  # shown as flag and value
    assert "--seed 3" in caught.value.problems[0].message
    assert caught.value.problems[0].fix == f"set {KEY}=[--x] seed=3"
