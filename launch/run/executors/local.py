"""The local executor: each stage's command.sh as a subprocess here, its output live on the terminal
and in log.txt; a Ray head of its own around stages that need one.

Each stage runs in a new session (its own process group), so that on Ctrl-C, on a failing command,
and after the stage ends, everything it started can be stopped as one: SIGTERM to the group, then
SIGKILL to whatever is left after `stop_grace_s`. Nothing a stage starts outlives it. If t3rl itself
is killed (SIGKILL, a lost terminal), the group's identity is in the stage's record, and the next
run of the run dir stops the leftovers before running the stage again.
"""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import psutil

from launch.config.schema import LocalExecutorConfig
from launch.config.secrets import scrub_text, secret_values
from launch.plan.ray_head import RayHead
from launch.plan.stages import Stage
from launch.run.executors.base import Executor, StageContext, StageResult, exit_recording
from launch.run.exit_meaning import ATTEMPT_HEADER, failed_exit_message
from launch.run.rundir import now
from launch.run.secret_sink import SecretSink
from launch.run.stage_progress import LiveStageOutput
from t3rl_core.secret_shapes import PemLines

Handle = dict[str, Any]
# Every process of a stage's command carries its execution's id: found and stopped by a resume even
# when t3rl was killed before it recorded the process group.
STAGE_RUN_ENV = "T3RL_STAGE_RUN"


