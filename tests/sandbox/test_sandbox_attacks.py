"""The attacks of issue 10 against the local sandbox, end to end: each test fails when every layer that
holds against it is removed (which layer holds when: docs/explanation/sandbox.md).

Run as root (CI is root): the cell drops to nobody. A test skips only when the host itself cannot
offer a layer it needs (checked without the sandbox's code, see conftest.host_offers).
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from t3rl_core.registries import SANDBOXES
from t3rl_core.sandbox import local
from t3rl_core.sandbox.base import SandboxResult
from t3rl_core.sandbox.local import LocalSandbox
from tests.sandbox.conftest import kept_names, need


def run(code: str, **overrides: object) -> SandboxResult:
    sandbox = SANDBOXES.build(SANDBOXES.validate({"name": "local", "timeout_s": 30.0, **overrides}))
    assert isinstance(sandbox, LocalSandbox)

    async def go() -> SandboxResult:
        try:
            return await sandbox.run(code)
        finally:
            await sandbox.aclose()

    return asyncio.run(go())


def attempt(expression: str) -> str:
    """Cell code printing 'ok' or the error's strerror for one attempted operation."""
    return f"try:\n    {expression}\n    print('ok')\nexcept OSError as err:\n    print(err.strerror)\n"


# ------------------------------------------------------------------------------- root-only host files


def test_root_only_files_are_unreadable(visible_dir):
    """A 0600 root file where a cell can see it (shown in its root and on Landlock's read list by
    `readable_paths`): the cell's uid alone refuses it."""
    need("user")
    secret = visible_dir / "root-only.txt"
    secret.write_text("root secret")
    secret.chmod(0o600)
    code = (
        "import os\n"
        "print(os.getuid(), os.getgid(), os.getgroups())\n"
        "print([line for line in open('/proc/self/status') if line.startswith('NoNewPrivs')][0].split()[1])\n"
        + attempt(f"open({str(secret)!r}).read()")
        + attempt("open('/etc/shadow').read()")
        + attempt("os.setuid(0)")
    )
    r = run(code, readable_paths=[str(visible_dir)])
    assert r.status == "success", r
    lines = r.stdout.splitlines()
    if os.geteuid() == 0:
        assert lines[0] == "65534 65534 []"
    # /etc/shadow is not in a cell's /etc at all where the mount layer holds.
    assert lines[1:] == ["1", "Permission denied", lines[3], "Operation not permitted"]
    assert lines[3] in ("Permission denied", "No such file or directory")


def test_root_only_directories_are_closed(visible_dir):
    """A 0700 root directory where a cell can see it (`readable_paths` shows it): the uid refuses."""
    need("user")
    closed = visible_dir / "root-only"
    closed.mkdir()
    (closed / "inside.txt").write_text("root data")
    (closed / "inside.txt").chmod(0o644)  # readable by mode: only the directory's mode keeps it
    closed.chmod(0o700)
    code = attempt(f"os.listdir({str(closed)!r})") + attempt(f"open({str(closed / 'inside.txt')!r}).read()")
    r = run("import os\n" + code, readable_paths=[str(visible_dir)])
    assert (r.status, r.stdout.splitlines()) == ("success", ["Permission denied"] * 2), r


def test_world_writable_host_dirs_stay_unwritten(visible_dir):
    """A 0777 directory and a 0666 file of the host, shown to the cell (`readable_paths`): their modes let
    any uid write, the read-only filesystem does not (Landlock would refuse too)."""
    need("mount")
    open_dir = visible_dir / "open"
    open_dir.mkdir()
    (open_dir / "file.txt").write_text("host data")
    (open_dir / "file.txt").chmod(0o666)
    open_dir.chmod(0o777)
    code = (
        "import os\n"
        + attempt(f"open({str(open_dir / 'planted.txt')!r}, 'w')")
        + attempt(f"open({str(open_dir / 'file.txt')!r}, 'a').write('x')")
        + attempt(f"os.remove({str(open_dir / 'file.txt')!r})")
    )
    r = run(code, readable_paths=[str(visible_dir)])
    assert (r.status, r.stdout.splitlines()) == ("success", ["Read-only file system"] * 3), r
    assert sorted(p.name for p in open_dir.iterdir()) == ["file.txt"]
    assert (open_dir / "file.txt").read_text() == "host data"


