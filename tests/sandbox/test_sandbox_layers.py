"""Each cell-side layer on its own, applied in a forked child of the test process: the attack it is
meant to stop succeeds before it is applied and fails after. (The end-to-end attacks, all layers
together, are in test_sandbox_attacks.py.)"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from t3rl_core.sandbox.child import landlock, privileges, seccomp
from t3rl_core.sandbox.protections import Protections
from tests.sandbox.conftest import need

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long


def in_child(
    setup: Callable[[], None], probe: Callable[[], Any], *, probe_before: bool = True
) -> tuple[Any, Any]:
    """(probe() before setup, probe() after setup), run in a forked child so the test process stays
    unconfined. Each probe returns something JSON-serialisable; `probe_before=False` gives None first."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            before = probe() if probe_before else None
            setup()
            result = [before, probe()]
        except BaseException as err:
            result = [f"child failed: {type(err).__name__}: {err}"]
        os.write(write_fd, json.dumps(result).encode())
        os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    result = json.loads(data)
    assert len(result) == 2, result[0]
    return result[0], result[1]


def outcome(action: Callable[[], object]) -> str:
    try:
        action()
    except OSError as err:
        return errno_name(err.errno)
    return "ok"


def errno_name(number: int | None) -> str:
    import errno

    return errno.errorcode.get(number or 0, str(number))


def raw(number: int, *args: object) -> str:
    """A raw system call's outcome: 'ok' or the errno name."""
    result = LIBC.syscall(number, *args)
    return "ok" if result >= 0 else errno_name(ctypes.get_errno())


# -------------------------------------------------------------------------------------------- seccomp


def test_seccomp_filter_refuses_what_it_lists():
    need("seccomp")
    nr = seccomp.X86_64

    def probe() -> dict[str, str]:
        pair = outcome(lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))
        return {
            # PTRACE_ATTACH to a PID that cannot exist: ESRCH from the kernel, EPERM from the filter.
            "ptrace": raw(nr["ptrace"], 16, 1 << 30, None, None),
            "unix_socket": outcome(lambda: socket.socket(socket.AF_UNIX).close()),
            "dgram_pair": pair,
            "stream_pair": outcome(lambda: [s.close() for s in socket.socketpair()]),
            "inet_socket": outcome(lambda: socket.socket().close()),
            "io_uring": raw(nr["io_uring_setup"], 1, None),
            "clone3": raw(nr["clone3"], None, ctypes.c_size_t(0)),
            "keyctl": raw(nr["keyctl"], 0, -3, 0),  # KEYCTL_GET_KEYRING_ID of the user keyring
        }

    def setup() -> None:
        privileges.set_no_new_privs()
        seccomp.install()

    before, after = in_child(setup, probe)
    assert before["unix_socket"] == "ok" and before["dgram_pair"] == "ok" and before["ptrace"] == "ESRCH"
    assert after == {
        "ptrace": "EPERM",
        "unix_socket": "EPERM",
        "dgram_pair": "EPERM",
        "stream_pair": "ok",
        "inet_socket": "ok",
        "io_uring": "ENOSYS",
        "clone3": "ENOSYS",
        "keyctl": "EPERM",
    }


def test_seccomp_filter_refuses_new_user_namespaces_but_not_fork():
    need("seccomp")

    def probe() -> dict[str, str]:
        pid = os.fork()
        if pid == 0:
            # In a grandchild: a successful unshare would change this process for good.
            os._exit(0 if LIBC.unshare(0x10000000) == 0 else ctypes.get_errno())
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        return {"fork": "ok", "unshare_user": "ok" if code == 0 else errno_name(code)}

    def setup() -> None:
        privileges.set_no_new_privs()
        seccomp.install()

    before, after = in_child(setup, probe)
    assert before == {"fork": "ok", "unshare_user": "ok"}
    assert after == {"fork": "ok", "unshare_user": "EPERM"}


def test_seccomp_program_jumps_are_resolved_forward():
    code = seccomp.assemble(seccomp.program())
    jumps = [(n, jt, jf) for n, (op, jt, jf, _) in enumerate(code) if op & 0x07 == 0x05]  # BPF_JMP class
    assert jumps and all(n + 1 + max(jt, jf) < len(code) for n, jt, jf in jumps)
    assert code[-1] == (seccomp.RET, 0, 0, seccomp.RET_KILL_PROCESS)


