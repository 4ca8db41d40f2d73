"""executor=ray: run stages as jobs on an existing Ray cluster through Ray's Job Submission API.

A train stage carries its slime submission as data (`Stage.slime_job`): the job's entrypoint is
`python3 train.py <argv>` (what `ray job submit … --` would run), its runtime env the job's env vars
(PYTHONPATH, CUDA_DEVICE_MAX_CONNECTIONS, tracking, …) plus `executor.working_dir` when set. Before
anything is submitted the cluster's live nodes are counted through Ray's state API on the dashboard:
fewer GPUs (or GPU nodes) than the stage's topology asks for is a clear error, and nothing runs.
Multi-node layouts need nothing else here: slime's `--actor-num-nodes` / `--rollout-num-gpus` in the
argv describe the whole cluster, and slime's placement groups spread the actors over it.

Resume: the submission id (`t3rl-<run>-<stage>-<n>`, n = the first number the cluster does not
know) is written to `stages/<name>/ray_job.json` before submitting, so a rerun asks the cluster
about it — even after a crash between the two: a pending or running job is re-attached (its log
followed again), a succeeded one is taken as is, a failed or stopped one is submitted again as a new
attempt.

Logs: Ray streams a job's whole log on every attach. `stages/<name>/ray/<submission id>.log` keeps it
complete (masked line by line, as `log.txt`); the stage's `log.txt` gets only what that file did not
have yet, so a re-attached log has every line once. Ctrl-C stops the job (`stop_job`), waits up to
`stop_grace_s` for it to end, then lets KeyboardInterrupt through (the pipeline records the stage as
stopped).

Pre-flight: the plugin modules a cluster stage imports (`Stage.imports`) are imported by a short probe
job with that stage's runtime env before anything runs, so a plugin the job does not carry fails in
seconds.

Other stages (prepare/convert/eval): `other_stages: local` (default) runs them on this machine with
the local executor — this machine must see the cluster's storage, as the train job reads their
outputs; `other_stages: ray` submits their command.sh body as a `bash -c` job (entrypoint GPUs = the
stage's), for when everything must run on the cluster.

Secrets never leave this machine: a train job's env names secret variables as `${NAME}` (slime_args.job_env),
which Ray expands from the cluster's own environment. Ray is imported lazily.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from launch.checks.import_probe import probe_argv, probe_failures
from launch.config.errors import ConfigError, Problem
from launch.config.ray_address import with_scheme
from launch.config.schema import LocalExecutorConfig, RayExecutorConfig
from launch.config.secrets import scrub_text
from launch.plan.secret_uploads import with_upload_excludes
from launch.plan.stages import Stage
from launch.run.executors import records
from launch.run.executors.base import Executor, StageContext, StageResult
from t3rl_core.secret_shapes import PemLines

JOB_RECORD = "ray_job.json"
# Seconds a plugin import probe may take (Ray sets up its runtime env, uploads py_modules, imports).
PROBE_TIMEOUT_S = 300.0
# Seconds a probe waits for a freshly started cluster's job agent ("No available agent … try again later").
AGENT_WAIT_S = 60.0
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})


def dashboard_address(config: RayExecutorConfig, environ: Mapping[str, str] | None = None) -> str:
    """The cluster's dashboard URL: `executor.address`, else $RAY_ADDRESS."""
    env = os.environ if environ is None else environ
    address = config.address or env.get("RAY_ADDRESS")
    if not address:
        raise ConfigError(
            [
                Problem(
                    key="executor.address",
                    message="executor=ray needs the Ray cluster's dashboard address",
                    fix="pass executor.address=http://<head>:8265 or export RAY_ADDRESS",
                )
            ]
        )
    return with_scheme(address)


def check_cluster(address: str, gpus: int, nodes: int, list_nodes: Callable[..., Any] | None = None) -> None:
    """Fail before submitting when the live cluster has fewer GPUs or GPU nodes than a stage needs."""
    if gpus <= 0:
        return
    per_node = _live_node_gpus(address, list_nodes)
    total, gpu_nodes = sum(per_node), sum(g > 0 for g in per_node)
    if total >= gpus and gpu_nodes >= nodes:
        return
    raise ConfigError(
        [
            Problem(
                key="hardware",
                message=(
                    f"the Ray cluster at {address} has {total:g} GPU(s) on {gpu_nodes} GPU node(s) "
                    f"({len(per_node)} live node(s)); this stage needs {gpus} GPU(s) on {nodes} node(s)"
                ),
                fix="add GPU nodes to the cluster, or pick a hardware config that fits it (t3rl ls hardware)",
            )
        ]
    )


