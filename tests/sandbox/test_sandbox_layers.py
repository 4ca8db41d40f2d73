"""Each cell-side layer on its own, applied in a forked child of the test process: the attack it is
meant to stop succeeds before it is applied and fails after. (The end-to-end attacks, all layers
together, are in test_sandbox_attacks.py.)"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import re
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from t3rl_core.sandbox.child import ipc, landlock, libc, privileges, seccomp
from t3rl_core.sandbox.child.libc import CLONE_NEWIPC, unshare
from t3rl_core.sandbox.protections import WHAT_IS_LOST, Protections, observe
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


NR = seccomp.arch_for(platform.machine()).numbers if seccomp.supported() else {}


def filtered(refused: tuple[str, ...] = ()) -> Callable[[], None]:
    def setup() -> None:
        privileges.set_no_new_privs()
        seccomp.install(refused)

    return setup


def test_seccomp_filter_refuses_what_it_lists():
    need("seccomp")

    def probe() -> dict[str, str]:
        pair = outcome(lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))
        return {
            # PTRACE_ATTACH to a PID that cannot exist: ESRCH from the kernel, EPERM from the filter.
            "ptrace": raw(NR["ptrace"], 16, 1 << 30, None, None),
            "unix_socket": outcome(lambda: socket.socket(socket.AF_UNIX).close()),
            "dgram_pair": pair,
            "stream_pair": outcome(lambda: [s.close() for s in socket.socketpair()]),
            "seqpacket_pair": outcome(
                lambda: [s.close() for s in socket.socketpair(type=socket.SOCK_SEQPACKET)]
            ),
            "inet_socket": outcome(lambda: socket.socket().close()),
            "io_uring": raw(NR["io_uring_setup"], 1, None),
            "clone3": raw(NR["clone3"], None, ctypes.c_size_t(0)),
            "keyctl": raw(NR["keyctl"], 0, -3, 0),  # KEYCTL_GET_KEYRING_ID of the user keyring
            "memfd_secret": raw(NR["memfd_secret"], 0),
            # No pidfd at all: EBADF from the kernel, EPERM from the filter.
            "pidfd_getfd": raw(NR["pidfd_getfd"], -1, 0, 0),
        }

    before, after = in_child(filtered(), probe)
    assert before["unix_socket"] == "ok" and before["dgram_pair"] == "ok" and before["ptrace"] == "ESRCH"
    assert before["inet_socket"] == "ok" and before["pidfd_getfd"] == "EBADF"
    assert after == {
        "ptrace": "EPERM",
        "unix_socket": "EPERM",
        "dgram_pair": "EPERM",
        "stream_pair": "ok",
        "seqpacket_pair": "ok",
        "inet_socket": "EPERM",
        "io_uring": "ENOSYS",
        "clone3": "ENOSYS",
        "keyctl": "EPERM",
        "memfd_secret": "EPERM",
        "pidfd_getfd": "EPERM",
    }


def test_seccomp_refuses_every_address_family_but_the_allowed_ones():
    """socket() is an allow-list: every family the kernel knows (0..45 today, and the next one) is
    refused unless listed, whatever the type; AF_VSOCK reaches a VM's host outside any namespace."""
    need("seccomp")
    families = range(64)

    def probe() -> dict[str, str]:
        out = {}
        for family in families:
            for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW):
                result = LIBC.syscall(NR["socket"], family, kind, 0)
                if result >= 0:
                    os.close(result)
                out[f"{family}/{kind}"] = "ok" if result >= 0 else errno_name(ctypes.get_errno())
        # socketpair() only for AF_UNIX (AF_TIPC has pairs too).
        pair = (ctypes.c_int * 2)()
        for family in (socket.AF_UNIX, 30):
            result = LIBC.syscall(NR["socketpair"], family, socket.SOCK_STREAM, 0, pair)
            if result >= 0:
                os.close(pair[0])
                os.close(pair[1])
            out[f"pair {family}"] = "ok" if result >= 0 else errno_name(ctypes.get_errno())
        return out

    before, after = in_child(filtered(), probe)
    # The kernel itself opens several families here, AF_VSOCK (40) among them on a VM.
    assert before["1/1"] == before["2/1"] == before["10/1"] == "ok"
    expected = {
        key: "ok" if int(key.split("/")[0]) in seccomp.ALLOWED_FAMILIES else "EPERM"
        for key in before
        if not key.startswith("pair")
    }
    assert {k: v for k, v in after.items() if not k.startswith("pair")} == expected
    assert seccomp.ALLOWED_FAMILIES == ()  # a cell needs no socket of its own (ReTool's cells)
    assert (after["pair 1"], after["pair 30"]) == ("ok", "EPERM")


