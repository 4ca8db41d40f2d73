"""The protections a local sandbox has on this host, each one observed, not assumed.

A probe cell runs through the real path at start-up and reports what it sees (its uid, interfaces,
parent PID, read-only root, the size of its directory, its seccomp mode); the cell-side layers also
report themselves on every cell, so a layer that stops applying turns into a sandbox error instead of
silently vanishing. The result is one log line, a `sandbox` section of the run manifest, and the
check behind `sandbox.require`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

Layer = Literal[
    "user", "network", "pid", "mount", "disk", "seccomp", "landlock", "process_limit", "memory", "cpu"
]
LAYERS: tuple[Layer, ...] = get_args(Layer)
# The layers a cell applies to itself (and reports per cell); the rest are set up before it runs.
CELL_LAYERS: frozenset[str] = frozenset({"user", "seccomp", "landlock"})

WHAT_IS_LOST: dict[str, str] = {
    "user": "cells run with the host uid: they read whatever t3rl's user can (as root: /etc/shadow)",
    "network": "cells can open network connections",
    "pid": "cells see and can signal other processes, and can leave processes behind",
    "mount": (
        "cells write wherever their uid may, reach unix sockets under /tmp and /run, and hidden_paths "
        "are not covered (only Landlock's read allow-list keeps credentials unread)"
    ),
    "disk": "no total disk cap per cell (only the per-file size limit)",
    "seccomp": (
        "cells can ptrace, create user namespaces, open sockets of any family (AF_UNIX, AF_VSOCK) and bind "
        "abstract ones, and use the kernel keyring of their uid, which every cell shares (without the user "
        "layer, t3rl's user's own keys)"
    ),
    "landlock": (
        "no second, kernel-enforced limit on where cells write, nor on signals and abstract sockets; cells "
        "read every file their uid may (the project, run directories, prepared data)"
    ),
    "process_limit": "fork bombs are stopped only by the wall-clock limit",
    "memory": "only each process's address space is limited: shared memory (memfd, SysV) is not counted",
    "cpu": "a cell's busy threads compete with t3rl's trainer and rollout one for one",
}

PROBE_CELL = """
import json, os
def status(key):
    with open("/proc/self/status") as f:
        return next((line.split()[1] for line in f if line.startswith(key + ":")), None)
disk = os.statvfs(".")
try:
    os.listdir("/")
    reads_confined = False
except PermissionError:
    reads_confined = True
with open("/proc/self/net/dev") as f:  # the cell's own network namespace (no socket needed)
    interfaces = sorted(line.split(":")[0].strip() for line in f if ":" in line)
print(json.dumps({
    "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
    "no_new_privs": status("NoNewPrivs") == "1", "seccomp": status("Seccomp") == "2",
    "interfaces": interfaces,
    "ppid": os.getppid(),
    "root_readonly": bool(os.statvfs("/").f_flag & os.ST_RDONLY),
    "cwd_writable": os.access(".", os.W_OK),
    "disk_bytes": disk.f_blocks * disk.f_frsize,
    "reads_confined": reads_confined,
}))
"""


@dataclass(frozen=True)
class Protections:
    """Layer → how it holds here, for the active ones; layer → what is lost, for the missing ones."""

    active: dict[str, str]
    missing: dict[str, str] = field(default_factory=dict)

    def line(self) -> str:
        """The start-up log line."""
        held = ", ".join(f"{name} ({how})" for name, how in self.active.items()) or "none"
        text = f"local sandbox protections: {held}"
        if self.missing:
            text += "; MISSING: " + "; ".join(f"{name}: {why}" for name, why in self.missing.items())
        return text

    def not_held(self, required: list[str]) -> list[str]:
        return [name for name in required if name not in self.active]

    def to_manifest(self) -> dict[str, Any]:
        return {"active": dict(self.active), "missing": dict(self.missing)}


MemoryCap = Literal["cgroup", "seccomp", "none"]


def memory_cap_text(cap: MemoryCap, memory_mb: int, disk_mb: int, max_processes: int) -> str:
    """How a cell's memory is capped, in the words of the log line, the manifest and `t3rl plan`."""
    if cap == "cgroup":
        return (
            f"memory cgroup: {memory_mb + disk_mb} MiB for all of a cell's processes, shared memory "
            f"and files together (memory_mb {memory_mb} + cell_disk_mb {disk_mb})"
        )
    per_process = f"RLIMIT_AS of {memory_mb} MiB per process (up to {max_processes} processes)"
    if cap == "seccomp":
        return (
            f"no memory cgroup on this host: {per_process}; memfd_create, memfd_secret and SysV "
            f"shm/msg/sem refused by seccomp; POSIX shared memory within the {disk_mb} MiB cell dir"
        )
    return f"{per_process} only: {WHAT_IS_LOST['memory']}"


