"""The local sandbox: a fresh, confined Python process per cell, forked from a pre-isolated zygote.

Per slot (up to `max_concurrency`, started on demand): a zygote process (`child/zygote.py`) in its
own network, mount, IPC and UTS namespaces, in a read-only root of the system, the interpreter and the
project's code only, its own /etc and private empty /tmp, /dev/shm (the interpreter, venv and project
bound back where they live below those), living in its own pids, memory and cpu cgroups when t3rl is
root and the host allows. Per cell: a fork of a free
slot's zygote in fresh mount, PID and IPC namespaces, a size-capped tmpfs as its only writable
directory, an unprivileged uid without groups, no_new_privs, Landlock and seccomp, rlimits on CPU
time, address space, open files and file size; a wall-clock limit after which the whole PID namespace
is killed; stdout and stderr read incrementally and the cell killed once either exceeds
`max_output_bytes`.
What holds on this host is observed by a probe cell at start-up (`protections.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import math
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from t3rl_core import module_help, outside_json
from t3rl_core.sandbox.base import Sandbox, SandboxResult, SandboxStatus
from t3rl_core.sandbox.cell_run import CellRun
from t3rl_core.sandbox.cgroup import CellCgroups, SlotCgroup
from t3rl_core.sandbox.child import mounts, seccomp
from t3rl_core.sandbox.config import LocalSandboxConfig
from t3rl_core.sandbox.protections import (
    CELL_LAYERS,
    PROBE_CELL,
    MemoryCap,
    Protections,
    memory_cap_text,
    observe,
)
from t3rl_core.sandbox.slot_uids import slot_uids
from t3rl_core.sandbox.zygote_process import CHILD_PACKAGE_PARENT, Zygote, ZygoteError
from t3rl_core.secret_env import credential_values, without_credentials
from t3rl_core.secret_files import SEARCHED_ENTRIES, SecretFileSearch

log = logging.getLogger(__name__)


def cell_hidden_paths(config: LocalSandboxConfig) -> list[str]:
    """What every cell's root covers: `hidden_paths`, and each credential file or directory below a
    readable path (`t3rl_core.secret_files`, the list Ray's uploads leave out too: a checkout's `.env`
    and `.git`, a key file beside the data), whatever `hidden_paths` names. Cells read a readable path
    whole otherwise, and `hidden_paths` names a home's files only."""
    hidden = [os.path.expanduser(p) for p in config.hidden_paths]
    for readable in config.readable_paths:
        search = SecretFileSearch(os.path.expanduser(readable))
        found = [f for f in search.found if not any(f == h or mounts.below(f, h) for h in hidden)]
        if found:
            log.info(
                "local sandbox: hidden from cells below readable path %s: %s", readable, ", ".join(found)
            )
        if search.stopped:
            log.warning(
                "local sandbox: readable path %s searched for credential files in its first %d entries "
                "only; list any further one in sandbox.hidden_paths",
                readable,
                SEARCHED_ENTRIES,
            )
        hidden += found
    return hidden


MIB = 1 << 20
# Priority of cells without a cpu cgroup: a busy cell thread weighs a tenth of a process of t3rl's.
CELL_NICE = 10
_PROBE_TIMEOUT_S = 30.0
# How long the sandbox's own setup retries a fork refused by the slot's process limit, beyond the
# wall-clock limit of the cell before (whose processes hold the limit until they are torn down).
_SETUP_PATIENCE_S = 10.0
# The project t3rl runs from (its checkout, or site-packages): cells see it read-only wherever it is.
PROJECT_DIR = CHILD_PACKAGE_PARENT.parents[1]
# (status, exit code, error message) of a finished cell.
_Verdict = tuple[SandboxStatus, "int | None", "str | None"]