# ------------------------------------------------------------------------------------------- landlock


def test_landlock_confines_writes_signals_and_tcp(tmp_path):
    need("landlock")
    abi = landlock.abi_version()
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    parent = os.getpid()

    def probe() -> dict[str, str]:
        n = len(list(inside.iterdir()))
        return {
            "write_inside": outcome(lambda: (inside / f"f{n}").write_text("x")),
            "write_outside": outcome(lambda: (outside / f"f{n}").write_text("x")),
            "dev_null": outcome(lambda: Path(os.devnull).write_text("x")),
            "signal_parent": outcome(lambda: os.kill(parent, 0)),
            "tcp": outcome(lambda: socket.create_connection(("127.0.0.1", port), timeout=1).close()),
        }

    def setup() -> None:
        privileges.set_no_new_privs()
        landlock.restrict([str(inside)], [os.devnull], abi)

    try:
        before, after = in_child(setup, probe)
    finally:
        listener.close()
    assert set(before.values()) == {"ok"}
    assert after["write_inside"] == "ok" and after["dev_null"] == "ok"
    assert after["write_outside"] == "EACCES"
    assert after["tcp"] == ("EACCES" if abi >= 4 else "ok")
    assert after["signal_parent"] == ("EPERM" if abi >= 6 else "ok")


def test_landlock_forbids_ptrace_outside_the_domain():
    need("landlock")
    if os.geteuid() != 0:
        pytest.skip("only root may trace a process that is not its child without Landlock")
    sleeper = subprocess.Popen(["sleep", "30"])  # outside the child's domain, like its supervisor

    def probe() -> str:
        # PTRACE_SEIZE does not stop the tracee; the attachment ends when the child exits.
        if LIBC.ptrace(0x4206, sleeper.pid, None, None) != 0:
            return errno_name(ctypes.get_errno())
        return "ok"

    def setup() -> None:
        privileges.set_no_new_privs()
        landlock.restrict([], [], landlock.abi_version())

    try:
        # Two children: a seize stays in place until its tracer exits, so one child cannot try twice.
        _, unrestricted = in_child(lambda: None, probe, probe_before=False)
        _, restricted = in_child(setup, probe, probe_before=False)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert (unrestricted, restricted) == ("ok", "EPERM")


# ----------------------------------------------------------------------------------------- privileges


def test_dropping_to_the_cell_uid_closes_root_only_files(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only root can change uid")
    secret = tmp_path / "secret"
    secret.write_text("s")
    secret.chmod(0o600)
    tmp_path.chmod(0o755)

    def probe() -> dict[str, Any]:
        with open("/proc/self/status") as f:
            status = dict(line.split(":", 1) for line in f)
        return {
            "read": outcome(secret.read_text),
            "cap_eff": status["CapEff"].strip(),
            "cap_bnd": status["CapBnd"].strip(),
            "no_new_privs": status["NoNewPrivs"].strip(),
            "groups": os.getgroups(),
            "setuid_back": outcome(lambda: os.setuid(0)),
        }

    def setup() -> None:
        os.setgroups([0, 4])
        privileges.drop_bounding_set()
        privileges.become(65534, 65534)
        privileges.drop_capabilities()
        privileges.set_no_new_privs()

    before, after = in_child(setup, probe)
    assert before["read"] == "ok" and before["cap_eff"] != "0" * 16
    assert after == {
        "read": "EACCES",
        "cap_eff": "0" * 16,
        "cap_bnd": "0" * 16,
        "no_new_privs": "1",
        "groups": [],
        "setuid_back": "EPERM",
    }


# ---------------------------------------------------------------------------------------- protections


def test_protections_line_and_manifest_name_what_is_missing():
    found = Protections(active={"pid": "own PID namespace"}, missing={"seccomp": "cells can ptrace"})
    assert (
        found.line()
        == "local sandbox protections: pid (own PID namespace); MISSING: seccomp: cells can ptrace"
    )
    assert found.to_manifest() == {
        "active": {"pid": "own PID namespace"},
        "missing": {"seccomp": "cells can ptrace"},
    }
    assert found.not_held(["pid", "seccomp"]) == ["seccomp"]
