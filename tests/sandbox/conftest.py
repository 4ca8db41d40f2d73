"""Fixtures shared by the sandbox tests."""

from __future__ import annotations

import asyncio
import ctypes
import functools
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from t3rl_core.sandbox.config import LocalSandboxConfig
from t3rl_core.sandbox.local import LocalSandbox

REPO = Path(__file__).resolve().parents[2]


def kept_names(directory: str) -> list[str]:
    """The entries a cell sees in its own `directory` (/tmp, /dev/shm): the first path component of
    each tree that must stay visible there (this interpreter, its venv, the checkout) when it lives
    below `directory` (a clone under /tmp), and nothing else."""
    trees = [sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)), str(REPO)]
    names = set()
    for tree in trees:
        real = os.path.realpath(tree)
        if real.startswith(directory.rstrip("/") + "/"):
            names.add(real[len(directory.rstrip("/")) + 1 :].split("/")[0])
    return sorted(names)


@pytest.fixture
def visible_dir() -> Iterator[Path]:
    """A directory cells can see: outside /tmp and the other private dirs, and outside any home that
    is closed to other users (pytest's tmp_path is under /tmp, which cells do not see)."""
    for base in ("/var/lib", "/opt", os.path.expanduser("~")):
        if os.access(base, os.W_OK):
            break
    path = Path(tempfile.mkdtemp(prefix="t3rl-sandbox-test-", dir=base))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@functools.cache
def host_offers(layer: str) -> bool:
    """Whether this host's kernel and privileges allow a protection, found without the sandbox's own
    code: a test of a layer the host offers must fail, not skip, when the sandbox stops applying it."""
    if layer in ("network", "pid", "mount", "disk"):
        unshare = shutil.which("unshare")
        user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
        command = [unshare, *user, "--net", "--mount", "--pid", "--fork", "true"] if unshare else None
        return command is not None and subprocess.run(command, capture_output=True).returncode == 0
    if layer == "user":
        return os.geteuid() == 0 or host_offers("mount")
    if layer == "seccomp":
        with open("/proc/self/status") as f:
            return platform.machine() in ("x86_64", "aarch64") and any(
                line.startswith("Seccomp:") for line in f
            )
    if layer == "landlock":
        return landlock_abi() > 0
    if layer == "process_limit":
        return True  # a pids cgroup as root, RLIMIT_NPROC of an unprivileged cell uid otherwise
    if layer == "memory":
        return host_offers("seccomp") or memory_cgroup_offered()
    if layer == "cpu":
        return True  # a cpu cgroup as root where the host has one, a lower priority for cells otherwise
    raise ValueError(layer)


@functools.cache
def memory_cgroup_offered() -> bool:
    """Whether this (root) process may make a child cgroup with a memory limit: cgroup v1's memory
    hierarchy or v2 with the memory controller available below its own cgroup."""
    if os.geteuid() != 0:
        return False
    own = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            own[controllers] = path.lstrip("/")
    candidates = []
    if "memory" in own:
        candidates.append((Path("/sys/fs/cgroup/memory") / own["memory"], "memory.limit_in_bytes"))
    if "" in own:
        for root in (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup")):
            if (root / "cgroup.controllers").exists():
                candidates.append((root / own[""], "memory.max"))
                break
    for parent, limit_file in candidates:
        probe = parent / f"t3rl-test-probe-{os.getpid()}"
        try:
            probe.mkdir()
        except OSError:
            continue
        try:
            if limit_file == "memory.max":
                if "memory" not in (probe / "cgroup.controllers").read_text().split():
                    continue
                (probe / "cgroup.subtree_control").write_text("+memory")
                leaf = probe / "leaf"
                leaf.mkdir()
                try:
                    (leaf / limit_file).write_text(str(1 << 30))
                finally:
                    leaf.rmdir()
            else:
                (probe / limit_file).write_text(str(1 << 30))
            return True
        except OSError:
            continue
        finally:
            probe.rmdir()
    return False


def landlock_abi() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return max(int(libc.syscall(444, None, ctypes.c_size_t(0), 1)), 0)  # landlock_create_ruleset(VERSION)


def need(*layers: str) -> None:
    """Skip unless the host offers every layer (then the sandbox must be applying them)."""
    lacking = [layer for layer in layers if not host_offers(layer)]
    if lacking:
        pytest.skip(f"this host does not offer {lacking}")


def one_cell(code: str) -> str:
    """The output of `code` run as one cell of a fresh local sandbox (the cell must succeed)."""

    async def run() -> str:
        sandbox = LocalSandbox(LocalSandboxConfig(timeout_s=30, max_concurrency=1))
        try:
            result = await sandbox.run(code)
        finally:
            await sandbox.aclose()
        assert result.ok, (result.error, result.stderr)
        return result.stdout

    return asyncio.run(run())