def cluster_gpus(address: str, list_nodes: Callable[..., Any] | None = None) -> int:
    """The GPUs of the live cluster's nodes (how many a sweep's points may hold at once)."""
    return int(sum(_live_node_gpus(address, list_nodes)))


def _live_node_gpus(address: str, list_nodes: Callable[..., Any] | None) -> list[float]:
    """The GPUs of each live node of the cluster; a ConfigError naming the address when unreachable."""
    if list_nodes is None:
        from ray.util.state import list_nodes  # lazy: ray, only with a Ray cluster
    try:
        alive = list_nodes(address=address, filters=[("state", "=", "ALIVE")], detail=True)
    except Exception as error:  # the state API raises plain exceptions for connection problems
        raise ConfigError(
            [
                Problem(
                    key="executor.address",
                    message=f"cannot reach the Ray dashboard at {address}: {error}",
                    fix="start the cluster (ray start --head) or correct executor.address",
                )
            ]
        ) from None
    return [float(n.resources_total.get("GPU", 0)) for n in alive]


@dataclass
class JobRecord:
    """`stages/<name>/ray_job.json`: which cluster job a stage is."""

    submission_id: str
    attempt: int
    address: str
    submitted_at: float
    status: str = "PENDING"


def read_record(stage_dir: Path) -> JobRecord | None:
    return records.read_record(stage_dir / JOB_RECORD, JobRecord)


def run_key(run_dir: Path) -> str:
    """A submission-id-safe name of a run dir, unique per path."""
    digest = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:8]
    name = "".join(c if c.isalnum() or c in "-_" else "-" for c in f"{run_dir.parent.name}-{run_dir.name}")
    return f"{name}-{digest}"


@dataclass(frozen=True)
class JobSpec:
    """One Ray job as the SDK takes it."""

    entrypoint: str
    runtime_env: Mapping[str, Any]
    entrypoint_num_gpus: float | None = None


