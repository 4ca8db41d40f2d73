"""Hunt wave 5: kinds of wrong configuration no earlier hunt listed, each closed by a declaration:

- a variable of a job's environment that what runs the job owns, that replaces a search list of the
  worker's, or that its reader does not take (launch/checks/rules/job_env.py's table: Ray's RAY_ADDRESS
  and slime's torch.distributed rendezvous refused; PATH and LD_LIBRARY_PATH without `${oc.env:NAME}`
  warned with the extension as the fix; PYTHONHASHSEED outside Python's domain refused, in the train job
  and in a sandbox's cells alike; NCCL_DEBUG, thread counts and NCCL's switches outside theirs warned);
- a container mount as pyxis and enroot take it (t3rl_core.fields.ContainerMount: a source that is a
  path, tmpfs or umount; a target that is neither the container's root nor climbs out of it; flags
  enroot knows), mounts without an image (ReadWhen: nothing reads them), and what a job in a container
  sees (launch/checks/rules/slurm_job.py: the run dir, the checkout and the output dirs mounted at their
  own paths; a relative source is the stage dir's; a missing source; a later mount hiding an earlier);
- sbatch options whose effect reaches past the allocation: `--export` without ALL is every srun's too,
  `--array` runs one stage many times into one dir, `--mem=64` is 64 MB;
- a shell variable in a path (`$SCRATCH/runs`), which nothing expands: the config's `${oc.env:NAME}` is
  the fix;
- a model call's token budget too small for one tool call or one sentence (`rollout_max_response_len=8`,
  8 for 8k; a user simulator's `max_tokens=4`): `CALL_TOKENS` declares a floor on every such field;
- a directory t3rl writes inside the runs it lists (`tracking.dir=runs/tb`, submitit's folder there):
  every read field of the kind OutputDir claims its tree on the ledger, as the paths.* dirs did;
- a sandbox's hidden path over what the cells load code from (`/`, `/usr/lib`, the interpreter's prefix):
  `CoveredPath` refuses it (the private dirs' covers bind the interpreter's trees back; hidden ones do not).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from launch.checks.resolve import resolve
from launch.config.errors import Problem
from tests.support.in_tmp import in_tmp
from tests.support.refusals import errors, fixed

S1 = "+experiment=stage1_bfcl"
RETOOL = "+experiment=retool"
SLURM = [S1, "executor=slurm"]
IMAGE = [*SLURM, "executor.container_image=nvcr.io/nvidia/pytorch:24.07-py3"]


_in_tmp = in_tmp()  # relative paths of the configs resolve in one empty dir


def _warnings(overrides: list[str], key: str) -> list[Problem]:
    return [w for w in resolve(overrides).warnings if w.key == key]


def _warned_with_a_fix_that_clears_it(overrides: list[str], key: str, says: str) -> None:
    found = [w for w in _warnings(overrides, key) if says in w.message]
    assert found, f"no warning at {key} saying {says!r}"
    assert [w for w in _warnings(fixed(overrides, found[0]), key) if says in w.message] == []


def _refused_at_key_with_a_fix_that_validates(overrides: list[str], key: str) -> Problem:
    found = errors(overrides)
    named = [e for e in found if e.key == key]
    assert named, f"not refused at {key}: {[(e.key, e.message) for e in found]}"
    assert errors(fixed(overrides, named[0])) == []
    return named[0]


# ------------------------------------------------------------------------------------ job environments

OWNED = [
    [S1, "+hardware.env_vars.RAY_ADDRESS=auto"],
    [S1, "+hardware.env_vars.MASTER_ADDR=10.0.0.1"],
    [S1, "+hardware.env_vars.MASTER_PORT='29500'"],
    [S1, "+stages.train.hardware.env_vars.RANK='0'"],
]


@pytest.mark.parametrize("overrides", OWNED, ids=[o[-1] for o in OWNED])
def test_a_variable_what_runs_the_job_sets_is_refused(overrides: list[str]) -> None:
    key = overrides[-1].split("=")[0].lstrip("+")
    _refused_at_key_with_a_fix_that_validates(overrides, key)  # was accepted: replaced in every actor


@pytest.mark.parametrize("name", ["PATH", "LD_LIBRARY_PATH"])
def test_a_search_list_replaced_is_warned_about_and_its_extension_is_the_fix(name: str) -> None:
    overrides = [*SLURM, f"+hardware.env_vars.{name}=/opt/tools"]
    _warned_with_a_fix_that_clears_it(overrides, f"hardware.env_vars.{name}", "replaces the worker's own")


def test_a_search_list_extended_is_accepted_without_a_word() -> None:
    overrides = [S1, "+hardware.env_vars.PATH='/opt/tools:${oc.env:PATH}'"]
    assert _warnings(overrides, "hardware.env_vars.PATH") == []


OUT_OF_DOMAIN = [
    [S1, "+hardware.env_vars.PYTHONHASHSEED=abc"],  # every worker's Python refuses to start
    [S1, "+hardware.env_vars.PYTHONHASHSEED='4294967296'"],
    [RETOOL, "+env.sandbox.env.PYTHONHASHSEED=fixed"],  # every cell's
]


@pytest.mark.parametrize("overrides", OUT_OF_DOMAIN, ids=[o[-1] for o in OUT_OF_DOMAIN])
def test_a_value_python_refuses_to_start_on_is_refused(overrides: list[str]) -> None:
    key = overrides[-1].split("=")[0].lstrip("+")
    _refused_at_key_with_a_fix_that_validates(overrides, key)  # was accepted


IGNORED = [
    [S1, "+hardware.env_vars.NCCL_DEBUG=VERBOSE"],
    [S1, "+hardware.env_vars.NCCL_P2P_DISABLE=yes"],
    [RETOOL, "env.sandbox.env.OMP_NUM_THREADS='0'"],  # libgomp ignores it: every core, not one
]


@pytest.mark.parametrize("overrides", IGNORED, ids=[o[-1] for o in IGNORED])
def test_a_value_its_reader_ignores_is_warned_about(overrides: list[str]) -> None:
    key = overrides[-1].split("=")[0].lstrip("+")
    _warned_with_a_fix_that_clears_it(overrides, key, "its reader takes")


def test_a_value_with_white_space_at_its_ends_is_warned_about_or_refused_in_a_domain() -> None:
    overrides = [S1, "+hardware.env_vars.NCCL_SOCKET_IFNAME='eth0 '"]  # names no interface
    _warned_with_a_fix_that_clears_it(overrides, "hardware.env_vars.NCCL_SOCKET_IFNAME", "white space")
    refused = [S1, "+hardware.env_vars.PYTHONHASHSEED='42 '"]  # Python's strtoul stops at the space
    assert _refused_at_key_with_a_fix_that_validates(
        refused, "hardware.env_vars.PYTHONHASHSEED"
    ).fix.endswith("'42'")


def test_values_their_readers_take_are_accepted_without_a_word() -> None:
    overrides = [
        S1,
        "+hardware.env_vars.PYTHONHASHSEED='42'",
        "+hardware.env_vars.NCCL_DEBUG=info",
        "+hardware.env_vars.NCCL_SOCKET_IFNAME=eth0",
        "+hardware.env_vars.NOTE='two words'",
    ]
    assert [w for w in resolve(overrides).warnings if ".env_vars." in w.key] == []
    assert (
        errors([RETOOL, "+env.sandbox.env.PYTHONHASHSEED=random", "env.sandbox.env.OMP_NUM_THREADS='4'"])
        == []
    )


# ---------------------------------------------------------------------------------------- containers

MOUNTS = "executor.container_mounts"
BAD_MOUNTS = [
    "['/data:/']",  # hides the whole image
    "['data:/data']",  # pyxis: a source is a path, tmpfs or umount
    "['/data:data']",
    "['/data:../data']",  # enroot refuses a target out of the container
    "['/data:/data:readonly']",  # no mount option
    "['/data:/data:ro+nosiud']",
]


@pytest.mark.parametrize("mounts", BAD_MOUNTS)
def test_a_mount_pyxis_or_enroot_refuses_is_refused(mounts: str) -> None:
    _refused_at_key_with_a_fix_that_validates([*IMAGE, f"{MOUNTS}={mounts}"], MOUNTS)  # was accepted


def test_a_refused_mount_says_what_was_meant() -> None:
    problem = errors([*IMAGE, f"{MOUNTS}=['/data:/data:ro+nosiud']"])[0]
    assert "/data:/data:ro+nosuid" in problem.message
    problem = errors([*IMAGE, f"{MOUNTS}=['data:/data']"])[0]
    assert f"{Path.cwd() / 'data'}:/data" in problem.message


def test_mounts_without_an_image_are_warned_about() -> None:
    _warned_with_a_fix_that_clears_it([*SLURM, f"{MOUNTS}=['/data:/data']"], MOUNTS, "nothing is mounted")


def _seen(overrides: list[str]) -> list[str]:
    """The command line with the mounts the run-dir warning proposes (what the container must see)."""
    warning = next(w for w in _warnings(overrides, MOUNTS) if "at their own paths" in w.message)
    return fixed(overrides, warning)


def test_a_run_the_container_does_not_see_is_warned_about_with_the_mounts_that_show_it() -> None:
    _warned_with_a_fix_that_clears_it(IMAGE, MOUNTS, "at their own paths")  # was accepted without a word
    over_the_checkout = [*IMAGE, f"{MOUNTS}=['{Path.cwd()}:{Path(__file__).resolve().parents[2]}']"]
    warning = next(w for w in _warnings(over_the_checkout, MOUNTS) if "at their own paths" in w.message)
    assert "puts another directory there" in warning.message


def test_a_relative_or_missing_mount_source_is_warned_about() -> None:
    seen = _seen(IMAGE)
    mounts = seen[-1].split("=", 1)[1].strip("[]").split(",")
    relative = [*seen[:-1], f"{MOUNTS}=[{','.join([*mounts, './:/w'])}]"]
    _warned_with_a_fix_that_clears_it(relative, MOUNTS, "reads a relative source")
    missing = [*seen[:-1], f"{MOUNTS}=[{','.join([*mounts, '/nonexistent/t3rl-wave5:/w'])}]"]
    _warned_with_a_fix_that_clears_it(missing, MOUNTS, "does not exist here")
    assert [w.message for w in _warnings(seen, MOUNTS)] == []  # the mounts shown, nothing else said


def test_a_mount_that_hides_an_earlier_one_is_refused() -> None:
    here = Path.cwd()
    overrides = _seen(IMAGE)
    mounts = overrides[-1].split("=", 1)[1].strip("[]").split(",")
    hiding = [*overrides[:-1], f"{MOUNTS}=[{here / 'sub'}:/x/sub,{here}:/x,{','.join(mounts)}]"]
    (here / "sub").mkdir(exist_ok=True)
    _refused_at_key_with_a_fix_that_validates(hiding, MOUNTS)  # was accepted: /x covers /x/sub


# -------------------------------------------------------------------------------------- sbatch options

SBATCH = "executor.extra_sbatch"


@pytest.mark.parametrize("export", ["--export=NONE", "--export=PATH,HOME"])
def test_an_export_without_all_is_every_sruns_and_is_warned_about(export: str) -> None:
    _warned_with_a_fix_that_clears_it([*SLURM, f"{SBATCH}=['{export}']"], SBATCH, "SLURM_EXPORT_ENV")


def test_an_export_the_setup_undoes_or_with_all_is_accepted_without_a_word() -> None:
    undone = [*SLURM, f"{SBATCH}=['--export=NONE']", "executor.setup=['export SLURM_EXPORT_ENV=ALL']"]
    assert _warnings(undone, SBATCH) == []
    assert _warnings([*SLURM, f"{SBATCH}=['--export=ALL,EXTRA=1']"], SBATCH) == []


def test_an_array_of_one_stage_is_refused() -> None:
    _refused_at_key_with_a_fix_that_validates([*SLURM, f"{SBATCH}=['--array=0-3']"], SBATCH)


def test_a_memory_size_without_a_unit_is_megabytes_and_warned_about() -> None:
    overrides = [*SLURM, f"{SBATCH}=['--mem=64']"]
    _warned_with_a_fix_that_clears_it(overrides, SBATCH, "megabytes")
    assert next(w for w in _warnings(overrides, SBATCH)).fix == f"set {SBATCH}=['--mem=64G']"
    assert _warnings([*SLURM, f"{SBATCH}=['--mem=64G','--mem-per-gpu=80000']"], SBATCH) == []


# ----------------------------------------------------------------------------------- shell variables


@pytest.mark.parametrize("key", ["paths.checkpoints_dir", "model.hf_checkpoint"])
def test_a_shell_variable_in_a_path_is_refused_with_the_configs_reading_of_it(key: str) -> None:
    problem = _refused_at_key_with_a_fix_that_validates([S1, f"{key}='$HOME/t3rl-wave5'"], key)
    assert "use ${oc.env:HOME}/t3rl-wave5" in problem.message  # was accepted: a directory named '$HOME'
    assert errors([S1, f"{key}='${{oc.env:HOME}}/t3rl-wave5'"]) == []


# ------------------------------------------------------------------------------- a call's token budget

TAU2 = "+experiment=tau2_pipeline"
SHORT_CALLS = [
    (
        [S1, "stages.train.curriculum.rollout_max_response_len=8"],
        "stages.train.curriculum.rollout_max_response_len",
    ),
    (["+experiment=stage2_bfcl", "eval.max_new_tokens=4"], "eval.max_new_tokens"),
    ([TAU2, "env.user.max_tokens=4"], "env.user.max_tokens"),  # the user simulator's reply
]


@pytest.mark.parametrize(("overrides", "key"), SHORT_CALLS, ids=[o[-1] for o, _ in SHORT_CALLS])
def test_a_call_budget_below_one_tool_call_is_warned_about(overrides: list[str], key: str) -> None:
    _warned_with_a_fix_that_clears_it(overrides, key, "below the usual at least 16")  # was accepted


def test_a_smoke_runs_short_calls_are_accepted_without_a_word() -> None:
    assert _warnings([TAU2, "env.user.max_tokens=16"], "env.user.max_tokens") == []
    assert [w for w in resolve(["+experiment=quickstart"]).warnings if "max_new_tokens" in w.key] == []


# ------------------------------------------------------------------ directories inside the listed trees

IN_A_LISTED_TREE = [
    ([S1, "tracking=tensorboard", "tracking.dir=runs/tb"], "tracking.dir"),
    ([S1, "tracking=wandb", "tracking.dir=plans"], "tracking.dir"),
]


@pytest.mark.parametrize(("overrides", "key"), IN_A_LISTED_TREE, ids=[o[-1] for o, _ in IN_A_LISTED_TREE])
def test_a_directory_t3rl_writes_inside_the_runs_it_lists_is_refused(overrides: list[str], key: str) -> None:
    _refused_at_key_with_a_fix_that_validates(overrides, key)  # was accepted: taken for a run or a plan


def test_submitits_folder_inside_the_runs_is_refused() -> None:
    folder = Path.cwd() / "runs" / "slurm"  # absolute: a SharedOutputDir is read on the nodes too
    _refused_at_key_with_a_fix_that_validates([*SLURM, f"executor.folder={folder}"], "executor.folder")


def test_a_directory_beside_the_listed_trees_or_unread_is_not_refused() -> None:
    assert errors([S1, "tracking=tensorboard", "tracking.dir=tb"]) == []
    assert errors([S1, "tracking=none", "tracking.dir=runs"]) == []  # no tracker writes it (warned as unread)


# ------------------------------------------------------------------------------- a sandbox's hidden paths


@pytest.mark.parametrize("hidden", ["/", "/usr/lib", "PREFIX"])
def test_a_hidden_path_over_what_cells_load_code_from_is_refused(hidden: str) -> None:
    path = str(Path(sys.prefix).resolve().parent) if hidden == "PREFIX" else hidden
    overrides = [RETOOL, f"env.sandbox.hidden_paths=['~/.ssh','{path}']"]
    _refused_at_key_with_a_fix_that_validates(overrides, "env.sandbox.hidden_paths")  # was accepted


def test_hidden_paths_beside_the_code_and_private_dirs_over_it_are_accepted() -> None:
    assert errors([RETOOL, "env.sandbox.hidden_paths=['~/.ssh','/usr/share/doc']"]) == []
    assert errors([RETOOL, f"env.sandbox.private_dirs=['/tmp','{Path(sys.prefix).resolve().parent}']"]) == []
