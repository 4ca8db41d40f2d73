"""The non-root path: t3rl started by an unprivileged user gets its protections from a user namespace
(cells run as that user, mapped to root inside, with no capabilities). Run from root by switching a
child to nobody in a private mount namespace with a fresh /tmp, where the interpreter, its venv and the
checkout stay reachable (the same `cover` the sandbox uses for /tmp and a 0700 home)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.sandbox.conftest import host_offers

REPO = Path(__file__).resolve().parents[2]

AS_NOBODY = textwrap.dedent(
    """
    import asyncio, json, os
    from t3rl_core.sandbox.config import LocalSandboxConfig
    from t3rl_core.sandbox.local import LocalSandbox

    sandbox = LocalSandbox(LocalSandboxConfig(timeout_s=30))
    attacks = {
        "whoami": "import os; print(os.getuid(), os.getgroups())",
        "caps": "print([ln.split()[1] for ln in open('/proc/self/status') if ln.startswith('CapEff')][0])",
        "remount": "import ctypes; libc = ctypes.CDLL(None, use_errno=True)\\n"
        "print(libc.mount(None, b'/', None, 32 | 4096, None), ctypes.get_errno())",  # MS_REMOUNT|MS_BIND
        "userns": "import ctypes; libc = ctypes.CDLL(None, use_errno=True)\\n"
        "print(libc.unshare(0x10000000), ctypes.get_errno())",
        "unix": "import socket\\ntry:\\n    socket.socket(socket.AF_UNIX)\\n    print('ok')\\n"
        "except OSError as e:\\n    print(e.errno)",
    }

    async def go():
        out = {}
        for name, code in attacks.items():
            out[name] = (await sandbox.run(code)).stdout.strip()
        await sandbox.aclose()
        return out

    print(json.dumps({"protections": sandbox.protections.to_manifest(), "attacks": asyncio.run(go())}))
    """
)

SWITCH = textwrap.dedent(
    """
    import os, sys
    from t3rl_core.sandbox.child import mounts
    from t3rl_core.sandbox.child.libc import mount
    kept = [sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable)), *sys.path]
    mounts.cover(["/tmp"], [*kept, os.environ["PYTHONPATH"]], closed=True, options="mode=1777")
    os.chdir("/")
    os.execvp("setpriv", ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                          sys.executable, "-c", sys.argv[1]])
    """
)


def as_nobody(script: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
    """`script` run by Python as nobody (see SWITCH); skips where this host cannot."""
    if os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("unshare"):
        pytest.skip("needs root (to become nobody), setpriv and unshare")
    userns = ["unshare", "--user", "--map-root-user", "--net", "--mount", "true"]
    probe = subprocess.run(userns, capture_output=True)
    if probe.returncode != 0:
        pytest.skip("unprivileged user namespaces are disabled here")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO), "HOME": "/tmp"}
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", SWITCH, script],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout_s,
    )


def test_unprivileged_user_gets_every_layer_through_a_user_namespace():
    if not all(host_offers(layer) for layer in ("seccomp", "landlock")):
        pytest.skip("this host lacks seccomp or Landlock")
    done = as_nobody(AS_NOBODY, 120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["protections"]["missing"] == {}
    assert report["protections"]["active"]["user"].startswith("the invoking uid 65534 via a user namespace")
    assert report["protections"]["active"]["process_limit"] == "RLIMIT_NPROC of the cell uid"
    assert report["attacks"] == {
        "whoami": "0 []",  # root of the namespace = nobody outside
        "caps": "0" * 16,  # none of the namespace root's capabilities
        "remount": "-1 1",  # EPERM (Landlock and the dropped capabilities): the root stays read-only
        "userns": "-1 1",
        "unix": "1",
    }