class LocalSandbox(Sandbox):
    """Runs each cell in its own confined process; at most `max_concurrency` at once."""

    def __init__(self, config: LocalSandboxConfig) -> None:
        self.config = config
        self.python = config.python or sys.executable
        # Each slot's cells run as a uid of their own where t3rl is root (slot_uids: the kernel's
        # per-user counters); the first slot's is `cell_uid`, the others take theirs from here.
        self._free_uids = slot_uids(config.cell_uid, config.max_concurrency)[1:] if os.geteuid() == 0 else []
        self._cgroups = _cgroups(config)
        # Cell directories when there is no mount namespace to give each one a private tmpfs.
        self._workdir_root = tempfile.mkdtemp(prefix="t3rl-sandbox-")
        os.chmod(self._workdir_root, 0o711)
        # One zygote per cell running at once, started on demand; `_idle` are those free now.
        self._slots: list[_Slot] = []
        self._idle: list[_Slot] = []
        self._hidden = cell_hidden_paths(config)  # searched once, not per slot
        try:
            first, self.protections = self._start()
        except BaseException:
            self._release()
            raise
        self._slots.append(first)
        self._idle.append(first)
        self._cell_layers = sorted(CELL_LAYERS & set(self.protections.active))
        self._limit = asyncio.Semaphore(config.max_concurrency)

    # ------------------------------------------------------------------------------------ start-up

    def _start(self) -> tuple[_Slot, Protections]:
        """The strongest setup that runs a cell here, and what it protects (logged once)."""
        c = self.config
        attempts = [False] if c.isolation == "none" else [True, False]
        errors = []
        for namespaces in attempts:
            try:
                slot = self._new_slot(self._zygote_spec(namespaces))
            except (OSError, ZygoteError) as err:
                errors.append(str(err))
                continue
            found = self._probe(slot.zygote)
            if isinstance(found, Protections):
                self._check(found)
                return slot, found
            errors.append(found)
            self._close_slot(slot)
        raise RuntimeError(
            f"the local sandbox cannot run a Python cell with {self.python}: " + " | ".join(errors)
        )

    def _new_slot(self, spec: dict[str, Any]) -> _Slot:
        # The zygote, its starter and the cell's init share the cgroup with the cell's own processes.
        cgroup = self._cgroups.create(self.config.max_processes + 3) if self._cgroups else None
        try:
            zygote = Zygote(self.python, spec, cell_env(self.config), cgroup.dirs if cgroup else None)
            if cgroup is not None and cgroup.memory is not None:
                # On top of what the zygote itself holds here: the cell's memory and its files (tmpfs).
                c = self.config
                cgroup.limit_memory(cgroup.memory_usage() + (c.memory_mb + c.cell_disk_mb) * MIB)
            if cgroup is not None and cgroup.cpu is not None and self.config.cpu_cores is not None:
                cgroup.limit_cpu(self.config.cpu_cores)
            return _Slot(zygote, cgroup)
        except BaseException:
            if cgroup is not None and self._cgroups is not None:
                self._cgroups.remove(cgroup)
            raise

    def _another_slot(self, uid: int | None) -> _Slot:
        """One more zygote like the first (the probe's findings hold for it too), its cells as `uid`
        (None: the first's)."""
        first = self._slots[0].zygote
        slot = self._new_slot({**first.spec, "uid": first.spec["uid"] if uid is None else uid})
        if {**slot.zygote.cell_spec, "uid": None} != {**first.cell_spec, "uid": None}:
            self._close_slot(slot)
            raise ZygoteError("a new sandbox zygote came up with different protections than the first")
        return slot

    def _close_slot(self, slot: _Slot) -> None:
        slot.zygote.close()
        if slot.cgroup is not None and self._cgroups is not None:
            self._cgroups.remove(slot.cgroup)

    def _zygote_spec(self, namespaces: bool) -> dict[str, Any]:
        c = self.config
        return {
            "isolation": c.isolation,
            "try_namespaces": namespaces,
            "host_euid": os.geteuid(),
            "uid": c.cell_uid,
            "gid": c.cell_gid,
            "disk_bytes": c.cell_disk_mb * MIB,
            "private_dirs": c.private_dirs,
            "hidden": self._hidden,
            "readable_paths": [os.path.expanduser(p) for p in c.readable_paths],
            "workdir_root": self._workdir_root,
            "visible": [str(PROJECT_DIR)],
            "rlimit_nproc": not (self._cgroups and self._cgroups.pids),
            "memory_cgroup": bool(self._cgroups and self._cgroups.memory),
            # Without a cpu cgroup each thread of a cell weighs as much as one of t3rl's: cells yield.
            "cpu_cgroup": bool(self._cgroups and self._cgroups.cpu),
            "cpu_cores": c.cpu_cores,
            "cpu_weight": c.max_concurrency,
            "nice": 0 if self._cgroups and self._cgroups.cpu else CELL_NICE,
            "patience_s": c.timeout_s + _SETUP_PATIENCE_S,
            "preload": c.preload,
            "limits": {
                "cpu_s": cpu_limit_s(c),
                "memory_bytes": c.memory_mb * MIB,
                "nproc": c.max_processes,
                "fsize_bytes": c.max_file_size_mb * MIB,
                "open_files": c.max_open_files,
            },
        }

    def _probe(self, zygote: Zygote) -> Protections | str:
        """Run the probe cell; its observations, or why it did not run cleanly."""
        try:
            run = CellRun(zygote, PROBE_CELL, 1 << 20)
            try:
                run.wait_blocking(_PROBE_TIMEOUT_S)
                statuses = run.statuses()
                out, err = bytes(run.buffers[run.stdout]), bytes(run.buffers[run.stderr])
            finally:
                run.close()
        except (OSError, ZygoteError) as error:
            return f"the probe cell could not start: {error}"
        failed = next((s["setup_error"] for s in statuses if "setup_error" in s), None)
        if failed is not None:
            return f"the probe cell could not be confined: {failed}"
        if not statuses or statuses[-1] != {"exit": 0}:
            return f"the probe cell failed: {statuses} {err.decode(errors='replace')[-2000:]}"
        try:
            seen = outside_json.loads(out, "the probe cell's report")
        except ValueError:
            return f"the probe cell printed no report: {out[-2000:]!r} {err[-2000:]!r}"
        applied = next((s["applied"] for s in statuses if "applied" in s), [])
        cell_uid_is_root = zygote.cell_spec["uid"] == 0 and os.geteuid() == 0
        pids_cgroup = self._cgroups is not None and self._cgroups.pids
        limit = "cgroup" if pids_cgroup else ("none" if cell_uid_is_root else "rlimit")
        return observe({**zygote.cell_spec, "host_euid": os.geteuid()}, seen, applied, limit)

    def _check(self, found: Protections) -> None:
        c = self.config
        if c.isolation == "required" and found.missing:
            raise RuntimeError("local sandbox isolation is required but incomplete: " + found.line())
        lacking = found.not_held(c.require)
        if lacking:
            raise RuntimeError(
                f"sandbox.require lists {', '.join(lacking)}, which this host does not provide ("
                + "; ".join(f"{name}: {found.missing[name]}" for name in lacking)
                + "). Run where the kernel allows it (README: local sandbox security), "
                + "or remove it from sandbox.require."
            )
        if found.missing:  # isolation=none too: model-written code runs unconfined, which is worth a warning
            log.warning(found.line())
        else:
            log.info(found.line())

    # ------------------------------------------------------------------------------------------ cells

    async def run(self, code: str) -> SandboxResult:
        async with self._limit:
            started = time.monotonic()
            try:
                slot = self._idle.pop() if self._idle else await self._grow()
            except (OSError, ZygoteError) as err:
                return _result(
                    ("sandbox_error", None, f"could not prepare the cell: {err}"), b"", b"", started
                )
            try:
                return await self._run_in(slot, code, started)
            finally:
                self._idle.append(slot)

    async def _grow(self) -> _Slot:
        # The slot's uid is taken here, on the loop: two slots started at once get two.
        uid = self._free_uids.pop(0) if self._free_uids else None
        try:
            slot = await asyncio.get_running_loop().run_in_executor(None, self._another_slot, uid)
        except BaseException:
            if uid is not None:
                self._free_uids.insert(0, uid)
            raise
        self._slots.append(slot)
        return slot

    async def _run_in(self, slot: _Slot, code: str, started: float) -> SandboxResult:
        """The cell run in `slot`; run again while its setup found the slot still full of the cell
        before's processes (none of its code ran), up to the setup's patience."""
        give_up = time.monotonic() + self.config.timeout_s + _SETUP_PATIENCE_S
        delay = 0.05
        while True:
            result = await self._run_once(slot, code, started)
            if not _slot_still_full(result) or time.monotonic() + delay > give_up:
                return result
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def _run_once(self, slot: _Slot, code: str, started: float) -> SandboxResult:
        try:
            run = CellRun(slot.zygote, code, self.config.max_output_bytes)
        except (OSError, ZygoteError) as err:
            return _result(("sandbox_error", None, f"could not prepare the cell: {err}"), b"", b"", started)
        try:
            in_time = await run.wait_async(self.config.timeout_s)
            verdict = self._classify(run, in_time)
            out, err_ = bytes(run.buffers[run.stdout]), bytes(run.buffers[run.stderr])
        finally:
            run.close()
            if slot.cgroup is not None and not slot.zygote.cell_spec["namespaces"]:
                _kill_leftovers(slot.cgroup, slot.zygote.cell_spec["uid"])
        if slot.cgroup is not None and slot.cgroup.new_oom_kills():
            verdict = verdict if verdict[0] == "timeout" else self._out_of_memory(verdict)
        return _result(verdict, out, err_, started)

    def _out_of_memory(self, verdict: _Verdict) -> _Verdict:
        c = self.config
        why = (
            f"memory limit of {c.memory_mb + c.cell_disk_mb} MiB for the whole cell exceeded "
            "(memory_mb + cell_disk_mb): the kernel killed a process of it"
        )
        return "error", verdict[1], why

    def _classify(self, run: CellRun, in_time: bool) -> _Verdict:
        c = self.config
        if not in_time:
            return "timeout", None, f"wall-clock limit of {c.timeout_s:g} s exceeded"
        if run.overflowed:
            return "output_limit", None, f"output exceeded {c.max_output_bytes} bytes"
        statuses = run.statuses()
        final = statuses[-1] if statuses else {}
        failed = next((s["setup_error"] for s in statuses if "setup_error" in s), None)
        if failed is not None:
            return "sandbox_error", None, f"sandbox setup failed: {failed}"
        applied = next((s["applied"] for s in statuses if "applied" in s), None)
        if applied is not None and not set(self._cell_layers) <= set(applied):
            return "sandbox_error", None, f"the cell ran without {set(self._cell_layers) - set(applied)}"
        if "signal" in final:
            sig = signal.Signals(final["signal"])
            # RLIMIT_CPU sends SIGXCPU at the soft limit, SIGKILL at the hard one (a cell ignoring SIGXCPU).
            if sig == signal.SIGXCPU or (sig == signal.SIGKILL and final.get("cpu_s", 0) >= cpu_limit_s(c)):
                return "timeout", -sig, f"CPU-time limit of {cpu_limit_s(c)} s exceeded"
            if sig == signal.SIGBUS:
                why = (
                    f"a mapped file beyond the cell's {c.cell_disk_mb} MiB of disk, e.g. POSIX shared memory"
                )
                return "error", -sig, f"killed by SIGBUS ({why} in /dev/shm)"
            return "error", -sig, f"killed by {sig.name}"
        if "exit" not in final:
            return "sandbox_error", None, "the cell's supervisor died without a verdict"
        code = int(final["exit"])
        if code == 0:
            return "success", 0, None
        reason = f"exit code {code}"
        if _last_line(run.buffers[run.stderr]).startswith("MemoryError"):
            reason += f" (MemoryError: address-space limit of {c.memory_mb} MiB)"
        return "error", code, reason

    async def aclose(self) -> None:
        self._release()

    def _release(self) -> None:
        for slot in self._slots:
            self._close_slot(slot)
        self._slots, self._idle = [], []
        if self._cgroups is not None:
            self._cgroups.close()
        shutil.rmtree(self._workdir_root, ignore_errors=True)