def test_configured_cell_uid_is_used():
    need("user")
    if os.geteuid() != 0:
        pytest.skip("only a root host changes the cell's uid")
    r = run("import os\nprint(os.getuid(), os.getgid(), os.getgroups())", cell_uid=4242, cell_gid=4343)
    assert (r.status, r.stdout) == ("success", "4242 4343 []\n")


# ---------------------------------------------------------------------------------- host unix sockets


class _UnixServer:
    """A real listening unix socket on the host; records every connection it accepts."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(address)
        if not address.startswith("\0"):
            os.chmod(address, 0o777)  # the file's permissions would let any uid connect
        self.sock.listen()
        self.sock.settimeout(0.05)
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()
        if not self.address.startswith("\0"):
            with_path = Path(self.address)
            with_path.unlink(missing_ok=True)


@pytest.fixture
def unix_servers(visible_dir: Path) -> Iterator[list[_UnixServer]]:
    tag = uuid.uuid4().hex[:12]
    addresses = [f"/tmp/t3rl-test-{tag}.sock", str(visible_dir / "open.sock"), f"\0t3rl-test-{tag}"]
    servers = [_UnixServer(address) for address in addresses]
    try:
        yield servers
    finally:
        for server in servers:
            server.close()


def test_host_unix_sockets_are_unreachable(unix_servers):
    need("mount", "seccomp")
    code = "import socket\n"
    for server in unix_servers:
        code += attempt(f"socket.socket(socket.AF_UNIX).connect({server.address!r})")
    r = run(code)
    assert r.status == "success", r
    # Refused at socket() by seccomp: not even a socket to connect with.
    assert r.stdout.splitlines() == ["Operation not permitted"] * 3
    assert [server.accepted for server in unix_servers] == [0, 0, 0]
    # The servers themselves work: the host can connect.
    with socket.socket(socket.AF_UNIX) as client:
        client.connect(unix_servers[1].address)


def test_datagram_socketpair_cannot_reach_host_sockets(visible_dir):
    need("seccomp")
    target = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = str(visible_dir / "dgram.sock")
    target.bind(path)
    os.chmod(path, 0o777)
    target.settimeout(0.2)
    code = "import socket\n" + attempt(
        f"a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.sendto(b'hi', {path!r})"
    )
    # Stream socketpairs stay available: asyncio's event loop needs one.
    code += "import asyncio\nasyncio.run(asyncio.sleep(0))\nprint('asyncio ok')\n"
    try:
        r = run(code)
        assert (r.status, r.stdout.splitlines()) == ("success", ["Operation not permitted", "asyncio ok"]), r
        with pytest.raises(TimeoutError):
            target.recv(16)
    finally:
        target.close()


def test_private_dirs_are_empty(unix_servers):
    need("mount", "disk")
    code = (
        "import os\n"
        "for d in ['/tmp', '/run', '/var/run', '/var/tmp', '/dev/shm']:\n"
        "    print(d, sorted(os.listdir(d)), 'ro' if os.statvfs(d).f_flag & os.ST_RDONLY else 'rw')\n"
        f"print(os.path.exists({unix_servers[0].address!r}))\n"
    )
    r = run(code, readable_paths=["/run", "/var/run", "/var/tmp"])  # else Landlock refuses listing them
    assert r.status == "success", r
    # /tmp and /dev/shm are the cell's own tmpfs (holding only the interpreter's, venv's and checkout's
    # trees, read-only, where those live below them); the others read-only and empty.
    tmp, shm = kept_names("/tmp"), kept_names("/dev/shm")
    expected = [
        f"/tmp {tmp} rw",
        "/run [] ro",
        "/var/run [] ro",
        "/var/tmp [] ro",
        f"/dev/shm {shm} rw",
        "False",
    ]
    assert r.stdout.splitlines() == expected


def test_configured_private_dir_is_covered(visible_dir):
    need("mount")
    (visible_dir / "service.sock.txt").write_text("x")
    default_dirs = ["/tmp", "/run", "/var/run", "/var/tmp", "/dev/shm"]
    code = f"import os\nprint(os.listdir({str(visible_dir)!r}))"
    readable = [str(visible_dir)]  # else Landlock refuses listing it
    assert run(code, readable_paths=readable).stdout == "['service.sock.txt']\n"
    assert run(code, readable_paths=readable, private_dirs=[*default_dirs, str(visible_dir)]).stdout == "[]\n"


# ----------------------------------------------------------------------------------------------- disk


def test_total_disk_use_is_capped():
    need("disk")
    code = (
        "import errno, os\n"
        "written = 0\n"
        "try:\n"
        "    for n in range(100):\n"
        "        with open(f'f{n}', 'wb') as f:\n"
        "            for _ in range(4):\n"
        "                f.write(b'x' * (1 << 20))\n"
        "                f.flush()\n"
        "                written += 1\n"
        "except OSError as err:\n"
        "    print(errno.errorcode[err.errno], written)\n"
    )
    r = run(code, cell_disk_mb=8, max_file_size_mb=4)
    assert r.status == "success", r
    name, written = r.stdout.split()
    # Each file is within the per-file limit; the sum hits the 8 MiB total.
    assert name == "ENOSPC" and 6 <= int(written) <= 8


def test_disk_cap_is_per_cell_and_freed():
    need("disk")
    fill = "with open('big', 'wb') as f:\n    f.write(b'x' * (6 << 20))\nprint('ok')\n"
    sandbox = SANDBOXES.build(SANDBOXES.validate({"name": "local", "cell_disk_mb": 8, "max_file_size_mb": 8}))

    async def go() -> list[SandboxResult]:
        try:
            return [await sandbox.run(fill) for _ in range(3)]
        finally:
            await sandbox.aclose()

    assert [r.stdout for r in asyncio.run(go())] == ["ok\n"] * 3


def test_no_socket_of_any_family_can_be_opened():
    """The network namespace does not cover AF_VSOCK (a VM's host answers on it) nor families a kernel
    adds later: seccomp refuses socket() of every family a cell does not need (all of them)."""
    need("seccomp")
    code = "import socket\n"
    code += attempt("socket.socket(40, socket.SOCK_STREAM).bind((0xFFFFFFFF, 0xFFFFFFFF))")  # AF_VSOCK
    code += attempt("socket.create_connection(('127.0.0.1', 9), timeout=1)")
    code += "refused = []\nfor family in range(64):\n    try:\n        socket.socket(family).close()\n"
    code += "    except OSError as err:\n        refused.append(err.errno == 1)\n"
    code += "print(len(refused), all(refused))\n"
    r = run(code)
    assert (r.status, r.stdout.splitlines()) == (
        "success",
        ["Operation not permitted", "Operation not permitted", "64 True"],
    ), r


# ------------------------------------------------------------------------------ ptrace and namespaces


def test_cell_cannot_ptrace_its_supervisor():
    need("seccomp")
    code = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "for request in (16, 0x4206):  # PTRACE_ATTACH, PTRACE_SEIZE\n"
        "    result = libc.ptrace(request, os.getppid(), None, None)\n"
        "    print(result, os.strerror(ctypes.get_errno()))\n"
    )
    r = run(code, timeout_s=60.0)
    # Refused at once: the supervisor is neither stopped nor frozen until the wall-clock limit.
    assert (r.status, r.stdout.splitlines()) == ("success", ["-1 Operation not permitted"] * 2), r
    assert r.duration_s < 30


def test_user_namespaces_cannot_be_created():
    need("seccomp")
    code = (
        "import ctypes, os, subprocess\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print(libc.unshare(0x10000000), os.strerror(ctypes.get_errno()))  # CLONE_NEWUSER\n"
        "done = subprocess.run(['unshare', '--user', 'true'], capture_output=True, text=True)\n"
        "print(done.returncode != 0, 'Operation not permitted' in done.stderr)\n"
    )
    r = run(code)
    assert (r.status, r.stdout.splitlines()) == ("success", ["-1 Operation not permitted", "True True"]), r


def test_threads_and_subprocesses_still_work():
    """clone3 answers ENOSYS and the C library falls back to clone, and /dev/shm (for multiprocessing's
    semaphores) is the cell's own, inside its disk cap: ordinary work is unaffected."""
    code = (
        "import subprocess, sys, threading\n"
        "t = threading.Thread(target=print, args=('thread',))\n"
        "t.start(); t.join()\n"
        "done = subprocess.run([sys.executable, '-c', 'print(7)'], capture_output=True, text=True)\n"
        "print(done.stdout.strip())\n"
        "from concurrent.futures import ProcessPoolExecutor\n"
        "with ProcessPoolExecutor(2) as pool:\n"
        "    print(sum(pool.map(abs, [-1, -2, -3])))\n"
    )
    r = run(code, timeout_s=10.0)
    assert (r.status, r.stdout.splitlines()) == ("success", ["thread", "7", "6"]), r


@pytest.fixture(scope="module")
def under_tmp() -> Iterator[Path]:
    """A venv (of this interpreter, without pip) and a project directory below /tmp, the cell's own."""
    path = Path(tempfile.mkdtemp(prefix="t3rl-kept-", dir="/tmp"))
    path.chmod(0o700)  # closed to the cell uid, as pytest's and mkdtemp's directories are
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path / "venv")], check=True)
        (path / "project").mkdir()
        (path / "project" / "marker.txt").write_text("project file")
        (path / "project" / "marker.txt").chmod(0o666)  # writable by mode: only the read-only bind stops it
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_an_interpreter_and_project_under_tmp_stay_visible_read_only(under_tmp, monkeypatch):
    """A venv or checkout under /tmp (node-local scratch on a cluster) is bound back, read-only, over the
    cell's private /tmp: the cell runs that interpreter again and reads the project, and sees nothing
    else of the host's /tmp."""
    need("mount")
    venv, project = under_tmp / "venv", under_tmp / "project"
    monkeypatch.setattr(local, "PROJECT_DIR", project)
    code = (
        "import os, subprocess, sys\n"
        "print(sys.prefix)\n"
        "done = subprocess.run([sys.executable, '-c', 'print(7)'], capture_output=True, text=True)\n"
        "print(done.stdout.strip())\n"
        f"print(open({str(project / 'marker.txt')!r}).read())\n"
        + attempt("open(os.path.join(sys.prefix, 'planted'), 'w')")
        + attempt(f"open({str(project / 'marker.txt')!r}, 'a')")
        + "print(sorted(os.listdir('/tmp')))\n"
    )
    r = run(code, python=str(venv / "bin" / "python"))
    assert (r.status, r.stdout.splitlines()) == (
        "success",
        [
            str(venv),
            "7",
            "project file",
            "Read-only file system",
            "Read-only file system",
            f"[{under_tmp.name!r}]",
        ],
    ), r


def test_host_sysv_shared_memory_is_out_of_reach():
    need("pid")
    libc = ctypes.CDLL(None, use_errno=True)
    key = int.from_bytes(os.urandom(3), "little") + 1
    segment = libc.shmget(key, 4096, 0o1000 | 0o666)  # IPC_CREAT, readable and writable by anyone
    assert segment >= 0
    try:
        code = (
            "import ctypes, os\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            f"print(libc.shmget({key}, 0, 0), os.strerror(ctypes.get_errno()))\n"
        )
        r = run(code)
    finally:
        libc.shmctl(segment, 0, None)  # IPC_RMID
    assert (r.status, r.stdout) == ("success", "-1 No such file or directory\n"), r