@pytest.mark.parametrize("refused", [(), seccomp.MEMFD + seccomp.SYSV_IPC], ids=["counted", "uncounted"])
def test_seccomp_refuses_memory_a_cgroup_would_not_count_only_when_asked(refused):
    need("seccomp")

    def probe() -> dict[str, str]:
        segment = LIBC.shmget(0, 4096, 0o1600)  # IPC_PRIVATE, IPC_CREAT
        shm = "ok" if segment >= 0 else errno_name(ctypes.get_errno())
        if segment >= 0:
            LIBC.shmctl(segment, 0, None)  # IPC_RMID
        queue = LIBC.msgget(0, 0o1600)
        msg = "ok" if queue >= 0 else errno_name(ctypes.get_errno())
        if queue >= 0:
            LIBC.msgctl(queue, 0, None)
        array = LIBC.semget(0, 1, 0o1600)
        sem = "ok" if array >= 0 else errno_name(ctypes.get_errno())
        if array >= 0:
            LIBC.semctl(array, 0, 0)
        memfd = outcome(lambda: os.close(os.memfd_create("x")))
        return {"memfd": memfd, "shm": shm, "msg": msg, "sem": sem}

    before, after = in_child(filtered(refused), probe)
    assert set(before.values()) == {"ok"}
    assert after == {name: "EPERM" if refused else "ok" for name in before}


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

    # Unfiltered, a new user namespace was refused once (EINVAL) in a fresh-clone suite with a core
    # busy and sandbox cells starting beside it, and made at every rerun: the probe is tried again, and
    # a host that keeps refusing it cannot show what the filter adds.
    for _ in range(3):
        before, after = in_child(filtered(), probe)
        if before["unshare_user"] == "ok":
            break
    else:
        pytest.skip(f"this process cannot make a user namespace even unfiltered ({before['unshare_user']})")
    assert before == {"fork": "ok", "unshare_user": "ok"}
    assert after == {"fork": "ok", "unshare_user": "EPERM"}


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_seccomp_program_jumps_are_resolved_forward(machine):
    arch = seccomp.arch_for(machine)
    code = seccomp.assemble(seccomp.program(arch, seccomp.MEMFD + seccomp.SYSV_IPC))
    jumps = [(n, jt, jf) for n, (op, jt, jf, _) in enumerate(code) if op & 0x07 == 0x05]  # BPF_JMP class
    assert jumps and all(n + 1 + max(jt, jf) < len(code) for n, jt, jf in jumps)
    assert code[-1] == (seccomp.RET, 0, 0, seccomp.RET_KILL_PROCESS)
    # The architecture is checked first: a system call of another one (32-bit ARM) kills the process.
    assert code[:2] == [
        (seccomp.LD_ABS, 0, 0, seccomp.ARCH_OFFSET),
        (seccomp.JEQ, 0, len(code) - 3, arch.audit),
    ]


def test_seccomp_architecture_is_chosen_by_the_machine():
    x86, arm = seccomp.arch_for("x86_64"), seccomp.arch_for("aarch64")
    assert (x86.audit, x86.has_x32, x86.numbers["socket"]) == (0xC000003E, True, 41)
    assert (arm.audit, arm.has_x32, arm.numbers["socket"]) == (0xC00000B7, False, 198)
    arm_program = seccomp.program(arm)
    # No x32 check on aarch64 (it has no such ABI), and every number is the generic table's.
    assert not any(isinstance(i, seccomp._Insn) and i.k == seccomp.X32_SYSCALL_BIT for i in arm_program)
    assert seccomp._Insn(seccomp.JEQ, 117, true="eperm") in arm_program  # ptrace
    for machine in ("riscv64", "armv7l", "aarch64_be", "i686"):
        assert seccomp.arch_for(machine) is None and not seccomp.supported(machine)