@dataclass(frozen=True)
class _Slot:
    """One zygote and the cgroups it and its cells live in (None without cgroups)."""

    zygote: Zygote
    cgroup: SlotCgroup | None


def _kill_leftovers(cgroup: SlotCgroup, cell_uid: int) -> None:
    """Processes a cell left in its slot's cgroup, which only a cell without a PID namespace can; the
    zygote and the next cell's prepared init (root, not the cell uid) stay."""
    for pid in cgroup.procs():
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{pid}").st_uid == cell_uid:
                os.kill(pid, signal.SIGKILL)


def _cgroups(config: LocalSandboxConfig) -> CellCgroups | None:
    """The slot cgroups this host gives a sandbox with `config` (only a root t3rl makes them)."""
    if os.geteuid() != 0 or config.isolation == "none":
        return None
    return CellCgroups.open(cells=config.max_concurrency)


def memory_cap(config: LocalSandboxConfig) -> MemoryCap:
    """Which of the two memory caps a local sandbox with `config` gets on this host, found without
    starting one: a memory cgroup per cell ("cgroup"), else the address-space limit with the calls
    that create memory it does not count refused ("seccomp"); "none" without either."""
    cgroups = _cgroups(config)
    if cgroups is not None:
        cgroups.close()
        if cgroups.memory:
            return "cgroup"
    return "seccomp" if config.isolation != "none" and seccomp.supported() else "none"