class LocalExecutor(Executor):
    def __init__(
        self, config: LocalExecutorConfig | None = None, out: TextIO | None = None, ray_bin: str | None = None
    ) -> None:
        self.config = config or LocalExecutorConfig()
        self.out = out if out is not None else sys.stdout
        self.ray_bin = ray_bin or _default_ray_bin()

    def run_stage(self, stage: Stage, ctx: StageContext) -> StageResult:
        ctx.log_file.parent.mkdir(parents=True, exist_ok=True)
        with ctx.log_file.open("a", encoding="utf-8") as log:
            log.write(f"\n{ATTEMPT_HEADER}{stage.name}, attempt {ctx.attempt}, started {now()} =====\n")
            log.flush()
            head = RayHead(self.config.ray_port, self.config.dashboard_port)
            # The head's processes carry an execution id, the stage's: stopped with the stage (its end, a
            # Ctrl-C, a resume's `stop_stale`), and never another run's head, as `ray stop` (every head
            # of the machine) stopped a run beside it on this machine.
            head_run = ctx.run_id or uuid.uuid4().hex
            # The stage's processes (the Ray head's workers too) announce every secret they reveal here.
            sink = SecretSink()
            try:
                if stage.needs_ray_head:
                    start = [self.ray_bin, *head.start_argv(stage.gpus, ray_temp_dir(ctx.stage_dir))[1:]]
                    code = self._run(start, log, ctx.stage_dir, sink=sink, run_id=head_run, leaves=True)
                    if code != 0:
                        return StageResult(
                            "failed", code, f"`ray start --head` failed (exit {code}); see {ctx.log_file}"
                        )
                echo = LiveStageOutput(self.out, stage.name)
                try:
                    command = ["bash", str(ctx.command_file)]
                    if ctx.exit_file is not None:
                        command = exit_recording(command, ctx.exit_file, ctx.run_id)
                    code = self._run(command, log, ctx.stage_dir, ctx.on_started, echo, sink, ctx.run_id)
                finally:
                    echo.close()
            finally:
                try:
                    if stage.needs_ray_head:  # a `ray start` that failed may have left some of it
                        self._stop_to_the_end(None, head_run)
                finally:
                    sink.close()
        if code == 0:
            return StageResult("succeeded", 0)
        return StageResult("failed", code, failed_exit_message(code, ctx.log_file))

    def stop_stale(self, stage: Stage, handle: Handle) -> str | None:
        pgid = handle.get("pgid")
        groups = [pgid] if isinstance(pgid, int) and _same_group(handle) and _group_alive(pgid) else []
        # The stage's processes carry its execution's id: found when t3rl was killed before it recorded
        # the group, and its Ray head's, in a group of their own (the head left running took the port the
        # next attempt's head needs).
        groups += [group for group in _groups_of_run(handle.get("run_id")) if group not in groups]
        for group in groups:
            self._stop_group(group)
        if not groups:
            return None
        return f"stopped process group {', '.join(map(str, groups))}, left running by an earlier t3rl process"

    def _run(
        self,
        argv: Sequence[str],
        log: TextIO,
        cwd: Path,
        on_started: Callable[[Handle], None] | None = None,
        echo: LiveStageOutput | None = None,
        sink: SecretSink | None = None,
        run_id: str = "",
        leaves: bool = False,
    ) -> int:
        """Run `argv` in its own session, teeing its output with every secret masked (those it announces
        to `sink` too); stop its whole group when it ends, unless it `leaves` what it started running for
        the stage (`ray start`'s daemons stay in its group: stopped with the stage, by `run_id`)."""
        secrets = secret_values()
        cwd.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **(sink.env() if sink else {})}
        if run_id:
            env[STAGE_RUN_ENV] = run_id
        proc: subprocess.Popen[bytes] | None = None
        reader: threading.Thread | None = None
        # A Ctrl-C, wherever it lands once the command may have started (the instant after Popen returns
        # too: seconds on a busy machine), stops the group the command started.
        try:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            reader = threading.Thread(target=self._tee, args=(proc, log, secrets, echo, sink), daemon=True)
            reader.start()
            if on_started is not None:
                on_started(_group_handle(proc.pid))
            code = proc.wait()
        except KeyboardInterrupt:
            # Interrupted inside Popen (its child may have started): found by its execution's id, as a
            # resume finds one.
            self._stop_to_the_end(proc, run_id)
            if proc is not None:
                proc.wait()
            if reader is not None and reader.ident is not None:
                reader.join(timeout=5)
            log.write(f"===== t3rl: stopped by the user at {now()} =====\n")
            log.flush()
            raise
        # Whatever the command left running (background jobs, daemons) goes with it.
        for group in [] if leaves else _stage_groups(proc, run_id):
            self._stop_group(group)
        reader.join(timeout=5)
        return code

    def _tee(
        self,
        proc: subprocess.Popen[bytes],
        log: TextIO,
        secrets: frozenset[str],
        echo: LiveStageOutput | None = None,
        sink: SecretSink | None = None,
    ) -> None:
        assert proc.stdout is not None
        echoing = True
        pem = PemLines()  # a private key printed over lines: its body, which no line shows a form of
        for raw in iter(proc.stdout.readline, b""):
            if sink is not None:
                sink.drain()  # a value announced before this line was written is masked in it
            line = pem(scrub_text(raw.decode("utf-8", errors="replace"), secrets))
            log.write(line)
            log.flush()
            if not echoing:
                continue
            try:
                if echo is not None:
                    echo.write(line)
                else:
                    self.out.write(line)
                    self.out.flush()
            except (OSError, SystemExit):
                # The reader of t3rl's output went away (`t3rl run … | head`; rich exits on it): this
                # thread must go on reading, or the stage blocks on a full pipe and t3rl waits forever.
                # Its output still goes to its log; the next line t3rl prints ends the run (exit 141).
                echoing = False

    def _stop_to_the_end(self, proc: subprocess.Popen[bytes] | None, run_id: str) -> None:
        """Stop every group of the stage even if Ctrl-C comes again meanwhile (users press it again while a
        stage takes its grace period, or while its groups are looked up, which reads every process's
        environment and takes a while on a busy machine): a further one kills them at once instead of
        abandoning the stop, which left the stage running unwatched while its record said stopped, and a
        resume did not look for it."""
        try:
            for group in _stage_groups(proc, run_id):
                self._stop_group(group)
        except KeyboardInterrupt:
            while True:
                try:
                    _kill_groups(proc, run_id)
                    return
                except KeyboardInterrupt:
                    continue

    def _stop_group(self, pgid: int) -> None:
        """SIGTERM the process group, then SIGKILL it if anything is still alive after the grace period."""
        if not _signal_group(pgid, signal.SIGTERM):
            return
        if _wait_until_gone(pgid, self.config.stop_grace_s):
            return
        _signal_group(pgid, signal.SIGKILL)
        # SIGKILL is delivered asynchronously: "stopped" is reported once nothing of the group runs.
        _wait_until_gone(pgid, _KILL_WAIT_S)


