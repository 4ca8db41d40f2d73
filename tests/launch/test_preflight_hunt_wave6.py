"""Hunt wave 6: the launcher, the job, its environment and sweeps. Kinds of wrong configuration (or wrong
judgement of a right one) no earlier hunt closed, each closed by a declaration:

- the stages a command runs (`--only`, `--from`): one `Selection` (launch/checks/context.py) read by the
  pipeline's `decide` and by the pre-flight's checks of this machine, so `t3rl run --only data` is not
  warned about the model the train stage loads;
- an env's own step limit against its tasks' gold plans (`EnvConfig.episode_steps_needed`: tau2's
  `max_steps` in orchestrator steps, two per agent tool call, read from the installed tau2's task files);
- wandb's names given twice (rules/tracking_env.py): the job's WANDB_PROJECT/RUN_GROUP/NAME are never read;
- sbatch options that break how t3rl submits and watches its jobs (rules/sbatch_control.py);
- job variables holding paths that name another path in each worker, or nothing here
  (rules/job_env_paths.py);
- a working dir Ray cannot upload, probed as Ray walks it (rules/ray_upload.py);
- a fix that is a default this machine refuses (schema_errors.default_of tries it first);
- sweep points that validate equal, or differ only in a root setting every train stage replaces
  (sweep_checks compares validated values; stage_hardware.replaced_root_fields);
- a served model's per-call budget past its context (`TokensOf`, rules/served_context.py).

See docs/explanation/preflight.md, "Hunt wave six: launcher, job and sweeps".
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from launch.checks.context import EVERY_STAGE, Selection
from launch.checks.resolve import resolve
from launch.config.errors import Problem
from tests.launch.test_preflight_hunt_wave5 import (
    _refused_at_key_with_a_fix_that_validates,
    _warned_with_a_fix_that_clears_it,
)
from tests.support.in_tmp import in_tmp
from tests.support.refusals import errors

S1 = "+experiment=stage1_bfcl"
TAU2 = "+experiment=tau2_pipeline"


_in_tmp = in_tmp()  # relative paths of the configs resolve in one empty dir


def _warnings(overrides: list[str], key: str, selection: Selection = EVERY_STAGE) -> list[Problem]:
    return [w for w in resolve(overrides, selection=selection).warnings if w.key == key]


# ------------------------------------------------------------------------------- the stages that run


@pytest.mark.parametrize(
    ("selection", "warned"),
    [
        (Selection(only="data"), False),  # was warned: the plan's checks judged every planned stage
        (Selection(from_stage="train"), True),  # train and to_hf load it
        (Selection(only="train"), True),
        # no such stage (`--only prepare_data`): refused with the config's errors since wave seven
    ],
    ids=repr,
)
def test_checks_of_this_machine_judge_the_stages_the_command_runs(selection: Selection, warned: bool) -> None:
    said = [w for w in _warnings([S1], "model.hf_checkpoint", selection) if "config.json" in w.message]
    assert bool(said) is warned


def test_the_pipeline_runs_the_selection_the_checks_judged() -> None:
    from launch.checks.validate import trial_plan
    from launch.run.pipeline import decide
    from launch.run.rundir import RunState

    plan, refused = trial_plan(resolve([S1, "executor=dry"]).run)
    assert plan is not None and not refused
    for selection in (Selection(only="data"), Selection(only="to_torch_dist"), Selection()):
        ran = [d.stage for d in decide(plan, RunState(), **selection._asdict()) if d.action != "outside"]
        assert ran == selection.of(plan.names())


# --------------------------------------------------------------------------------- an env's step limit


def test_an_env_step_limit_most_tasks_cannot_finish_in_is_refused() -> None:
    problem = _refused_at_key_with_a_fix_that_validates([TAU2, "env.max_steps=5"], "env.max_steps")
    assert "gold plan" in problem.message  # was accepted: every airline/retail episode ended at max_steps


def test_an_env_step_limit_some_tasks_cannot_finish_in_is_warned_about() -> None:
    _warned_with_a_fix_that_clears_it([TAU2, "env.max_steps=20"], "env.max_steps", "gold plan")


def test_the_step_reader_agrees_with_a_whole_parse_of_the_task_files() -> None:
    from t3rl_core.envs.tau2 import task_steps

    for domain in ("airline", "retail"):  # telecom's file is 14 MB: the same reader, not parsed twice here
        where = task_steps._domain_dir(domain)
        assert where is not None
        tasks = json.loads((where / "tasks.json").read_text())
        whole = {
            t["id"]: task_steps.steps_for((t.get("evaluation_criteria") or {}).get("actions") or [])
            for t in tasks
        }
        assert task_steps._steps_by_task(domain) == whole
    # one agent action: opening, call, result, done, and done before the count reaches the limit
    assert task_steps.steps_for([{"name": "x"}]) == 5
    assert task_steps.steps_for([{"name": "x", "requestor": "user"}]) == 7


# ------------------------------------------------------------------------------ wandb's names, twice

WANDB = [S1, "tracking=wandb"]


@pytest.mark.parametrize("name", ["WANDB_PROJECT", "WANDB_RUN_GROUP", "WANDB_NAME"])
def test_a_wandb_name_in_the_job_environment_is_refused(name: str) -> None:
    key = f"hardware.env_vars.{name}"
    problem = _refused_at_key_with_a_fix_that_validates([*WANDB, f"+{key}=mine"], key)
    assert "never read" in problem.message  # was accepted: slime's wandb.init names all three itself


def test_the_team_wandb_reads_from_the_job_environment_is_accepted() -> None:
    assert _warnings([*WANDB, "+hardware.env_vars.WANDB_ENTITY=lab"], "hardware.env_vars.WANDB_ENTITY") == []


def test_a_wandb_name_exported_here_that_t3rl_overrules_is_warned_about(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WANDB_PROJECT", "mine")
    _warned_with_a_fix_that_clears_it(WANDB, "tracking.project", "will not read it")
    assert _warnings([S1], "tracking.project") == []  # no tracker: nothing is named


# ------------------------------------------------------------------- sbatch options against the job's control

SLURM = [S1, "executor=slurm"]


@pytest.mark.parametrize("option", ["--ntasks=8", "--hold", "--test-only", "--wait"])
def test_an_sbatch_option_that_breaks_the_jobs_control_is_refused(option: str) -> None:
    overrides = [*SLURM, f"executor.extra_sbatch=['--qos=high','{option}']"]
    problem = _refused_at_key_with_a_fix_that_validates(overrides, "executor.extra_sbatch")
    assert option in problem.message  # was accepted: submitted, then stuck or refused by sbatch


def test_an_sbatch_chdir_is_warned_about_and_requeue_accepted() -> None:
    chdir = [*SLURM, "executor.extra_sbatch=['--chdir=/scratch']"]
    _warned_with_a_fix_that_clears_it(chdir, "executor.extra_sbatch", "does nothing")
    requeue = [*SLURM, "executor.extra_sbatch=['--requeue','--ntasks-per-core=1']"]
    assert _warnings(requeue, "executor.extra_sbatch") == []


# ---------------------------------------------------------------------------- path variables of the job

QUICK = "+experiment=quickstart"  # the local executor: its job runs here


@pytest.mark.parametrize(
    "assignment", ["HOME=home", "TRITON_CACHE_DIR=cache/triton", "LD_PRELOAD=lib/libjemalloc.so"]
)
def test_a_relative_path_in_the_job_environment_is_refused(assignment: str) -> None:
    key = f"hardware.env_vars.{assignment.split('=')[0]}"
    problem = _refused_at_key_with_a_fix_that_validates([S1, f"+hardware.env_vars.{assignment}"], key)
    assert "relative path" in problem.message  # was accepted: another directory in every Ray worker


@pytest.mark.parametrize(("name", "value"), [("HOME", "/no/such/home"), ("LD_PRELOAD", "/no/such/lib.so")])
def test_a_home_or_preload_missing_where_the_job_runs_is_warned_about(name: str, value: str) -> None:
    _warned_with_a_fix_that_clears_it(
        [QUICK, f"+hardware.env_vars.{name}={value}"], f"hardware.env_vars.{name}", "does not exist here"
    )


def test_a_preload_by_name_or_reference_and_a_home_that_exists_are_accepted(tmp_path: Path) -> None:
    overrides = [
        QUICK,
        "+hardware.env_vars.LD_PRELOAD=libjemalloc.so.2",  # found on the library path
        f"+hardware.env_vars.HOME={tmp_path}",
        "+hardware.env_vars.TMPDIR='${oc.env:TMPDIR,/tmp}'",
    ]
    # (quickstart trains nothing: that the job's variables do nothing there is hunt wave nine's warning)
    judged = [w for w in resolve(overrides).warnings if "no stage of this run trains" not in w.message]
    assert [w for w in judged if w.key.startswith("hardware.env_vars")] == []


# ----------------------------------------------------------------------------- what Ray uploads


def _working_dir(root: Path, weights_mib: int) -> list[str]:
    (root / "code").mkdir(parents=True, exist_ok=True)
    (root / "code" / "train.py").write_text("print('hi')\n")
    (root / "models").mkdir(exist_ok=True)
    with (root / "models" / "model.safetensors").open("wb") as out:
        out.truncate(weights_mib * 1024 * 1024)  # sparse: no disk is written
    return [S1, "executor=ray", f"executor.working_dir={root}"]


def test_a_working_dir_ray_cannot_upload_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_max_grpc_message_size", str(4 * 1024 * 1024))  # a 4 MiB limit keeps files small
    overrides = _working_dir(tmp_path, 9)
    problem = _refused_at_key_with_a_fix_that_validates(overrides, "executor.working_dir")
    assert "models 9 MiB" in problem.message  # was accepted: Ray refused the package at submission
    (tmp_path / ".rayignore").write_text("models/\n")  # the other fix: left out as Ray leaves it out
    assert errors(overrides) == []


def test_a_working_dir_near_the_limit_before_zipping_is_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAY_max_grpc_message_size", str(4 * 1024 * 1024))
    (tmp_path / "logs").mkdir()
    with (tmp_path / "logs" / "big.log").open("wb") as out:  # text: zipping may shrink it below
        out.truncate(5 * 1024 * 1024)
    overrides = _working_dir(tmp_path, 0)
    assert [w for w in _warnings(overrides, "executor.working_dir") if "zipping" in w.message]
    (tmp_path / ".gitignore").write_text("*.log\n")  # Ray reads .gitignore too
    assert _warnings(overrides, "executor.working_dir") == []


# ------------------------------------------------------------------- a default refused here is no fix


def test_a_fix_is_never_a_default_this_machine_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A venv under ~/.cache (poetry's default) with ReTool's local sandbox, which hides ~/.cache: refused
    rightly, and the fix was the default list, ~/.cache in it, refused again."""
    monkeypatch.setattr(sys, "prefix", os.path.expanduser("~/.cache/pypoetry/virtualenvs/t3rl-x"))
    problem = _refused_at_key_with_a_fix_that_validates(["+experiment=retool"], "env.sandbox.hidden_paths")
    assert ".cache" not in problem.fix and ".ssh" in problem.fix  # the others stay hidden