def memory_cap_line(config: LocalSandboxConfig) -> str:
    """`memory_cap` in one line (what `t3rl plan` prints for an experiment with a local sandbox)."""
    text = memory_cap_text(memory_cap(config), config.memory_mb, config.cell_disk_mb, config.max_processes)
    return f"local sandbox memory cap: {text}"


def sandbox_manifest(config: LocalSandboxConfig) -> dict[str, Any]:
    """The run manifest's `sandbox` section: the protections a sandbox with `config` has on this host
    (found by starting one; the rollout's own sandbox logs its line again wherever it runs)."""
    entry: dict[str, Any] = {"probed_on": socket.gethostname()}
    try:
        sandbox = LocalSandbox(config)
    except RuntimeError as err:
        return {**entry, "error": str(err)}
    sandbox._release()
    return {**entry, **sandbox.protections.to_manifest()}


def _slot_still_full(result: SandboxResult) -> bool:
    """A cell whose setup failed to fork because the cell before's processes still held the slot's
    process limit (EAGAIN) or memory (ENOMEM; also every fork in a new PID namespace whose first fork
    failed so): a fork bomb's processes being torn down on a busy machine."""
    error = result.error or ""
    return result.status == "sandbox_error" and any(
        error.startswith("sandbox setup failed: ") and f"[Errno {code}]" in error
        for code in (errno.EAGAIN, errno.ENOMEM)
    )


