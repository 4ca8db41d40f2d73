"""Fixtures shared by the sandbox tests."""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


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
            return platform.machine() == "x86_64" and any(line.startswith("Seccomp:") for line in f)
    if layer == "landlock":
        return landlock_abi() > 0
    if layer == "process_limit":
        return True  # a pids cgroup as root, RLIMIT_NPROC of an unprivileged cell uid otherwise
    raise ValueError(layer)


def landlock_abi() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return max(int(libc.syscall(444, None, ctypes.c_size_t(0), 1)), 0)  # landlock_create_ruleset(VERSION)


def need(*layers: str) -> None:
    """Skip unless the host offers every layer (then the sandbox must be applying them)."""
    lacking = [layer for layer in layers if not host_offers(layer)]
    if lacking:
        pytest.skip(f"this host does not offer {lacking}")
