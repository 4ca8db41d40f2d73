"""Under SLURM: an sbatch option t3rl writes itself is not passed through again (one truth), and the
Ray head each job starts on its first node holds its ports on the resource ledger."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_preflight import _errors, _invoke, sandbox  # noqa: F401  (sandbox is a fixture)

from launch.config.sbatch_options import DERIVED, derived_option
from launch.config.schema import SlurmExecutorConfig
from launch.run.executors.sbatch import SbatchJob, sbatch_directives
from tests.support.fix_applier import apply_first_fix

SLURM = ["+experiment=stage1_bfcl", "executor=slurm"]


def test_every_option_t3rl_writes_is_declared() -> None:
    """The guard for options added to the script later: each must be in DERIVED."""
    slurm = SlurmExecutorConfig(cpus_per_task=4, account="a", partition="p")
    job = SbatchJob(
        job_name="j", nodes=2, gpus_per_node=8, needs_ray=True, command_file="c", workdir="/w", output="o"
    )
    written = {option.lstrip("-").partition("=")[0] for option in sbatch_directives(job, slurm)}
    assert written == set(DERIVED)


@pytest.mark.parametrize(
    ("option", "derived"),
    [
        ("--time=1:00:00", "time"),
        ("--acc=a", "account"),  # sbatch reads an unambiguous prefix as the option
        ("--part=gpu", "partition"),
        ("--gres=gpu:h100:4", "gpus-per-node"),
        ("--gpus=8", "gpus-per-node"),
        ("--exclusive", "exclusive"),
        ("--qos=high", None),
        ("--gres=nvme:1", None),
        ("--no-requeue", None),
        ("--n=2", None),  # too short to be read as one option
    ],
)
def test_which_options_repeat_one_t3rl_writes(option: str, derived: str | None) -> None:
    found = derived_option(option)
    assert (found[0] if found else None) == derived


@pytest.mark.parametrize(
    "extra",
    [
        "['--qos=high','--time=2:00:00']",
        "['--gres=gpu:4']",
        "['--partition=gpu'] executor.partition=batch",
        "['--output=x.log']",
    ],
)
def test_a_derived_sbatch_option_is_refused_and_the_fix_validates(extra: str, sandbox: Path) -> None:  # noqa: F811
    overrides = [*SLURM, *f"executor.extra_sbatch={extra}".split(" ")]
    code, out = _invoke("validate", *overrides)
    assert code == 2, out
    (error,) = [e for e in _errors(out) if e["key"] == "executor.extra_sbatch"]
    fixed = apply_first_fix(overrides, error)
    assert fixed is not None, error
    code, after = _invoke("validate", *fixed)
    assert code == 0, f"after {fixed}:\n{after}"


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("executor.ray_port=8265", "executor.ray_port"),
        ("executor.dashboard_port=10001", "executor.dashboard_port"),
    ],
)
def test_the_ray_head_of_a_slurm_job_holds_its_ports(override: str, key: str, sandbox: Path) -> None:  # noqa: F811
    overrides = [*SLURM, override]
    code, out = _invoke("validate", *overrides)
    assert code == 2, out
    (error,) = [e for e in _errors(out) if e["key"] == key]
    assert "the Ray head of stage train's job" in error["message"], out
    code, after = _invoke("validate", *apply_first_fix(overrides, error))
    assert code == 0, after


def test_other_ports_and_options_are_accepted(sandbox: Path) -> None:  # noqa: F811
    code, out = _invoke("validate", *SLURM, "executor.ray_port=6390", "executor.extra_sbatch=['--qos=high']")
    assert code == 0, out
    # With executor.partition / account null, t3rl writes neither: the pass-through one is the only one.
    code, out = _invoke("validate", *SLURM, "executor.extra_sbatch=['--partition=gpu','--account=lab']")
    assert code == 0, out
