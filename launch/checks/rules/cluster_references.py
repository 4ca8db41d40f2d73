"""What can be told from here about the references a job on the cluster reads (warnings: the job's node is
not this machine, so none of it is certain).

- SLURM: sbatch gives a job the environment it was submitted from (t3rl's scripts export no secret,
  launch/run/executors/sbatch.py), so an `env:NAME` credential unset here is unset in the job too, unless
  a line of `executor.setup` names it; and under an `--export` of `executor.extra_sbatch` that lists
  neither ALL nor NAME (`--export=NONE`), it is unset in the job whether or not it is set here. A
  `file:` credential is read on the job's node, which shares the file systems of the machine that
  submits (home, project storage), so an absolute path missing here is likely missing there too.
- SLURM and Ray: a path under a node-local directory (/tmp, /var/tmp, /dev/shm, /run) is another
  directory on every node, whether a credential file or a path a stage reads or writes (`paths.*`, a
  checkpoint, data): what the prepare stage writes there, the train stage's node does not see. Only a path
  written absolute is judged; a relative one is read from the job's own directory.
Ray expands an `env:` credential from the cluster's own environment (launch/run/executors/ray_jobs.py):
not judged. What a stage run here reads is probed for certain (`kinds.references_resolve_here`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import PurePosixPath

from launch.checks.context import Context
from launch.checks.eval_configs import eval_configs, eval_key
from launch.checks.rules.local_dirs import fields_of_kind
from launch.config.errors import Problem
from launch.config.fixes import quoted
from launch.config.secrets import secret_references
from t3rl_core.secret import Secret

# Directories each node has its own of (tmpfs or a local disk), never a cluster's shared storage.
NODE_LOCAL = ("/tmp", "/var/tmp", "/dev/shm", "/run")
# Path kinds a stage reads or writes where it runs (t3rl_core.fields).
_PATH_KINDS = ("path", "output dir", "model dir", "model reference", "cluster path")


def node_local(path: str) -> str | None:
    """The node-local directory an absolute `path` lies under, or None."""
    path_parts = PurePosixPath(os.path.normpath(path)).parts
    for root in NODE_LOCAL:
        parts = PurePosixPath(root).parts
        if path_parts[: len(parts)] == parts:
            return root
    return None


def references_read_on_the_cluster(ctx: Context) -> Iterator[Problem]:
    """A credential a job on the cluster reads that is missing here or lies on a node's own disk (called
    by the rule registry for a slurm or ray executor only: `launch.checks.rules._on_a_cluster`)."""
    executor = ctx.run.executor
    for key, secret in _cluster_secrets(ctx).items():
        why = _unseen(secret, executor.kind, executor)
        if why is not None:
            yield Problem(
                key,
                f"{key}={secret.reference}: {why}; the job fails when its stage reads it, after the stages "
                "before it ran",
                fix=f"set {key}=null if the server takes no key; or {_remedy(secret, executor)}",
                severity="warning",
            )
    for kind in _PATH_KINDS:
        for key, value, default in fields_of_kind(ctx.run, kind):
            root = node_local(value) if value.startswith("/") else None
            if root is not None:
                shared = isinstance(default, str) and not (default.startswith("/") and node_local(default))
                yield Problem(
                    key,
                    f"{key}={value} is under {root}, which each node of a {executor.kind} cluster has its "
                    "own of: what one stage's node writes or finds there, another's does not see",
                    fix=(f"set {key}={quoted(default)} (its default), or " if shared else f"set {key} to ")
                    + "a path on storage the nodes share (your home, the project's storage)",
                    severity="warning",
                )


def _cluster_secrets(ctx: Context) -> dict[str, Secret]:
    """Key → reference of every credential a job on the cluster reads: every one under SLURM; under Ray
    the train stages' (every section but eval), and the evals' too under `other_stages: ray`."""
    found = {}
    if not ctx.stages_run_here:
        for stage, config, overrides in eval_configs(ctx.run):
            for field, secret in secret_references(config):
                found[eval_key(stage, overrides, field)] = secret
    for name in type(ctx.run).model_fields:
        if name != "eval":
            found.update(secret_references(getattr(ctx.run, name), name))
    return found


def _unseen(secret: Secret, kind: str, executor: object) -> str | None:
    if secret.kind == "env":
        setup = " ".join(getattr(executor, "setup", ()))
        if kind != "slurm" or secret.target in setup:
            return None
        exported = _exported(getattr(executor, "extra_sbatch", ()))
        if exported is not None and secret.target not in exported:
            passed = f" but {', '.join(sorted(exported))}" if exported else ""
            return (
                f"executor.extra_sbatch's --export passes the job none of this environment{passed}, so "
                f"{secret.target} is unset in the job"
            )
        if os.environ.get(secret.target):
            return None
        return (
            f"environment variable {secret.target} is not set here, and sbatch gives the job the "
            "environment it is submitted from"
        )
    path = os.path.expanduser(secret.target)
    root = node_local(path) if path.startswith("/") else None
    if root is not None:
        return f"{path} is under {root}, which the job's node has its own of"
    if kind == "slurm" and path.startswith("/") and not os.path.isfile(path):
        return f"{path} is not a file here, and the job's node sees the storage this machine does"
    return None


def _exported(extra_sbatch: Sequence[str]) -> frozenset[str] | None:
    """The variables an sbatch `--export` passes the job (its NAME or NAME=value items), or None for all
    of the submitting environment (no --export, or one listing ALL: sbatch's default)."""
    items = [option.partition("=")[2] for option in extra_sbatch if option.startswith("--export=")]
    if not items:
        return None
    names = [item.partition("=")[0] for item in items[-1].split(",")]  # sbatch keeps the last
    return None if "ALL" in names else frozenset(n for n in names if n not in ("NONE", "NIL"))


def _remedy(secret: Secret, executor: object) -> str:
    if secret.kind == "env" and _exported(getattr(executor, "extra_sbatch", ())) is not None:
        return f"name {secret.target} in executor.extra_sbatch's --export"
    if secret.kind == "env":
        return f"export {secret.target}=<the credential> before the command"
    return "keep the file on storage the nodes share (your home, the project's storage)"


RULES = (references_read_on_the_cluster,)
