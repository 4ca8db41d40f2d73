"""`init_from: run:<run dir>:<stage>`: a train stage continues from a finished train stage of another
run (validated), and a finished stage-1 run prints the exact command that continues from it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError
from launch.plan.build import PlanContext, build_plan
from launch.run.rundir import RunDir, RunState, StageRecord
from launch.run.single import continuing_overrides

CTX = PlanContext(Path("/run"), Path("/base"), "/t3rl", "/venv/bin/python", "test-run", {})


def finished_run(
    root: Path, *, status: str = "succeeded", model: str = "qwen3_4b_instruct_2507", tracker: bool = True
) -> Path:
    """A stage-1 run dir as `t3rl run` leaves it: state, outputs, config and a Megatron checkpoint."""
    run = RunDir(root / "stage1_bfcl" / "20260101-000000")
    run.path.mkdir(parents=True)
    checkpoint = run.stage_dir("train") / "checkpoint"
    checkpoint.mkdir(parents=True)
    if tracker:
        (checkpoint / "latest_checkpointed_iteration.txt").write_text("800")
    run.write_stage_outputs("train", {"checkpoint": str(checkpoint)})
    run.write_stage_outputs("data", {"split:bfcl_train": "/data/train.jsonl"})
    state = RunState(
        {
            "data": StageRecord(status="succeeded", fingerprint="f0", run_id="r0"),
            "train": StageRecord(status=status, fingerprint="f1", run_id="r1"),
        }
    )
    run.save_state(state)
    run.write_config(yaml.safe_dump({"model": {"name": model}}), ["+experiment=stage1_bfcl"])
    return run.path


def test_stage2_continues_from_stage_1_of_another_run(tmp_path: Path) -> None:
    previous = finished_run(tmp_path)
    run = resolve(["+experiment=stage2_bfcl", f"stages.train.init_from=run:{previous}:train"]).run
    plan = build_plan(run, CTX)
    argv = list(plan.stage("train").slime_job.argv)
    assert argv[argv.index("--ref-load") + 1] == f"{previous}/stages/train/checkpoint"
    assert argv[argv.index("--load") + 1] == "/run/stages/train/checkpoint"  # its own, fresh


@pytest.mark.parametrize(
    ("make", "ref", "words"),
    [
        (lambda p: p / "nowhere", "train", "not a t3rl run directory"),
        (lambda p: finished_run(p), "stage9", "no stage 'stage9'"),
        (lambda p: finished_run(p), "data", "not a train stage"),
        (lambda p: finished_run(p, status="failed"), "train", "is failed, not finished"),
        (lambda p: finished_run(p, tracker=False), "train", "no latest_checkpointed_iteration.txt"),
        (lambda p: finished_run(p, model="qwen3_8b"), "train", "trained model 'qwen3_8b'"),
    ],
)
def test_an_unusable_run_reference_is_a_config_error(tmp_path: Path, make, ref: str, words: str) -> None:
    previous = make(tmp_path)
    with pytest.raises(ConfigError) as caught:
        resolve(["+experiment=stage2_bfcl", f"stages.train.init_from=run:{previous}:{ref}"])
    problem = next(p for p in caught.value.problems if p.key == "stages.train.init_from")
    assert words in problem.message and problem.fix


def test_a_malformed_run_reference_says_the_form() -> None:
    with pytest.raises(ConfigError, match="run:<run dir>:<stage>"):
        resolve(["+experiment=stage2_bfcl", "stages.train.init_from=run:only-a-dir"])


def test_stage_1_hint_is_the_exact_continuing_command(tmp_path: Path) -> None:
    previous = finished_run(tmp_path)
    stage1 = resolve(["+experiment=stage1_bfcl", "hardware=h100x8"])
    overrides = continuing_overrides(stage1, previous, "stage2_bfcl", [])
    assert overrides == [
        "+experiment=stage2_bfcl",
        "hardware=h100x8",
        f"stages.train.init_from=run:{previous.resolve()}:train",
    ]
    resolve(overrides)  # the printed command validates


def test_no_continuation_across_models_or_without_a_checkpoint(tmp_path: Path) -> None:
    previous = finished_run(tmp_path, tracker=False)
    stage1 = resolve(["+experiment=stage1_bfcl"])
    assert continuing_overrides(stage1, previous, "stage2_bfcl", []) == ["+experiment=stage2_bfcl"]
    quick = resolve(["+experiment=quickstart"])
    assert continuing_overrides(quick, finished_run(tmp_path / "q"), "bfcl_env_tuning", []) == [
        "+experiment=bfcl_env_tuning"
    ]
