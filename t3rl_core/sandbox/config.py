"""Sandbox configs, registered in `t3rl_core.registries.SANDBOXES` (pydantic only)."""

from __future__ import annotations

import os
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, ValidationInfo, field_validator

from t3rl_core.fields import (
    SECONDS_USUAL,
    Above,
    AtLeast,
    Delay,
    Distinct,
    EnvVarName,
    Interpreter,
    LocalPath,
    ModuleName,
    RegistryName,
    SandboxFusionUrl,
    Seconds,
    Text,
    UnprivilegedId,
    Usual,
)
from t3rl_core.registries import SANDBOXES
from t3rl_core.registry import registered
from t3rl_core.sandbox.protections import Layer
from t3rl_core.secret_env import credential_values, holds_credential
from t3rl_core.secret_names import is_secret_name
from t3rl_core.strict import StrictModel

# Limits too small for any cell (warned about, the floor as the fix): Python's start alone takes ~30 ms of
# CPU and numpy's import ~100 ms more, 1 s or longer of wall time below a tenth of a core, so every cell
# would run into its timeout; a traceback's last lines are some hundred bytes, and a cell writing past
# max_output_bytes is killed, so below 4 KiB most errors kill the cell instead of reaching the model.
CELL_CORES = Usual(
    256.0,
    1.0,
    "no server node has more cores",
    least=0.1,
    least_why="Python's start alone takes ~30 ms of CPU: every cell would run into its timeout",
)
CELL_OUTPUT = Usual(
    float(1 << 30),
    float(1 << 20),
    "a GiB of one cell's output is no answer a model reads",
    least=4096.0,
    least_why="a traceback is longer, and a cell writing past the limit is killed",
)


class SandboxConfig(StrictModel):
    """Base of every sandbox section; subclasses narrow `name` to a Literal."""

    name: RegistryName


# The trees a cell's process is loaded from: the system's (the loader, libc, the shell) and the
# interpreter's (its prefix: the standard library, site-packages).
_SYSTEM_TREES = (
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/usr/bin",
    "/usr/sbin",
    "/usr/lib",
    "/usr/lib64",
)


def _run_from() -> tuple[str, ...]:
    import sys  # the interpreter running t3rl: the cells' own when `python` is None

    return (*_SYSTEM_TREES, os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix))


def _system_left_visible(path: str) -> str:
    """A hidden path (covered by an empty directory after the private dirs, whose covers bind the
    interpreter's trees back) must not hold a tree the cells load from: the modules a cell imports, the
    libraries they link, would be gone, every such code call would fail, and the model would train on
    the errors."""
    normal = os.path.normpath(os.path.expanduser(path))
    for tree in _run_from():
        if tree == normal or tree.startswith(normal.rstrip("/") + "/"):
            raise ValueError(
                f"{path} holds {tree}, which the cells load code from: hidden, their imports fail"
            )
    return path


# A path hidden in every cell.
CoveredPath = Annotated[LocalPath, AfterValidator(_system_left_visible)]