# Upper bound on waiting for SIGKILLed processes to go (they cannot ignore it; only a process stuck in
# uninterruptible I/O takes longer, and then t3rl reports the stage stopped anyway).
_KILL_WAIT_S = 5.0


def _wait_until_gone(pgid: int, timeout_s: float) -> bool:
    """True once no live process is left in the group; False if some still run after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while _group_alive(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def _kill_groups(proc: subprocess.Popen[bytes] | None, run_id: str) -> None:
    """SIGKILL the stage's groups, the one its command started first: it needs no lookup, so a Ctrl-C
    pressed again and again still ends the command itself."""
    if proc is not None:
        _signal_group(proc.pid, signal.SIGKILL)
    for group in _stage_groups(proc, run_id):
        _signal_group(group, signal.SIGKILL)
        _wait_until_gone(group, _KILL_WAIT_S)


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True


def _group_alive(pgid: int) -> bool:
    """Any non-zombie process left in the group (zombies wait for a parent that may not be us)."""
    for process in psutil.process_iter(["status"]):
        if process.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        try:
            if os.getpgid(process.pid) == pgid:
                return True
        except ProcessLookupError:
            continue
    return False


def _stage_groups(proc: subprocess.Popen[bytes] | None, run_id: str) -> list[int]:
    """Every process group of a stage's execution: the one its command started, and any a process of it
    moved into (`setsid`, a daemon starting a server) that still carries its execution's id. The group
    alone left such a process running after its stage ended or was stopped, unwatched and recorded as
    ended (interrupted inside Popen, only the id finds its processes)."""
    groups = [proc.pid] if proc is not None else []
    return [*groups, *(group for group in _groups_of_run(run_id) if group not in groups)]


def _groups_of_run(run_id: object) -> list[int]:
    """The process groups of this user's processes whose environment names the execution `run_id`."""
    if not isinstance(run_id, str) or not run_id:
        return []
    groups = set()
    for process in psutil.process_iter():
        try:
            if process.environ().get(STAGE_RUN_ENV) == run_id:
                groups.add(os.getpgid(process.pid))
        except (psutil.Error, OSError):
            continue
    return sorted(groups)


def _leader_start(pgid: int) -> float | None:
    """When the process whose pid is `pgid` started (None when it is gone)."""
    try:
        return psutil.Process(pgid).create_time()
    except psutil.NoSuchProcess:
        return None


def _group_handle(pgid: int) -> Handle:
    """What identifies a process group across t3rl processes: host, boot, group id, leader start time."""
    return {
        "host": socket.gethostname(),
        "boot": psutil.boot_time(),
        "pgid": pgid,
        "leader_start": _leader_start(pgid),
    }


def _same_group(handle: Handle) -> bool:
    """True when `handle` names a group of this host and boot that was not replaced since.

    Linux never hands out a pid that is still some group's id, so while members of the recorded
    group live, the id is still that group's; only a leader with another start time is a new group.
    """
    if handle.get("host") != socket.gethostname() or handle.get("boot") != psutil.boot_time():
        return False
    started = _leader_start(handle["pgid"])
    return started is None or started == handle.get("leader_start")


def ray_temp_dir(stage_dir: Path) -> str:
    """The temp dir of a stage's Ray head, one per stage dir: short (Ray's socket paths below it must fit
    a Unix socket's 107 bytes), and apart from every other head's of the machine."""
    key = hashlib.sha256(str(stage_dir).encode()).hexdigest()[:12]
    return os.path.join(tempfile.gettempdir(), f"t3rl-ray-{key}")


def _default_ray_bin() -> str:
    """The `ray` next to this interpreter (a venv's), else whatever `ray` is on PATH."""
    candidate = Path(sys.executable).with_name("ray")
    return str(candidate) if candidate.exists() else "ray"