class RayJobRunner:
    """Submits or re-attaches one stage's job, follows its log, returns its final Ray status."""

    def __init__(
        self, address: str, *, stop_grace_s: float = 30.0, client: Any = None, out: TextIO | None = None
    ) -> None:
        if client is None:
            from ray.job_submission import JobSubmissionClient  # lazy: ray, only with a Ray cluster

            client = JobSubmissionClient(address)
        self.address = address
        self.client = client
        self.stop_grace_s = stop_grace_s
        # The terminal, which sees the job's log as it comes (as with the local executor).
        self.out = out

    def run(
        self,
        job: JobSpec,
        *,
        key: str,
        stage: str,
        stage_dir: Path,
        log: TextIO,
        on_job: Callable[[str], None] = lambda job_id: None,
    ) -> str:
        record = self._attach_or_submit(job, key, stage, stage_dir)
        on_job(record.submission_id)
        try:
            status = self._follow(record.submission_id, stage_dir, log)
        except KeyboardInterrupt:
            self.client.stop_job(record.submission_id)
            record.status = self._wait(record.submission_id, timeout=self.stop_grace_s)
            records.write_record(stage_dir / JOB_RECORD, record)
            raise
        record.status = status
        records.write_record(stage_dir / JOB_RECORD, record)
        return status

    def probe(self, job: JobSpec, timeout: float) -> tuple[str, str]:
        """Run a short job to its end (stopped after `timeout` seconds); its log, masked as a whole
        before any line of it is quoted (a private key's last line has no form of its own), and its
        final status."""
        deadline = time.monotonic() + AGENT_WAIT_S
        while True:
            try:
                job_id = self.client.submit_job(entrypoint=job.entrypoint, runtime_env=dict(job.runtime_env))
                break
            except RuntimeError as err:  # a cluster just started has no job agent yet: Ray says so
                if "try again later" not in str(err) or time.monotonic() > deadline:
                    raise
                time.sleep(1.0)
        status = self._wait(job_id, timeout)
        if status not in TERMINAL:
            self.client.stop_job(job_id)
        return scrub_text(self.client.get_job_logs(job_id)), status

    def message(self, job_id: str) -> str:
        return scrub_text(self.client.get_job_info(job_id).message or "")

    def _attach_or_submit(self, job: JobSpec, key: str, stage: str, stage_dir: Path) -> JobRecord:
        previous = read_record(stage_dir)
        attempt = 1
        if previous is not None:
            status = self.status(previous.submission_id)
            if status is not None and status not in ("FAILED", "STOPPED"):
                return previous  # pending, running or succeeded: never submitted twice
            attempt = previous.attempt + 1
        # Ids the cluster already knows belong to earlier executions (e.g. of a superseded stage dir).
        while self.status(f"t3rl-{key}-{stage}-{attempt}") is not None:
            attempt += 1
        record = JobRecord(f"t3rl-{key}-{stage}-{attempt}", attempt, self.address, time.time())
        # Recorded before submitting: a crash in between leaves an id the next run can ask about.
        records.write_record(stage_dir / JOB_RECORD, record)
        self.client.submit_job(
            entrypoint=job.entrypoint,
            submission_id=record.submission_id,
            runtime_env=dict(job.runtime_env),
            entrypoint_num_gpus=job.entrypoint_num_gpus,
            metadata={"t3rl_run": key, "t3rl_stage": stage},
        )
        return record

    def status(self, job_id: str) -> str | None:
        try:
            return str(self.client.get_job_status(job_id).value)
        except RuntimeError:  # the SDK's "job does not exist"
            return None

    def _follow(self, job_id: str, stage_dir: Path, log: TextIO) -> str:
        """Copy the job's log until it ends (re-attaching should the stream drop first); its status."""
        full = stage_dir / "ray" / f"{job_id}.log"
        full.parent.mkdir(parents=True, exist_ok=True)
        pem = PemLines()
        while True:
            copy = _LogCopy(full, log, self.out, pem)
            if self.status(job_id) in TERMINAL:
                # A finished job's log in one call (tailing it would wait on a closed stream).
                copy.feed(self.client.get_job_logs(job_id))
            else:
                asyncio.run(self._tail(job_id, copy))
            status = self._wait(job_id, timeout=5.0)
            if status in TERMINAL:
                copy.finish()
                return status

    async def _tail(self, job_id: str, copy: _LogCopy) -> None:
        async for chunk in self.client.tail_job_logs(job_id):
            copy.feed(chunk)

    def _wait(self, job_id: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            status = self.status(job_id) or "FAILED"
            if status in TERMINAL or time.monotonic() >= deadline:
                return status
            time.sleep(0.5)


class _LogCopy:
    """Ray replays a job's log from its start on every attach: pass on only what was not copied yet.

    The log is masked a whole line at a time (a token a chunk cut in two, a private key printed over
    lines: `pem` carries over re-attaches), into the stage's log, the terminal and `full` alike. As
    masking changes lengths, how many of the job's own bytes `full` holds is kept beside it
    (`<submission id>.log.bytes`); a line without its end yet is copied once it ends, or at `finish`."""

    def __init__(self, full: Path, log: TextIO, out: TextIO | None, pem: PemLines) -> None:
        self.full = full
        self.count = full.with_name(full.name + ".bytes")
        self.log = log
        self.out = out
        self.pem = pem
        self.have = _bytes_copied(full, self.count)
        self.position = 0
        self.pending = b""

    def feed(self, chunk: str) -> None:
        data = chunk.encode()
        start, self.position = self.position, self.position + len(data)
        taken = self.have + len(self.pending)
        if self.position <= taken:
            return
        self.pending += data[max(0, taken - start) :]
        self._copy(self.pending.rfind(b"\n") + 1)

    def finish(self) -> None:
        """The job ended: its last line too, though it has no end."""
        self._copy(len(self.pending))

    def _copy(self, end: int) -> None:
        if end <= 0:
            return
        lines = self.pending[:end].decode(errors="replace").splitlines(keepends=True)
        self.pending = self.pending[end:]
        masked = "".join(self.pem(scrub_text(line)) for line in lines)
        with self.full.open("a") as out:
            out.write(masked)
        self.have += end
        self.count.write_text(str(self.have))
        for stream in (self.log, self.out):
            if stream is not None:
                stream.write(masked)
                stream.flush()


def _bytes_copied(full: Path, count: Path) -> int:
    """How many bytes of the job's log `full` holds (a run dir from before the count: its size)."""
    try:
        return int(count.read_text())
    except (OSError, ValueError):
        return full.stat().st_size if full.exists() else 0


class RayExecutor(Executor):
    """Train stages (and with `other_stages: ray` all stages) as jobs on an existing Ray cluster."""

    def __init__(self, config: RayExecutorConfig | None = None, out: TextIO | None = None) -> None:
        self.config = config or RayExecutorConfig()
        self.out = out if out is not None else sys.stdout
        self._runner: RayJobRunner | None = None
        self._checked = False

    def runner(self) -> RayJobRunner:
        if self._runner is None:
            address = dashboard_address(self.config)
            self._runner = RayJobRunner(address, stop_grace_s=self.config.stop_grace_s, out=self.out)
        return self._runner

    def on_cluster(self, stage: Stage) -> bool:
        return stage.slime_job is not None or self.config.other_stages == "ray"

    def passes_environment(self, stage: Stage) -> bool:
        """A job on the cluster runs in the cluster's environment with the runtime env t3rl gives it."""
        return not self.on_cluster(stage)

    def preflight(self, stages: Sequence[Stage]) -> list[str]:
        """The stages that run here as the local executor checks them (the cluster's own paths cannot be
        seen from this machine); for the cluster's stages, their plugin modules are imported by a short
        Ray job with the stage's own runtime env (the packages it carries included)."""
        local = super().preflight([stage for stage in stages if not self.on_cluster(stage)])
        return [*local, *self._cluster_imports([s for s in stages if self.on_cluster(s) and s.imports])]

    def _cluster_imports(self, stages: Sequence[Stage]) -> list[str]:
        lines = []
        for stage in stages:
            assert stage.imports is not None
            modules = stage.imports.modules
            spec = self.job_spec(stage)
            if stage.slime_job is not None:
                python, runtime_env = stage.slime_job.python, dict(spec.runtime_env)
            else:
                path = {"PYTHONPATH": stage.imports.pythonpath} if stage.imports.pythonpath else {}
                python, runtime_env = stage.imports.python, {**spec.runtime_env, "env_vars": path}
            probe = JobSpec(shlex.join(probe_argv(python, modules)), runtime_env)
            try:
                output, status = self.runner().probe(probe, PROBE_TIMEOUT_S)
            except Exception as exc:  # an unreachable cluster is a pre-flight finding too
                lines.append(f"cannot check {stage.name}'s plugin imports on the Ray cluster: {exc}")
                continue
            otherwise = f"the probe job ended {status}: {(output.strip().splitlines() or [''])[-1]}"
            for module, error in probe_failures(output, modules, otherwise).items():
                lines.append(
                    f"plugin module {module} does not import on the Ray cluster (stage {stage.name}): {error}"
                )
        return lines

    def run_stage(self, stage: Stage, ctx: StageContext) -> StageResult:
        if not self._checked:
            # Before the first stage of the run (even a local one): the cluster must fit every Ray stage.
            ray_stages = [s for s in ctx.plan.stages if self.on_cluster(s)]
            if ray_stages:
                biggest = max(ray_stages, key=lambda s: (s.gpus, s.nodes))
                check_cluster(self.runner().address, biggest.gpus, max(s.nodes for s in ray_stages))
            self._checked = True
        if not self.on_cluster(stage):
            # lazy: the local executor (psutil), only for stages run here
            from launch.run.executors.local import LocalExecutor

            local = LocalExecutor(LocalExecutorConfig(stop_grace_s=self.config.stop_grace_s), out=self.out)
            return local.run_stage(stage, ctx)
        job = self.job_spec(stage)
        runner = self.runner()
        ctx.log_file.parent.mkdir(parents=True, exist_ok=True)
        with ctx.log_file.open("a", encoding="utf-8") as log:
            log.write(f"\n===== t3rl: stage {stage.name}, attempt {ctx.attempt}, on {runner.address} =====\n")
            log.flush()
            status = runner.run(
                job,
                key=run_key(ctx.run_dir),
                stage=stage.name,
                stage_dir=ctx.stage_dir,
                log=log,
                on_job=lambda job_id: ctx.on_started({"ray_job": job_id, "address": runner.address}),
            )
        record = read_record(ctx.stage_dir)
        job_id = record.submission_id if record else "?"
        if status == "SUCCEEDED":
            return StageResult("succeeded", 0, f"Ray job {job_id}")
        if status == "STOPPED":
            return StageResult("stopped", None, f"Ray job {job_id} was stopped")
        return StageResult(
            "failed", 1, f"Ray job {job_id} failed: {runner.message(job_id)}; see {ctx.log_file}"
        )

    def stop_stale(self, stage: Stage, handle: dict[str, Any]) -> str | None:
        """A job left by a dead t3rl process keeps running: run_stage re-attaches to it."""
        job = handle.get("ray_job")
        return f"Ray job {job} outlived the previous t3rl process; re-attaching to it" if job else None

    def job_spec(self, stage: Stage) -> JobSpec:
        """The SDK submission of a stage: slime's entrypoint, or the stage's script under bash."""
        working_dir = {"working_dir": self.config.working_dir} if self.config.working_dir else {}
        if stage.slime_job is not None:
            job = stage.slime_job
            runtime_env = with_upload_excludes({**job.runtime_env(), **working_dir})
            return JobSpec(shlex.join(job.entrypoint), runtime_env)
        gpus = float(stage.gpus) if stage.gpus else None
        script = shlex.join(["bash", "-c", stage.script()])
        return JobSpec(script, with_upload_excludes(working_dir), entrypoint_num_gpus=gpus)