def cpu_limit_s(config: LocalSandboxConfig) -> int:
    return config.cpu_time_s or math.ceil(config.timeout_s)


def cell_env(config: LocalSandboxConfig) -> dict[str, str]:
    """Only allow-listed variables, then the configured ones; of those, none that holds a credential by
    its form, was revealed by a `Secret` in this process, or is the value of one of t3rl's credential
    variables (the config refuses secret names)."""
    env = {k: os.environ[k] for k in config.env_allowlist if k in os.environ}
    env.update(HOME="/tmp", TMPDIR="/tmp")
    env.update(config.env)
    env = without_credentials(env, values=credential_values(os.environ))
    # After the credentials are dropped: a PATH dropped for holding one (a token in a directory's name).
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return env


def _result(verdict: _Verdict, out: bytes, err: bytes, started: float) -> SandboxResult:
    status, exit_code, error = verdict
    return SandboxResult(
        status=status,
        stdout=out.decode("utf-8", errors="replace"),
        stderr=err.decode("utf-8", errors="replace"),
        exit_code=exit_code,
        duration_s=time.monotonic() - started,
        error=error,
    )


def _last_line(text: bytes | bytearray) -> str:
    lines = text.decode("utf-8", errors="replace").strip().splitlines()
    return lines[-1] if lines else ""


USAGE = "usage: python -m t3rl_core.sandbox.local"
MAIN_DOC = """Prints, as JSON, what confines a cell of the local sandbox on this host under the default
config (the manifest section a run records): the protections a probe cell observed, and those missing
with why. Takes no arguments."""


def main(argv: list[str]) -> int:
    if module_help.asked(argv, USAGE, MAIN_DOC):
        return 0
    if argv:
        print(f"{USAGE}\n(takes no arguments; got {' '.join(argv)})", file=sys.stderr)
        return 2
    print(json.dumps(sandbox_manifest(LocalSandboxConfig()), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
