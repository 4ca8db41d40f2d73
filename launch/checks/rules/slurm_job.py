"""What a SLURM job of the run sees, from its sbatch options and its container (called by the rule registry
for a slurm or ray executor only: `launch.checks.rules._on_a_cluster`; every rule here is SLURM's).

The job script (launch/run/executors/sbatch.py) exports the stage's variables, then runs every step
(`ray start` on each node, the stage's command file) through `srun`, inside `executor.container_image`
when one is set. Hence:

- **A container sees only what is mounted into it.** The stage's command file and outputs lie in the
  run dir, its code in this checkout (the job's PYTHONPATH), its checkpoints and caches in the output
  dirs (`OutputDir` fields): each must appear in the container at its own path, through a mount
  `SRC:DST` with SRC = DST above it. One that does not is not found (the command file: the stage fails
  at once), or is written into the container's own file system, which pyxis removes with the step (the
  checkpoints: lost without a word). A warning: enroot's own mounts (its mounts.d) or pyxis's home mount
  may cover it. A mount's relative source is the stage's directory's (srun starts there), and an
  absolute one missing here is likely missing on the nodes, which see the storage this machine does
  (warnings); a mount onto an ancestor of an earlier mount's target hides that mount (pyxis mounts in
  order): refused, parents first the fix.
- **sbatch options with side effects** (`executor.extra_sbatch`): an `--export` without ALL is also set
  for every `srun` of the job (sbatch sets SLURM_EXPORT_ENV, which srun reads), so neither the script's
  own exports nor this environment (the venv's PATH, credentials) reach any step (a warning, unless a
  setup line sets SLURM_EXPORT_ENV); `--array` runs the one stage as many times at once into one stage
  dir (refused); a memory size without a unit is megabytes to SLURM (`--mem=64` is 64 MB: a warning,
  gigabytes the fix).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from launch.checks.context import Context
from launch.checks.rules.local_dirs import fields_of_kind
from launch.config.errors import Problem
from launch.config.fixes import list_override
from launch.config.schema import SlurmExecutorConfig
from t3rl_core.fields import mount_parts

MOUNTS, SBATCH = "executor.container_mounts", "executor.extra_sbatch"
# This checkout: the job's PYTHONPATH names it (launch.plan.slime_args.job_env).
CHECKOUT = str(Path(__file__).resolve().parents[3])
# Output dirs the launcher alone writes, from this machine (never from a job).
_NOT_THE_JOBS = ("paths.plans_dir", "executor.folder")
# sbatch's memory options; SLURM reads a size without a unit as megabytes.
_MEMORY = ("--mem", "--mem-per-cpu", "--mem-per-gpu")
# Below this many megabytes, a size without a unit is gigabytes meant: no GPU job runs in less.
_LEAST_MB = 1024


def _absolute(path: str) -> str:
    return os.path.normpath(os.path.abspath(os.path.expanduser(path)))


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _visible(path: str, mounts: list[str]) -> str | None:
    """None when the last mount whose target holds `path` maps it to itself; else why it is not seen."""
    covering = [(src, dst) for src, dst, _ in map(mount_parts, mounts) if _under(path, os.path.normpath(dst))]
    if not covering:
        return "no mount of executor.container_mounts holds it"
    src, dst = max(covering, key=lambda m: len(os.path.normpath(m[1])))
    if src.startswith("/") and os.path.normpath(src) == os.path.normpath(dst):
        return None
    return f"the mount {src}:{dst} puts another directory there"


def _nearest_existing(path: str) -> str:
    """`path`, or its nearest ancestor that exists here when it does not (a mount's source must exist);
    never the root (a mount onto / is refused)."""
    for candidate in (Path(path), *Path(path).parents):
        if candidate.exists():
            return str(candidate) if str(candidate) != "/" else path
    return path


def _read_in_the_container(ctx: Context) -> dict[str, str]:
    """Dotted key (or what it is) → absolute dir, of every dir the job reads or writes at its own path."""
    dirs = {"t3rl's checkout (the job's PYTHONPATH)": CHECKOUT}
    for key, value, _ in fields_of_kind(ctx.run, "output dir"):
        if key not in _NOT_THE_JOBS:
            dirs[key] = _absolute(value)
    if ctx.record_dir is not None:
        dirs["the run dir"] = _absolute(ctx.record_dir)
    return dirs


def container_sees_the_run(ctx: Context) -> Iterator[Problem]:
    """Under a container, the dirs the job reads and writes at their own paths are mounted there."""
    slurm = ctx.run.executor
    if not isinstance(slurm, SlurmExecutorConfig) or slurm.container_image is None:
        return
    mounts = list(slurm.container_mounts)
    unseen = {
        what: (path, why)
        for what, path in _read_in_the_container(ctx).items()
        if (why := _visible(path, mounts))
    }
    if not unseen:
        return
    wanted = sorted({_nearest_existing(path) for path, _ in unseen.values()})
    added = [p for p in wanted if not any(_under(p, q) for q in wanted if q != p)]
    by_why: dict[str, list[str]] = {}
    for what, (path, why) in unseen.items():
        by_why.setdefault(why, []).append(f"{what} ({path})")
    listed = "; ".join(f"{', '.join(whats)}: {why}" for why, whats in by_why.items())
    yield Problem(
        MOUNTS,
        f"the steps run in {slurm.container_image}, which sees only what is mounted into it, but not these "
        f"at their own paths: {listed}. The stage would not find its command file or code, and would "
        "write its outputs into the container, which pyxis removes after each step",
        fix=f"set {list_override(MOUNTS, [*mounts, *added])} (unless enroot's own mounts hold them)",
        severity="warning",
    )


def mount_sources_exist(ctx: Context) -> Iterator[Problem]:
    """A mount's relative source is the stage dir's; an absolute one missing here is likely missing on the
    nodes too (warnings); a mount onto an ancestor of an earlier target hides it (refused)."""
    slurm = ctx.run.executor
    if not isinstance(slurm, SlurmExecutorConfig) or slurm.container_image is None:
        return
    mounts = list(slurm.container_mounts)
    for index, mount in enumerate(mounts):
        source, target, _ = mount_parts(mount)
        if source.startswith("."):
            meant = mount.replace(source, _absolute(source), 1)
            yield Problem(
                MOUNTS,
                f"{mount}: pyxis reads a relative source from where srun starts, each stage's own dir under "
                f"the run dir, not from the directory t3rl is started in",
                fix=f"set {list_override(MOUNTS, [*mounts[:index], meant, *mounts[index + 1 :]])}",
                severity="warning",
            )
        elif source.startswith("/") and not os.path.exists(source):
            yield Problem(
                MOUNTS,
                f"{mount}: {source} does not exist here, and the job's nodes see the storage this machine "
                "does: pyxis fails the step that mounts it",
                fix=f"set {list_override(MOUNTS, mounts[:index] + mounts[index + 1 :])}, or create {source}",
                severity="warning",
            )
        hidden = [
            m for m in mounts[:index] if _under(os.path.normpath(mount_parts(m)[1]), os.path.normpath(target))
        ]
        if hidden:
            ordered = sorted(mounts, key=lambda m: os.path.normpath(mount_parts(m)[1]).count("/"))
            yield Problem(
                MOUNTS,
                f"{mount} is mounted onto {target}, above the earlier {', '.join(hidden)}: pyxis mounts in "
                "order, so it hides them",
                fix=f"set {list_override(MOUNTS, ordered)} (parents first)",
            )


def _option(option: str) -> tuple[str, str]:
    name, _, value = option.partition("=")
    return name, value


def sbatch_side_effects(ctx: Context) -> Iterator[Problem]:
    """sbatch options whose effect reaches past the allocation (module docstring)."""
    slurm = ctx.run.executor
    if not isinstance(slurm, SlurmExecutorConfig):
        return
    extra = list(slurm.extra_sbatch)
    for index, option in enumerate(extra):
        name, value = _option(option)
        without = [*extra[:index], *extra[index + 1 :]]
        if name == "--export" and "ALL" not in value.split(",") and not _sets_export_env(slurm.setup):
            yield Problem(
                SBATCH,
                f"{option}: sbatch also sets SLURM_EXPORT_ENV={value} in the job, and every srun of it reads "
                "that: the steps (ray start, the stage's commands) get neither the variables the job script "
                "exports nor this environment (the venv's PATH, credentials)",
                fix=f"set {list_override(SBATCH, without)}, or a setup line 'export SLURM_EXPORT_ENV=ALL'",
                severity="warning",
            )
        elif name in ("--array", "-a"):
            yield Problem(
                SBATCH,
                f"{option}: an array runs the stage's job script once per task, all at once, into the one "
                "stage dir (the same checkpoints, the same outputs); a sweep is t3rl run -m",
                fix=f"set {list_override(SBATCH, without)}",
            )
        elif name in _MEMORY and re.fullmatch(r"\d+", value) and 0 < int(value) < _LEAST_MB:
            yield Problem(
                SBATCH,
                f"{option}: SLURM reads a size without a unit as megabytes, so the job gets {value} MB",
                fix=f"set {list_override(SBATCH, [*extra[:index], f'{name}={value}G', *extra[index + 1 :]])}",
                severity="warning",
            )


def _sets_export_env(setup: list[str]) -> bool:
    return any("SLURM_EXPORT_ENV" in line for line in setup)


RULES = (container_sees_the_run, mount_sources_exist, sbatch_side_effects)