class LocalSandboxConfig(SandboxConfig):
    """A fresh, resource-limited Python process per cell on this machine; no server needed."""

    name: Literal["local"] = "local"
    # Interpreter that runs the cells; None = the one running t3rl.
    python: Interpreter | None = None
    # Wall-clock limit per cell, seconds (ReTool's SandboxFusion run_timeout is 10).
    timeout_s: Seconds = 10.0
    # CPU-time limit per process (RLIMIT_CPU), seconds; None = the wall-clock limit rounded up.
    cpu_time_s: Annotated[int, SECONDS_USUAL] | None = Field(None, ge=1)
    # Address-space limit per process (RLIMIT_AS), MiB; with a memory cgroup (root, and a host that
    # allows it) also the cell's whole memory, all processes and shared memory together, plus its files.
    memory_mb: int = Field(1024, ge=64)
    # CPUs' worth of time a cell's processes may use together (a cpu cgroup's quota, where t3rl is root
    # and the host has the controller; there all cells together also weigh as `max_concurrency`
    # processes of t3rl's, however many threads they run); None = no quota. Without a cpu cgroup cells
    # run at nice 10.
    cpu_cores: Annotated[float, CELL_CORES] | None = Field(1.0, gt=0)
    # Processes and threads the cell may have at once (its slot's pids cgroup, which also holds the
    # slot's zygote and the cell's init; else RLIMIT_NPROC of the cell uid).
    max_processes: int = Field(32, ge=1)
    # Descriptors a process of the cell may hold (RLIMIT_NOFILE): each can pin kernel memory that no
    # limit counts (the data queued in a socket pair, a pipe's buffer).
    max_open_files: int = Field(256, ge=16)
    # Largest file the cell may write (RLIMIT_FSIZE), MiB.
    max_file_size_mb: int = Field(16, ge=0)
    # Bytes kept of stdout and of stderr each; a cell writing more is killed (status output_limit).
    max_output_bytes: Annotated[int, CELL_OUTPUT] = Field(1 << 20, ge=1)
    # Cells running at once.
    max_concurrency: int = Field(8, ge=1)
    # best_effort: every protection the host allows, a warning naming the missing ones; required:
    # refuse to run without all of them; none: plain processes (rlimits, scrubbed env only).
    isolation: Literal["best_effort", "required", "none"] = "best_effort"
    # Protections whose absence is an error even under best_effort (see t3rl_core.sandbox.protections).
    require: list[Layer] = Field(default_factory=list)
    # The unprivileged uid and gid cells run as when t3rl is root (default: nobody/nogroup).
    cell_uid: UnprivilegedId = 65534
    cell_gid: UnprivilegedId = 65534
    # Total size of everything a cell writes (its directory is a tmpfs of this size), MiB.
    cell_disk_mb: int = Field(64, ge=1)
    # Covered by private, empty, read-only mounts in every cell: where other programs keep unix sockets
    # and scratch files (docker.sock and dbus under /run, Ray's session sockets under /tmp).
    private_dirs: Annotated[list[LocalPath], Distinct()] = Field(
        default_factory=lambda: ["/tmp", "/run", "/var/run", "/var/tmp", "/dev/shm"]
    )
    # Modules the zygote imports once, so cells that use them start warm (e.g. [numpy, sympy]).
    preload: Annotated[list[ModuleName], Distinct()] = Field(default_factory=list)
    # Paths covered by an empty directory (or /dev/null for files) inside the cell's read-only
    # filesystem: credentials the cell's user could otherwise read ("~" is t3rl's home; matters most
    # without the user layer, i.e. when t3rl is not root and cells keep its uid).
    hidden_paths: Annotated[list[CoveredPath], Distinct()] = Field(
        default_factory=lambda: [
            *("~/.ssh", "~/.aws", "~/.config", "~/.cache", "~/.netrc", "~/.git-credentials"),
            *("~/.docker", "~/.kube", "~/.huggingface", "~/.npmrc", "~/.pypirc"),
        ]
    )
    # Host paths cells may read besides the system (/usr, /lib, ..., the loader's cache and time zone of
    # /etc, the CPU topology of /sys, their own /proc), the interpreter's trees and their own directory
    # ("~" is t3rl's home; one below /etc is also shown in the cells' /etc). Everything else (the rest of
    # /etc, the project's checkout, run directories, prepared data, homes) is unreadable where Landlock
    # is available.
    readable_paths: Annotated[list[LocalPath], Distinct()] = Field(default_factory=list)
    # Environment variables copied from t3rl's own environment; everything else is dropped. A secret
    # name is refused, and a value that holds a credential (by its form, a URL's password) is dropped.
    env_allowlist: Annotated[list[EnvVarName], Distinct()] = Field(
        default_factory=lambda: ["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ"]
    )
    # Variables set in every cell (after the allow-list).
    env: dict[EnvVarName, Text] = Field(
        default_factory=lambda: {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    )

    # Cells run code the model writes: a credential in their environment can be printed into an
    # observation, and from there into trajectories and the trained weights.
    @field_validator("env_allowlist")
    @classmethod
    def _no_credential_copied(cls, names: list[str]) -> list[str]:
        given = [name for name in names if is_secret_name(name)]
        if given:
            raise ValueError(f"{', '.join(given)}: {_NO_CREDENTIAL}")
        return names

    # A hidden path covers whatever is below it, a readable one too: the cells would not see what the
    # user asked them to read, and nothing said so (`~/.cache/huggingface/datasets` under `~/.cache`).
    @field_validator("readable_paths")
    @classmethod
    def _not_below_a_hidden_path(cls, readable: list[str], info: ValidationInfo) -> list[str]:
        hidden = info.data.get("hidden_paths", [])
        for path in readable:
            for cover in hidden:
                mine, theirs = os.path.expanduser(path).rstrip("/"), os.path.expanduser(cover).rstrip("/")
                if mine == theirs or mine.startswith(theirs + "/"):
                    raise ValueError(
                        f"{path} is below hidden_paths' {cover}, which covers it: cells would not see it. "
                        f"Drop {cover} from hidden_paths (a credential file below a readable path is hidden "
                        "from cells whatever hidden_paths names: t3rl_core.secret_files)"
                    )
        return readable

    @field_validator("env")
    @classmethod
    def _no_credential_set(cls, env: dict[str, str]) -> dict[str, str]:
        # A value composed from a credential variable (`NOTE: ${oc.env:HF_TOKEN}`) is that credential.
        known = credential_values(os.environ)
        given = [name for name, value in env.items() if holds_credential(name, value, known)]
        if given:
            raise ValueError(f"{', '.join(given)}: {_NO_CREDENTIAL}")
        return env


# The languages SandboxFusion's RunCodeRequest takes (bytedance/SandboxFusion, sandbox/datasets/types.py).
SandboxFusionLanguage = Literal[
    "python", "cpp", "nodejs", "go", "go_test", "java", "php", "csharp", "bash", "typescript", "sql",
    "rust", "cuda", "lua", "R", "perl", "D_ut", "ruby", "scala", "julia", "pytest", "junit",
    "kotlin_script", "jest", "verilog", "python_gpu", "lean", "swift", "racket",
]  # fmt: skip

_NO_CREDENTIAL = (
    "a sandbox cell runs code the model writes and must not get a credential (it could print it into "
    "a trajectory); remove it"
)


class SandboxFusionConfig(SandboxConfig):
    """A client of a SandboxFusion server's `POST /run_code` (bytedance/SandboxFusion)."""

    name: Literal["sandbox_fusion"] = "sandbox_fusion"
    # Server base URL (Agent-R1's ReTool: http://localhost:8080).
    url: SandboxFusionUrl = "http://localhost:8080"
    # RunCodeRequest.language: a name the server does not know fails every cell, and the model trains on
    # the errors.
    language: SandboxFusionLanguage = "python"
    # Limits the server enforces per cell, seconds (RunCodeRequest.run_timeout / compile_timeout).
    run_timeout_s: Seconds = 10.0
    compile_timeout_s: Seconds = 10.0
    # HTTP timeout of one attempt, seconds; None = run_timeout_s + compile_timeout_s + 10. Above the run's
    # limit: the server answers a cell that runs to its limit after it, so a shorter wait cuts that answer
    # off and retries the cell until its attempts are spent.
    request_timeout_s: Annotated[Seconds | None, Above("run_timeout_s")] = None
    # Requests in flight at once (Agent-R1: 32).
    max_concurrency: int = Field(32, ge=1)
    # Attempts per cell on transport errors, HTTP errors and status SandboxError (Agent-R1: 5).
    max_attempts: int = Field(5, ge=1)
    # Exponential backoff between attempts: initial · 2^k, capped, with full jitter.
    backoff_initial_s: Delay = 0.5
    backoff_max_s: Annotated[Delay, AtLeast("backoff_initial_s")] = 8.0


AnySandboxConfig = registered(SandboxConfig, SANDBOXES)