# --------------------------------------------------------------- sweep points equal once validated


@pytest.mark.parametrize("swept", ["seed=1,01", "seed=1,1.0"])
def test_points_typed_apart_that_validate_equal_are_the_same_run(
    swept: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    from rich.console import Console

    from launch.run.sweep_checks import validate_multirun

    assert validate_multirun([QUICK, swept], [], Console(file=io.StringIO())) == 0
    said = capsys.readouterr()
    assert "the sweep would do the same run twice: p01" in said.out + said.err  # was: two points, one run


# ------------------------------------------------------- a served model's budget against its context

LLM_USER = [TAU2, "user_sim=llm"]


@pytest.mark.parametrize(
    "model",
    ["Qwen/Qwen3-4B-Instruct-2507", "Qwen/Qwen3-8B"],  # the policy's own hub id; a model option's
)
def test_a_user_simulators_budget_past_its_models_context_is_refused(model: str) -> None:
    overrides = [*LLM_USER, f"env.user.model={model}", "env.user.max_tokens=300000"]
    problem = _refused_at_key_with_a_fix_that_validates(overrides, "env.user.max_tokens")
    assert model in problem.message  # was accepted: the user's server refused every request


def test_a_user_model_t3rl_does_not_know_is_not_judged() -> None:
    overrides = [*LLM_USER, "env.user.model=gpt-4o", "env.user.max_tokens=300000"]
    assert [e for e in errors(overrides) if e.key == "env.user.max_tokens"] == []


def test_points_that_differ_in_a_root_setting_every_train_stage_replaces_are_one_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import io

    from rich.console import Console

    from launch.run.sweep_checks import validate_multirun

    swept = [S1, "hardware.tensor_parallel=1,2", "+stages.train.hardware.tensor_parallel=4"]
    assert validate_multirun(swept, [], Console(file=io.StringIO())) == 0
    said = capsys.readouterr()
    assert "the sweep would do the same run twice: p01" in said.out + said.err  # was: two points, one run


# ------------------------------------------------------------------ a wait inside a job past its limit


def test_a_wait_inside_a_slurm_job_past_its_time_limit_is_warned_about() -> None:
    overrides = [*SLURM, "executor.time_limit=00:15:00", "executor.ray_start_timeout_s=3600"]
    _warned_with_a_fix_that_clears_it(overrides, "executor.ray_start_timeout_s", "kills a train stage's job")
    shorter = [*SLURM, "executor.ray_start_timeout_s=3600", "executor.time_limit=00:15:00"]
    _warned_with_a_fix_that_clears_it(shorter, "executor.time_limit", "kills a train stage's job")