def observe(
    cell_spec: dict[str, Any], seen: dict[str, Any], applied: list[str], process_limit: str
) -> Protections:
    """What holds, from the zygote's settings, the probe cell's observations and what the cell applied."""
    active: dict[str, str] = {}
    # Another uid than t3rl's, or t3rl's own mapped into a user namespace; without a namespace, a
    # non-root t3rl's cells keep its uid and read (and signal) whatever it can.
    other_uid = seen["uid"] not in (0, cell_spec["host_euid"])
    unprivileged = other_uid or (cell_spec["host_euid"] != 0 and cell_spec["namespaces"])
    if "user" in applied and unprivileged and seen["groups"] in ([], [seen["gid"]]) and seen["no_new_privs"]:
        who = (
            f"uid {seen['uid']}"
            if seen["uid"]
            else f"the invoking uid {cell_spec['host_euid']} via a user namespace"
        )
        active["user"] = f"{who}, no supplementary groups, no_new_privs, no capabilities"
    if cell_spec["namespaces"] and set(seen["interfaces"]) <= {"lo"}:
        active["network"] = "own network namespace, loopback down"
    if seen["ppid"] == 1:
        active["pid"] = "own PID and IPC namespaces per cell"
    if cell_spec["namespaces"] and seen["root_readonly"]:
        active["mount"] = (
            "a read-only root of the system, the interpreter and the project's code only; its own /etc, "
            "/tmp and /dev/shm"
        )
    if cell_spec["namespaces"] and seen["cwd_writable"] and seen["disk_bytes"] <= cell_spec["disk_bytes"]:
        active["disk"] = f"cell dir is a {cell_spec['disk_bytes'] >> 20} MiB tmpfs"
    if "seccomp" in applied and seen["seccomp"]:
        active["seccomp"] = (
            "ptrace, namespaces, sockets of every family, io_uring, AIO, keyrings, bpf refused"
        )
    if "landlock" in applied:
        active["landlock"] = (
            f"ABI {cell_spec['landlock_abi']}: writes only in the cell dir"
            + (", reads only of the system, the interpreter and the cell dir" * seen["reads_confined"])
            + (", no TCP" if cell_spec["landlock_abi"] >= 4 else "")
            + (", signals and abstract sockets scoped" if cell_spec["landlock_abi"] >= 6 else "")
        )
    if process_limit != "none":
        active["process_limit"] = (
            "pids cgroup" if process_limit == "cgroup" else "RLIMIT_NPROC of the cell uid"
        )
    limits = cell_spec["limits"]
    cap = "cgroup" if cell_spec["memory_cgroup"] else "seccomp" if "seccomp" in active else "none"
    if cap != "none":
        active["memory"] = memory_cap_text(
            cap, limits["memory_bytes"] >> 20, cell_spec["disk_bytes"] >> 20, limits["nproc"]
        )
    if cell_spec["cpu_cgroup"]:
        cores = cell_spec["cpu_cores"]
        active["cpu"] = (
            f"cpu cgroup: all cells together weigh {cell_spec['cpu_weight']} processes of t3rl's"
            + (f", each at most {cores:g} CPU" if cores else "")
        )
    elif cell_spec["nice"]:
        active["cpu"] = f"no cpu cgroup: cells run at nice {cell_spec['nice']}"
    missing = {name: WHAT_IS_LOST[name] for name in LAYERS if name not in active}
    if "seccomp" in missing and cell_spec.get("seccomp_refused"):
        missing["seccomp"] += f" ({cell_spec['seccomp_refused']})"
    elif "seccomp" in missing and not cell_spec["seccomp"] and cell_spec["isolation"] != "none":
        missing["seccomp"] += f" (no filter for {cell_spec['machine']}: x86_64 and aarch64 have one)"
    return Protections(active=active, missing=missing)