@pytest.mark.parametrize(
    ("table", "header"),
    [
        (seccomp.X86_64, "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
        (seccomp.GENERIC, "/usr/include/asm-generic/unistd.h"),
    ],
    ids=["x86_64", "generic"],
)
def test_seccomp_tables_match_the_kernel_headers(table, header):
    """The numbers agree with the installed kernel headers (linux-libc-dev): a wrong number would
    refuse an innocent call and let the intended one through."""
    if not Path(header).exists():
        pytest.skip(f"{header} is not installed")
    text = Path(header).read_text()
    defined = dict(re.findall(r"#define __NR_(\w+)\s+(\d+)", text))
    # The generic table names a call whose 32-bit twin takes 64-bit offsets by its shared number
    # (`#define __NR_mmap __NR3264_mmap`).
    shared = dict(re.findall(r"#define __NR3264_(\w+)\s+(\d+)", text))
    aliases = re.findall(r"#define __NR_(\w+)\s+__NR3264_(\w+)", text)
    defined |= {name: shared[alias] for name, alias in aliases if alias in shared}
    assert {name: int(defined[name]) for name in table} == table
    # pivot_root, which the zygote calls without a C library wrapper, from the same table.
    assert (
        int(defined["pivot_root"]) == libc.SYS_PIVOT_ROOT["x86_64" if table is seccomp.X86_64 else "aarch64"]
    )


def test_a_host_without_a_filter_names_its_machine():
    spec = {
        "uid": 65534, "host_euid": 0, "namespaces": True, "seccomp": False, "machine": "riscv64",
        "isolation": "required", "landlock_abi": 0, "disk_bytes": 1 << 26, "memory_cgroup": False,
        "limits": {"memory_bytes": 1 << 30, "nproc": 32}, "cpu_cgroup": False, "cpu_cores": 1.0, "nice": 10,
        "cpu_weight": 8,
    }  # fmt: skip
    seen = {"uid": 65534, "gid": 65534, "groups": [], "no_new_privs": True, "seccomp": False,
            "interfaces": ["lo"], "ppid": 1, "root_readonly": True, "cwd_writable": True,
            "disk_bytes": 1 << 26}  # fmt: skip
    found = observe(spec, seen, ["user"], "cgroup")
    assert found.missing["seccomp"].endswith("(no filter for riscv64: x86_64 and aarch64 have one)")
    # Neither a memory cgroup nor a filter refusing memfd: the memory cap is missing too.
    assert found.missing["memory"] == WHAT_IS_LOST["memory"]
    assert "MISSING: seccomp" in found.line()


def test_a_cells_init_removes_the_sysv_objects_it_leaves():
    """What a dead IPC namespace holds is freed later by the kernel, still charged to the slot's memory
    cgroup meanwhile: the cell's init removes it at once."""
    if os.geteuid() != 0:
        pytest.skip("an IPC namespace of its own needs root (the sandbox's init has it)")

    def live() -> dict[str, int]:
        return {
            kind: len(Path(f"/proc/sysvipc/{kind}").read_text().splitlines()) - 1
            for kind in ("shm", "msg", "sem")
        }

    def probe() -> dict[str, dict[str, int]]:
        segment = LIBC.shmget(0, 1 << 20, 0o1600)
        LIBC.shmat.restype = ctypes.c_void_p
        address = LIBC.shmat(segment, None, 0)
        ctypes.memset(address, 1, 1 << 20)
        LIBC.shmdt(ctypes.c_void_p(address))
        LIBC.msgget(0, 0o1600)
        LIBC.semget(0, 4, 0o1600)
        left = live()
        ipc.remove_sysv_objects()
        return {"left": left, "after": live()}

    _, found = in_child(lambda: unshare(CLONE_NEWIPC), probe, probe_before=False)
    assert found == {"left": {"shm": 1, "msg": 1, "sem": 1}, "after": {"shm": 0, "msg": 0, "sem": 0}}


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
