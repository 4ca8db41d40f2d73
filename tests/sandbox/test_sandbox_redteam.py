"""Red team: hostile ReTool cells of kinds no issue listed, against one shared local sandbox pool.

Each test states the safe behaviour and asserts it; what stops each kind is in
docs/explanation/sandbox.md ("Attacks tried, and what stops them"). Host-side targets live where a
cell could see them by file mode (outside /tmp, world-readable), so the layer that stops them is
exercised, not the covering of /tmp. The fallback (no namespaces) runs at the end, as nobody, in a
child whose own seccomp filter refuses to create namespaces.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from t3rl_core.sandbox import local
from t3rl_core.sandbox.base import SandboxResult
from t3rl_core.sandbox.config import LocalSandboxConfig
from t3rl_core.sandbox.local import PROJECT_DIR, LocalSandbox
from tests.sandbox.conftest import host_offers, need
from tests.sandbox.test_sandbox_non_root import SWITCH

SECRET = "t3rl-redteam-secret-" + uuid.uuid4().hex
# Credentials where the documentation of each tool puts them, relative to a home.
HOME_CREDENTIALS = (".netrc", ".cache/huggingface/token", ".config/wandb/settings", ".ssh/id_ed25519")
# Deadline for processes a cell left to disappear (polled; a loaded machine tears them down slowly).
GONE_DEADLINE_S = 30.0


class Pool:
    """One sandbox (several slots) and the event loop every test of this module drives it from."""

    def __init__(self, config: LocalSandboxConfig) -> None:
        self.loop = asyncio.new_event_loop()
        self.sandbox = LocalSandbox(config)

    def run(self, code: str) -> SandboxResult:
        return self.loop.run_until_complete(self.sandbox.run(code))

    def gather(self, *codes: str) -> list[SandboxResult]:
        async def together() -> list[SandboxResult]:
            return list(await asyncio.gather(*(self.sandbox.run(c) for c in codes)))

        return self.loop.run_until_complete(together())

    def serves(self) -> None:
        """The pool still answers an ordinary cell."""
        r = self.run("print(6 * 7)")
        assert (r.status, r.stdout) == ("success", "42\n"), r

    def close(self) -> None:
        self.loop.run_until_complete(self.sandbox.aclose())
        self.loop.close()


@pytest.fixture(scope="module")
def planted() -> Iterator[Path]:
    """A home with credentials and a run directory with a task's answer, world-readable, outside /tmp."""
    for base in ("/var/lib", "/opt", os.path.expanduser("~")):
        if os.access(base, os.W_OK):
            break
    root = Path(os.path.realpath(Path(base))) / f"t3rl-redteam-{uuid.uuid4().hex[:8]}"
    for relative in HOME_CREDENTIALS:
        path = root / "home" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(SECRET)
    answers = root / "runs" / "retool-1" / "data" / "test.jsonl"
    answers.parent.mkdir(parents=True)
    answers.write_text(json.dumps({"prompt": "2+2?", "label": SECRET}) + "\n")
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def pool(planted: Path) -> Iterator[Pool]:
    """Started the way a launcher with secrets in its environment starts it: HOME with credentials,
    API keys in the environment, an inheritable log file and a listening socket open."""
    saved = dict(os.environ)
    log_file = open(planted / "launcher.log", "w")  # noqa: SIM115 - held open for the pool's lifetime
    listener = socket.create_server(("127.0.0.1", 0))
    for fd in (log_file.fileno(), listener.fileno()):
        os.set_inheritable(fd, True)
    os.environ.update(HOME=str(planted / "home"), HF_TOKEN=SECRET, WANDB_API_KEY=SECRET, T3RL_CRED=SECRET)
    try:
        pool = Pool(LocalSandboxConfig(timeout_s=30.0, max_concurrency=3, max_processes=16))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    try:
        yield pool
    finally:
        pool.close()
        listener.close()
        log_file.close()


@pytest.fixture(scope="module")
def quick(planted: Path) -> Iterator[Pool]:
    """A pool with a short wall-clock limit, for cells that never end on their own."""
    pool = Pool(LocalSandboxConfig(timeout_s=5.0, max_concurrency=len(NEVER_ENDING)))
    try:
        yield pool
    finally:
        pool.close()


def attempt(label: str, expression: str) -> str:
    """Cell code printing `label: ok` or `label: <strerror>` for one operation."""
    return (
        f"try:\n    {expression}\n    print({label!r} + ': ok', flush=True)\n"
        f"except OSError as err:\n    print({label!r} + ': ' + str(err.strerror), flush=True)\n"
    )


def outcomes(result: SandboxResult) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in result.stdout.splitlines() if ": " in line)


def processes_with(marker: str) -> list[int]:
    """Host PIDs whose command line carries `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def gone(marker: str) -> bool:
    """Whether every process carrying `marker` disappears before the deadline."""
    loop = asyncio.new_event_loop()

    async def poll() -> bool:
        deadline = loop.time() + GONE_DEADLINE_S
        while processes_with(marker):
            if loop.time() > deadline:
                return False
            await asyncio.sleep(0.1)
        return True

    try:
        return loop.run_until_complete(poll())
    finally:
        loop.close()


def sleeper(marker: str) -> str:
    """Python source of a process that sleeps long with `marker` in its command line."""
    return f"[sys.executable, '-c', 'import time; time.sleep(600)', {marker!r}]"


# ------------------------------------------------------------------------------ reading what it must not


def test_launcher_environment_is_unreadable(pool):
    code = (
        "import os\n"
        "print('env: ' + repr(sorted(os.environ)))\n"
        + attempt("self", "open('/proc/self/environ', 'rb').read().decode(errors='replace')")
        + "leaked = []\n"
        "for pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n"
        "    for part in ('environ', 'cmdline'):\n"
        "        try:\n"
        "            if b'T3RL_CRED' in open(f'/proc/{pid}/{part}', 'rb').read():\n"
        "                leaked.append(pid)\n"
        "        except OSError:\n"
        "            pass\n"
        "print('leaked: ' + repr(leaked))\n"
    )
    r = pool.run(code)
    assert r.status == "success", r
    assert SECRET not in r.stdout + r.stderr
    seen = outcomes(r)
    assert "HF_TOKEN" not in seen["env"] and "WANDB_API_KEY" not in seen["env"]
    assert seen["leaked"] == "[]"


def test_other_processes_are_out_of_sight(pool):
    need("pid")
    marker = "t3rl-redteam-host-" + uuid.uuid4().hex
    host = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker])
    try:
        code = (
            "import os\n"
            "pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
            "seen = [p for p in pids if "
            f"{marker.encode()!r} in open(f'/proc/{{p}}/cmdline', 'rb').read()]\n"
            "print('seen: ' + repr(seen))\n"
            + attempt("mem", f"open('/proc/{host.pid}/mem', 'rb')")
            + attempt("mem_init", "open('/proc/1/mem', 'rb')")
            + attempt("environ_init", "open('/proc/1/environ', 'rb')")
        )
        r = pool.run(code)
    finally:
        host.kill()
        host.wait()
    assert r.status == "success", r
    seen = outcomes(r)
    assert seen["seen"] == "[]"
    assert seen["mem"] == "No such file or directory"  # the host's PIDs do not exist in the cell
    assert seen["mem_init"] == seen["environ_init"] == "Permission denied"


def test_home_credentials_run_dir_and_project_are_unread(pool, planted):
    need("landlock")  # the run directory and the checkout are world-readable: only the read allow-list
    targets = {
        **{name: str(planted / "home" / name) for name in HOME_CREDENTIALS},
        "answers": str(planted / "runs" / "retool-1" / "data" / "test.jsonl"),
        "runs_listing": str(planted / "runs"),
        "project_readme": str(PROJECT_DIR / "README.md"),
        "project_git": str(PROJECT_DIR / ".git" / "HEAD"),
    }
    code = (
        "import os\n"
        f"for name, path in {targets!r}.items():\n"
        "    try:\n"
        "        print(name + ': ' + repr(os.listdir(path) if os.path.isdir(path) else open(path).read()))\n"
        "    except OSError as err:\n"
        "        print(name + ': ' + err.strerror)\n"
    )
    r = pool.run(code)
    assert r.status == "success", r
    assert SECRET not in r.stdout + r.stderr
    seen = outcomes(r)
    assert set(seen) == set(targets)
    # Covered by the mounts (an empty directory, /dev/null) or refused by Landlock's read allow-list.
    unread = ("''", "[]", "Permission denied", "No such file or directory")
    assert all(outcome in unread for outcome in seen.values()), seen
    assert seen["answers"] in ("Permission denied", "No such file or directory"), (
        seen
    )  # Landlock, or absent from the cell's root
    # A checkout under /tmp (part of the cell's own /tmp) shows only its code: the rest is absent.
    assert {seen["project_readme"], seen["project_git"]} <= {"Permission denied", "No such file or directory"}


def test_an_editable_checkout_on_sys_path_shows_its_code_not_its_runs(planted):
    """An editable install's .pth file puts a whole checkout on sys.path: cells import its packages but
    do not read its run directories."""
    need("landlock")
    venv, project = planted / "venv", planted / "project"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (project / "pkg").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    (project / "pkg" / "__init__.py").write_text("VALUE = 42\n")
    answers = project / "runs" / "answers.jsonl"
    answers.parent.mkdir()
    answers.write_text(SECRET)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "_pkg.pth").write_text(f"{project}\n")
    for path in [venv, project, *venv.rglob("*"), *project.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    for path in venv.glob("bin/*"):
        path.chmod(0o755)
    pool = Pool(LocalSandboxConfig(python=str(venv / "bin" / "python"), timeout_s=30.0, max_concurrency=1))
    try:
        r = pool.run(
            "import pkg\nprint('import: ' + str(pkg.VALUE))\n" + attempt("runs", f"open({str(answers)!r})")
        )
    finally:
        pool.close()
    seen = outcomes(r)
    assert (r.status, seen["import"]) == ("success", "42") and seen["runs"] in (
        "Permission denied",
        "No such file or directory",
    ), r


def test_a_checkout_under_tmp_shows_its_code_and_venv_not_its_runs(monkeypatch):
    """A checkout with its venv under /tmp (a cluster node's scratch) is bound into each cell's own /tmp,
    which cells read: only its packages and the venv are bound, not its run directories."""
    need("mount")
    base = Path(tempfile.mkdtemp(prefix="t3rl-redteam-", dir="/tmp"))
    try:
        checkout = base / "checkout"
        (checkout / "pkg").mkdir(parents=True)
        (checkout / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
        (checkout / "pkg" / "__init__.py").write_text("")
        answers = checkout / "runs" / "answers.jsonl"
        answers.parent.mkdir()
        answers.write_text(SECRET)
        answers.chmod(0o644)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(checkout / ".venv")], check=True)
        monkeypatch.setattr(local, "PROJECT_DIR", checkout)
        pool = Pool(LocalSandboxConfig(python=str(checkout / ".venv" / "bin" / "python"), max_concurrency=1))
        code = (
            "import os, subprocess, sys\n"
            "print('python: ' + subprocess.run([sys.executable, '-c', 'print(7)'], capture_output=True, "
            "text=True).stdout.strip())\n"
            f"print('listing: ' + repr(sorted(os.listdir({str(checkout)!r}))))\n"
            + attempt("runs", f"open({str(answers)!r})")
        )
        try:
            r = pool.run(code)
        finally:
            pool.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert (r.status, outcomes(r)) == (
        "success",
        {"python": "7", "listing": "['.venv', 'pkg']", "runs": "No such file or directory"},
    ), r


def test_no_descriptor_of_the_launcher_or_the_sandbox_is_inherited(pool):
    code = (
        "import os\n"
        "print('fds: ' + repr(sorted(int(fd) for fd in os.listdir('/proc/self/fd'))))\n"
        "print('kinds: ' + repr([os.readlink(f'/proc/self/fd/{fd}')[:4] for fd in (0, 1, 2)]))\n"
        "print('others: ' + repr([fd for fd in range(3, 1024) if os.path.exists(f'/proc/self/fd/{fd}')]))\n"
    )
    r = pool.run(code)
    assert r.status == "success", r
    seen = outcomes(r)
    assert seen["fds"] == "[0, 1, 2, 3]"  # 3 is the listing's own directory descriptor
    assert seen["kinds"] == "['/dev', 'pipe', 'pipe']"
    assert seen["others"] == "[]"


def test_the_control_channel_cannot_be_reached_or_forged(pool):
    """Frames, gc and sys.modules of the cell show the sandbox's code but no open channel: the status
    pipe is closed before the cell's code runs, and what a cell prints never becomes its verdict."""
    code = (
        "import gc, os, socket, sys\n"
        "frame, names = sys._getframe(), []\n"
        "while frame:\n"
        "    names += [k for k, v in frame.f_locals.items() if isinstance(v, socket.socket) "
        "and v.fileno() >= 0]\n"
        "    frame = frame.f_back\n"
        "live = [o for o in gc.get_objects() if isinstance(o, socket.socket) and o.fileno() >= 0]\n"
        "print('open_sockets: ' + repr(names + [repr(o) for o in live]))\n"
        "forged = []\n"
        "for fd in range(3, 64):\n"
        "    try:\n"
        "        os.write(fd, b'{\"exit\": 0}\\n')\n"
        "        forged.append(fd)\n"
        "    except OSError:\n"
        "        pass\n"
        "print('forged: ' + repr(forged), flush=True)\n"
        "os.write(1, b'{\"exit\": 0}\\n')\n"
        "sys.exit(3)\n"
    )
    r = pool.run(code)
    assert (r.status, r.exit_code) == ("error", 3), r
    seen = outcomes(r)
    assert (seen["open_sockets"], seen["forged"]) == ("[]", "[]")


# ----------------------------------------------------------------------------------- escape or damage


def test_writes_outside_the_cell_dir_fail_by_any_path(pool, planted):
    """Plain writes, a symlink planted in the cell's dir, a hard link to a host file, /dev/shm of the
    host, a rename out of the cell's dir: nothing outside the cell's own tmpfs changes."""
    need("mount")  # chmod and utime are no Landlock right: the read-only root stops them
    victim = planted / "runs" / "retool-1" / "data" / "test.jsonl"
    before = victim.read_bytes()
    code = (
        "import os\n"
        + attempt("plain", f"open({str(victim)!r}, 'a').write('pwned')")
        + attempt("new_file", f"open({str(planted / 'new')!r}, 'w')")
        + attempt("symlink", f"os.symlink({str(victim.parent)!r}, 'link'); open('link/x', 'w')")
        + attempt("hardlink", f"os.link({str(victim)!r}, 'hard')")
        + attempt("rename", f"open('mine', 'w').close(); os.rename('mine', {str(planted / 'mine')!r})")
        + attempt("etc", "open('/etc/t3rl-redteam', 'w')")
        + attempt("chmod", f"os.chmod({str(victim)!r}, 0o777)")
        + attempt("utime", f"os.utime({str(victim)!r}, (0, 0))")
    )
    r = pool.run(code)
    assert r.status == "success", r
    seen = outcomes(r)
    assert len(seen) == 8 and "ok" not in seen.values(), seen
    assert victim.read_bytes() == before and oct(victim.stat().st_mode & 0o777) == "0o644"
    assert not (planted / "new").exists() and not (planted / "mine").exists()


def test_signals_do_not_reach_the_pool_or_the_launcher(pool):
    code = (
        "import os, signal\n"
        + attempt("init", "os.kill(1, signal.SIGKILL)")
        + attempt("launcher", f"os.kill({os.getpid()}, signal.SIGKILL)")
        + attempt("zygote", f"os.kill({pool.sandbox._slots[0].zygote.proc.pid}, signal.SIGKILL)")
        # Every process the cell may signal but itself and its namespace's init: none.
        + attempt("everyone", "os.kill(-1, signal.SIGKILL)")
    )
    r = pool.run(code)
    assert r.status == "success", r
    seen = outcomes(r)
    assert seen["everyone"] == "No such process"
    assert seen["init"] == "Operation not permitted"
    assert seen["launcher"] in ("No such process", "Operation not permitted")
    assert seen["zygote"] in ("No such process", "Operation not permitted")
    assert all(slot.zygote.proc.poll() is None for slot in pool.sandbox._slots)
    pool.serves()


def test_a_daemon_does_not_outlive_its_cell(pool):
    marker = "t3rl-redteam-daemon-" + uuid.uuid4().hex
    code = (
        "import os, subprocess, sys\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        import signal\n"
        "        signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
        f"        subprocess.Popen({sleeper(marker)}, start_new_session=True)\n"
        "    os._exit(0)\n"
        "os.wait()\n"
        "print('daemonised')\n"
    )
    r = pool.run(code)
    assert (r.status, r.stdout) == ("success", "daemonised\n"), r
    assert gone(marker)
    pool.serves()


def test_a_child_does_not_outlive_the_timeout(quick):
    marker = "t3rl-redteam-late-" + uuid.uuid4().hex
    code = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen({sleeper(marker)}, start_new_session=True)\n"
        "print('started', flush=True)\n"
        "time.sleep(600)\n"
    )
    r = quick.run(code)
    assert (r.status, r.stdout) == ("timeout", "started\n"), r
    assert gone(marker)
    quick.serves()


NEVER_ENDING = {
    "regex backtracking in C": "import re\nre.match(r'(a+)+$', 'a' * 64 + 'b')",
    "signals blocked, SIGTERM ignored": "import signal\n"
    "signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals) - {signal.SIGKILL, signal.SIGSTOP})\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: pass",
    "a lock held while sleeping": "import fcntl, time\nf = open('lock', 'w')\n"
    "fcntl.flock(f, fcntl.LOCK_EX)\ntime.sleep(600)",
    "stopped by SIGSTOP": "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)",
}


def test_cells_that_never_end_are_stopped_and_the_slots_reused(quick):
    """All at once, on a slot each: every one is stopped at the wall clock, and every slot serves again."""
    results = quick.gather(*NEVER_ENDING.values())
    assert {name: r.status for name, r in zip(NEVER_ENDING, results, strict=True)} == dict.fromkeys(
        NEVER_ENDING, "timeout"
    )
    served = quick.gather(*["print(6 * 7)"] * len(NEVER_ENDING))
    assert [(r.status, r.stdout) for r in served] == [("success", "42\n")] * len(NEVER_ENDING), served


def test_a_cell_that_never_ends_does_not_hold_up_the_others(pool):
    async def both() -> tuple[bool, SandboxResult]:
        forever = asyncio.ensure_future(pool.sandbox.run("import time\ntime.sleep(600)"))
        ordinary = await pool.sandbox.run("print('served')")
        still_running = not forever.done()
        forever.cancel()  # t3rl stops waiting: the cell is killed
        with contextlib.suppress(asyncio.CancelledError):
            await forever
        return still_running, ordinary

    still_running, ordinary = pool.loop.run_until_complete(both())
    assert (still_running, ordinary.status, ordinary.stdout) == (True, "success", "served\n")
    pool.serves()


def test_runaway_recursion_reports_its_error(pool):
    """A million frames after sys.setrecursionlimit: the cell ends with the RecursionError and the last
    frames of its traceback, as a plain interpreter would, instead of spending its wall clock on
    printing a million of them (ReTool shows the model that traceback)."""
    r = pool.run("import sys\nsys.setrecursionlimit(10 ** 6)\ndef f(n): return f(n + 1)\nf(0)")
    assert (r.status, r.stderr.splitlines()[-1]) == (
        "error",
        "RecursionError: maximum recursion depth exceeded",
    ), r
    assert r.stderr.count("File ") <= 1000
    pool.serves()


@pytest.mark.parametrize(
    ("name", "code", "status", "stdout"),
    [
        ("a huge line without newline", "import sys\nsys.stdout.write('a' * (8 << 20))", "output_limit",
         None),
        ("binary and invalid UTF-8",
         "import os\nos.write(1, bytes(range(256)) + b'\\xc0\\x80\\xed\\xa0\\x80')", "success", None),
        ("os._exit mid-result", "print('half', end='', flush=True)\nimport os\nos._exit(7)", "error", "half"),
        ("os._exit with output buffered", "print('lost')\nimport os\nos._exit(0)", "success", ""),
        ("sys.stdout replaced", "import io, sys\nsys.stdout = io.StringIO()\nprint('hidden')", "success", ""),
        ("stdout closed", "import os, sys\nsys.stdout.close()\nos.close(1)", "success", ""),
        ("stderr flood after stdout closed", "import os\nos.close(1)\nos.write(2, b'e' * (4 << 20))",
         "output_limit", ""),
        ("a lone surrogate in the source", "print('x\udcff')", "success", None),
        ("a thread left running", "import threading, time\n"
         "threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\nprint('bye')",
         "success", "bye\n"),
    ],
)  # fmt: skip
def test_hostile_output_and_exits_give_a_verdict(pool, name, code, status, stdout):
    r = pool.run(code)
    assert r.status == status, (name, r)
    if stdout is not None:
        assert r.stdout == stdout, (name, r)
    assert len(r.stdout.encode()) <= pool.sandbox.config.max_output_bytes * 3  # decoded with replacement
    pool.serves()


@pytest.mark.parametrize(
    ("name", "code", "expected"),
    [
        ("threads", "import threading, time\nts = []\ntry:\n    while len(ts) < 10000:\n"
         "        t = threading.Thread(target=time.sleep, args=(5,), daemon=True); t.start(); ts.append(t)\n"
         "except RuntimeError:\n    print('limit', len(ts) < 10000)", "limit True\n"),
        ("descriptors", "import os\nfds = []\ntry:\n    while len(fds) < 100000:\n"
         "        fds.append(os.open('/dev/null', os.O_RDONLY))\nexcept OSError as e:\n    print(e.strerror)",
         "Too many open files\n"),
        ("files", "n = 0\ntry:\n    while n < 10 ** 6:\n        open(f'f{n}', 'w').close(); n += 1\n"
         "except OSError as e:\n    print(e.strerror)", "No space left on device\n"),
        ("one big file", "try:\n    open('big', 'wb').write(b'0' * (200 << 20))\nexcept OSError as e:\n"
         "    print(e.strerror)", None),
        ("a mapped /dev/shm", "import mmap, os\nfd = os.open('/dev/shm/x', os.O_CREAT | os.O_RDWR)\n"
         "try:\n    os.ftruncate(fd, 200 << 20)\n    m = mmap.mmap(fd, 200 << 20)\n"
         "    m[:] = b'1' * (200 << 20)\nexcept (OSError, ValueError) as e:\n    print('refused')", None),
    ],
)  # fmt: skip
def test_floods_stop_at_a_limit_and_the_next_cell_runs(pool, name, code, expected):
    r = pool.run(code)
    assert r.status != "sandbox_error", (name, r)
    if expected is not None:
        assert (r.status, r.stdout) == ("success", expected), (name, r)
    else:
        assert r.status in ("success", "error", "output_limit"), (name, r)
    pool.serves()


def test_network_of_every_kind_is_unreachable(pool):
    """DNS, UDP, IPv6, TCP to the engine's port on localhost, a host abstract unix socket."""
    need("network")
    engine = socket.create_server(("127.0.0.1", 0))
    engine.setblocking(False)
    port = engine.getsockname()[1]
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(f"\0t3rl-redteam-{uuid.uuid4().hex}")
    abstract.listen()
    abstract.setblocking(False)
    code = (
        "import socket\n"
        + attempt("dns", "socket.getaddrinfo('huggingface.co', 443)")
        + attempt("udp", "socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', 53))")
        + attempt("ipv6", f"socket.create_connection(('::1', {port}), timeout=2)")
        + attempt("engine", f"socket.create_connection(('127.0.0.1', {port}), timeout=2)")
        + attempt("abstract", f"socket.socket(socket.AF_UNIX).connect({abstract.getsockname()!r})")
        + attempt("raw", "socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)")
        + attempt("packet", "socket.socket(socket.AF_PACKET, socket.SOCK_RAW)")
    )
    try:
        r = pool.run(code)
        assert r.status == "success", r
        seen = outcomes(r)
        assert len(seen) == 7 and "ok" not in seen.values(), seen
        for listener in (engine, abstract):
            with pytest.raises(BlockingIOError):
                listener.accept()
    finally:
        engine.close()
        abstract.close()


X32_SOCKET = (
    "import ctypes, socket\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n"
    "print(libc.syscall(0x40000000 | 41, socket.AF_INET, socket.SOCK_STREAM, 0), flush=True)\n"
)
# mov eax, 102 (i386 socketcall); mov ebx, 1 (SYS_SOCKET); xor ecx, ecx; int 0x80; ret
I386_SOCKETCALL = (
    "import ctypes, mmap\n"
    "code = bytes([0xB8, 102, 0, 0, 0, 0xBB, 1, 0, 0, 0, 0x31, 0xC9, 0xCD, 0x80, 0xC3])\n"
    "page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\npage.write(code)\n"
    "call = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))\n"
    "print(call(), flush=True)\n"
)


@pytest.mark.parametrize("code", [X32_SOCKET, I386_SOCKETCALL], ids=["x32 ABI", "i386 int 0x80"])
def test_system_calls_of_another_abi_do_not_pass_the_filter(pool, code):
    """The filter's tables are x86-64's: the same kernel's x32 and i386 entry points have other numbers
    (socketcall is not socket), so the filter kills any call through them."""
    need("seccomp")
    if os.uname().machine != "x86_64":
        pytest.skip("x32 and i386 system calls exist on x86_64 only")
    r = pool.run(code)
    assert (r.status, r.error, r.stdout) == ("error", "killed by SIGSYS", ""), r
    pool.serves()


def test_no_terminal_can_be_reached(pool):
    """No controlling terminal, and neither the launcher's terminal nor the console opens: nothing can be
    typed into (TIOCSTI) or printed onto a terminal."""
    need("landlock")  # a non-root user's own pseudo-terminals are writable by its uid
    code = (
        "import fcntl, glob, os, termios\n"
        + attempt("stdin_tiocsti", "fcntl.ioctl(0, termios.TIOCSTI, b'x')")
        + "".join(
            attempt(name, f"os.close(os.open({path!r}, os.O_WRONLY | os.O_NOCTTY))")
            for name, path in (("tty", "/dev/tty"), ("console", "/dev/console"), ("ptmx", "/dev/ptmx"))
        )
        + "opened = []\n"
        "for path in glob.glob('/dev/pts/[0-9]*') + glob.glob('/dev/tty[0-9S]*'):\n"
        "    try:\n"
        "        os.close(os.open(path, os.O_WRONLY | os.O_NOCTTY))\n"
        "        opened.append(path)\n"
        "    except OSError:\n"
        "        pass\n"
        "print('opened: ' + repr(opened))\n"
    )
    r = pool.run(code)
    assert r.status == "success", r
    seen = outcomes(r)
    assert seen.pop("opened") == "[]"
    assert "ok" not in seen.values(), seen


# ----------------------------------------------------------------------------- state between episodes

PLANT = """
import atexit, builtins, json, math, os, signal, sys, threading, time
math.pi = 3
json.LEAKED = "episode A"
builtins.print_orig, builtins.abs = builtins.print, lambda x: 0
sys.modules["t3rl_leak"] = type(sys)("t3rl_leak")
sys.path.insert(0, "/tmp/leak")
os.environ["LEAK"] = "1"
os.umask(0o000)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
atexit.register(lambda: open("/tmp/atexit", "w").write("ran"))
threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
open("/tmp/left", "w").write("episode A")
open("/dev/shm/left", "w").write("episode A")
os.mkdir("sub"); os.chdir("sub")
SECRET_OF_A = 1
"""

CHECK = """
import builtins, json, math, os, signal, sys, threading
print(json.dumps({
    "pi": math.pi == 3.141592653589793, "json": hasattr(json, "LEAKED"), "abs": abs(-3),
    "builtins": hasattr(builtins, "print_orig"), "module": "t3rl_leak" in sys.modules,
    "path": "/tmp/leak" in sys.path, "env": "LEAK" in os.environ, "umask": os.umask(0o022),
    "sigterm": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, "threads": threading.active_count(),
    "files": sorted(os.listdir("/tmp")) + sorted(os.listdir("/dev/shm")), "cwd": os.getcwd(),
    "globals": "SECRET_OF_A" in globals(),
}))
"""


def test_nothing_of_one_episode_reaches_the_next(pool):
    """Every cell starts from the zygote's pristine state: no module attribute, builtin, sys.modules or
    sys.path entry, environment variable, umask, signal disposition, thread, file or global of an
    earlier cell survives, on the same slot or another (ReTool's cells are independent runs)."""
    pristine = None
    for _ in range(3):
        (planted_cell,) = pool.gather(PLANT)
        assert planted_cell.status == "success", planted_cell
        checks = pool.gather(CHECK, CHECK, CHECK)  # on every slot at once
        for check in checks:
            assert check.status == "success", check
        seen = [json.loads(check.stdout) for check in checks]
        pristine = pristine or seen[0]
        assert all(s == pristine for s in seen), seen
    assert pristine is not None
    assert {k: pristine[k] for k in ("pi", "json", "abs", "builtins", "module", "path", "env")} == {
        "pi": True, "json": False, "abs": 3, "builtins": False, "module": False, "path": False, "env": False,
    }  # fmt: skip
    assert (pristine["umask"], pristine["sigterm"], pristine["threads"], pristine["globals"]) == (
        0o022, True, 1, False,
    )  # fmt: skip
    assert pristine["cwd"] == "/tmp"
    assert "left" not in pristine["files"] and "atexit" not in pristine["files"]


# ---------------------------------------------------------------------------------------------- fallback

FALLBACK = textwrap.dedent(
    """
    import asyncio, ctypes, json, logging, os, sys
    from t3rl_core.sandbox.child import seccomp
    from t3rl_core.sandbox.child.libc import PR_SET_NO_NEW_PRIVS, prctl
    from t3rl_core.sandbox.config import LocalSandboxConfig
    from t3rl_core.sandbox.local import LocalSandbox

    # This host, as one without user namespaces, Landlock or seccomp filters (those named in LACKING):
    # refused for us and every process we start, the sandbox's zygote included.
    nr = seccomp.arch_for(os.uname().machine).numbers
    lacking = os.environ["LACKING"].split(",")
    refused = {"userns": [nr["unshare"]], "landlock": [444, 445, 446], "seccomp": [317]}  # 317: seccomp()
    insn = seccomp._Insn
    prog = [insn(seccomp.LD_ABS, seccomp.NR_OFFSET)]
    prog += [insn(seccomp.JEQ, n, true="enosys") for kind in lacking for n in refused[kind]]
    if "seccomp" in lacking:  # prctl(PR_SET_SECCOMP, ...) as a kernel without seccomp filters answers it
        prog += [insn(seccomp.JEQ, 157, false="allow"), insn(seccomp.LD_ABS, 16),
                 insn(seccomp.JEQ, seccomp.PR_SET_SECCOMP, true="einval")]
    prog += ["allow", insn(seccomp.RET, seccomp.RET_ALLOW),
             "enosys", insn(seccomp.RET, seccomp.RET_ERRNO | 38),
             "einval", insn(seccomp.RET, seccomp.RET_ERRNO | 22)]
    code = seccomp.assemble(prog)
    filters = (seccomp._SockFilter * len(code))(*[seccomp._SockFilter(*row) for row in code])
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    prctl(seccomp.PR_SET_SECCOMP, seccomp.SECCOMP_MODE_FILTER,
          ctypes.byref(seccomp._SockFprog(len(code), filters)))

    warnings = []
    handler = logging.Handler()
    handler.emit = lambda record: warnings.append(record.getMessage())
    handler.setLevel(logging.WARNING)
    logging.getLogger("t3rl_core.sandbox").addHandler(handler)
    marker = os.environ["MARKER"]
    home = os.environ["HOME"]
    attacks = {
        "netrc": f"print(open({home + '/.netrc'!r}).read())",
        "answers": f"print(open({os.environ['ANSWERS']!r}).read())",
        "environ": f"print(open('/proc/{os.getpid()}/environ', 'rb').read())",
        "cmdline": f"print(open('/proc/{os.getpid()}/cmdline', 'rb').read()[:9])",
        "etc": "print(open('/etc/passwd').read())",
        "nice": "import os; print(os.getpriority(os.PRIO_PROCESS, 0))",
        "kill": f"import os; os.kill({os.getpid()}, 0)",
        "init": "import os; os.kill(os.getppid(), 0)",  # the cell's supervisor: its verdict
        "write": f"open({home + '/planted'!r}, 'w').write('x')",
        "plant": "import os; open('left', 'w').write('x'); print(os.getcwd())",
        "see": "import os, glob; print(sorted(glob.glob(os.path.dirname(os.getcwd()) + '/*/left')))",
        "daemon": "import os, subprocess, sys\\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', {marker!r}], "
        "start_new_session=True)\\nprint('spawned')",
    }
    # Another file's attacks on this launcher, its pid as {launcher}.
    extra = json.loads(os.environ.get("EXTRA_ATTACKS", "{}"))
    attacks.update({name: code.format(launcher=os.getpid()) for name, code in extra.items()})

    async def go(sandbox):
        out = {}
        for name, code in attacks.items():
            r = await sandbox.run(code)
            out[name] = [r.status, r.stdout, r.stderr.strip().splitlines()[-1:]]
        await sandbox.aclose()
        return out

    sandbox = LocalSandbox(LocalSandboxConfig(timeout_s=30))
    report = {"protections": sandbox.protections.to_manifest(), "warnings": warnings}
    report["attacks"] = asyncio.run(go(sandbox))
    try:
        asyncio.run(LocalSandbox(LocalSandboxConfig(timeout_s=30, require=["landlock"])).aclose())
        report["require_landlock"] = "started"
    except RuntimeError as err:
        report["require_landlock"] = str(err)
    print(json.dumps(report))
    """
)


def fallback(planted: Path, lacking: str, marker: str, extra: dict[str, str] | None = None) -> dict:
    """The FALLBACK script's report, run as nobody on a host `lacking` kernel features (userns,
    landlock, seccomp; comma-separated), with HOME at planted credentials; `extra` attacks (cell code,
    the launcher's pid as {launcher}) run after its own."""
    if os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("unshare"):
        pytest.skip("needs root (to become nobody), setpriv and unshare")
    if not host_offers("seccomp"):
        pytest.skip("this host has no seccomp filter to stand in for a kernel without user namespaces")
    home = planted / f"nobody-home-{uuid.uuid4().hex[:6]}"
    (home / ".cache").mkdir(parents=True)
    (home / ".netrc").write_text(SECRET)
    for path in (home, home / ".cache", home / ".netrc"):
        os.chown(path, 65534, 65534)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(PROJECT_DIR),
        "HOME": str(home),
        "T3RL_CRED": SECRET,
        "MARKER": marker,
        "LACKING": lacking,
        "ANSWERS": str(planted / "runs" / "retool-1" / "data" / "test.jsonl"),  # world-readable, not hidden
        "EXTRA_ATTACKS": json.dumps(extra or {}),
    }
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", SWITCH, FALLBACK],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_fallback_without_namespaces_says_so_and_landlock_still_holds(planted):
    if not host_offers("landlock"):
        pytest.skip("this host has no Landlock: the fallback's read and signal confinement needs it")
    marker = "t3rl-redteam-fallback-" + uuid.uuid4().hex
    report = fallback(planted, "userns", marker)
    missing = report["protections"]["missing"]
    assert {"user", "network", "pid", "mount", "disk"} <= set(missing)  # cells keep the launcher's uid
    assert "hidden_paths are not covered" in missing["mount"]
    assert "landlock" in report["protections"]["active"]
    assert "reads only of the system" in report["protections"]["active"]["landlock"]
    assert any("MISSING: " in w and "network" in w for w in report["warnings"]), report["warnings"]
    attacks = report["attacks"]
    assert SECRET not in json.dumps(attacks)
    assert attacks["netrc"][2][0].startswith("PermissionError"), attacks["netrc"]  # Landlock's reads
    assert attacks["environ"][2][0].startswith("PermissionError"), attacks["environ"]
    # No PID namespace: other processes' command lines and the host's /etc are out of Landlock's reads.
    assert attacks["cmdline"][2][0].startswith("PermissionError"), attacks["cmdline"]
    assert attacks["etc"][2][0].startswith("PermissionError"), attacks["etc"]
    assert attacks["nice"][:2] == ["success", "10\n"]  # no cpu cgroup: cells yield to t3rl's processes
    for name in ("kill", "init"):  # Landlock's signal scope
        assert attacks[name][2][0].startswith("PermissionError"), attacks[name]
    assert attacks["write"][2][0].startswith("PermissionError"), attacks["write"]
    assert attacks["plant"][0] == "success" and attacks["see"] == ["success", "[]\n", []], attacks
    assert attacks["daemon"][:2] == ["success", "spawned\n"]
    assert gone(marker)
    assert report["require_landlock"] == "started"


def test_fallback_without_namespaces_or_landlock_names_what_is_lost(planted):
    marker = "t3rl-redteam-bare-" + uuid.uuid4().hex
    report = fallback(planted, "userns,landlock", marker)
    missing = report["protections"]["missing"]
    assert {"network", "pid", "mount", "disk", "landlock"} <= set(missing)
    assert "read every file their uid may" in missing["landlock"]
    assert any("landlock: " in w for w in report["warnings"]), report["warnings"]
    assert report["require_landlock"].startswith("sandbox.require lists landlock")
    # What still holds without both: the launcher's environment (another process) and the daemon.
    attacks = report["attacks"]
    assert attacks["netrc"][1] == SECRET + "\n"  # said above: credentials readable, not pretended away
    assert attacks["nice"][:2] == ["success", "10\n"]
    assert attacks["daemon"][:2] == ["success", "spawned\n"]
    assert gone(marker)


def test_without_landlock_the_cells_root_holds_only_what_they_may_read(planted):
    """A kernel without Landlock (before 5.13) but with user namespaces: the zygote's root is built of
    the allowed trees only, so a world-readable run directory with a task's answers, which no
    `hidden_paths` entry names, does not exist for a cell."""
    if not host_offers("mount"):
        pytest.skip("this host has no user namespaces to build the cells' root in")
    report = fallback(planted, "landlock", "t3rl-redteam-nolandlock-" + uuid.uuid4().hex)
    assert "landlock" in report["protections"]["missing"]
    assert {"network", "pid", "mount"} <= set(report["protections"]["active"])
    attacks = report["attacks"]
    assert SECRET not in json.dumps(attacks)
    assert attacks["answers"][2][0].startswith("FileNotFoundError"), attacks["answers"]
    assert attacks["plant"][0] == "success" and attacks["see"] == ["success", "[]\n", []], attacks


def test_without_seccomp_filters_the_layer_is_reported_missing_and_cells_still_run(planted):
    """A kernel (or container) that refuses seccomp filters: observed at start-up, not assumed from the
    machine's name; the warning names it and the memory cap it costs, and cells run confined otherwise."""
    if not host_offers("mount"):
        pytest.skip("this host has no user namespaces to keep the other layers while seccomp is refused")
    report = fallback(planted, "seccomp", "t3rl-redteam-noseccomp-" + uuid.uuid4().hex)
    missing = report["protections"]["missing"]
    assert "the kernel refused the filter (Invalid argument)" in missing["seccomp"], missing
    assert "memory" in missing  # not root: no memory cgroup, and nothing refuses memfd or SysV any more
    assert {"network", "pid", "mount"} <= set(report["protections"]["active"])
    assert any("seccomp: " in w for w in report["warnings"]), report["warnings"]
    attacks = report["attacks"]
    assert SECRET not in json.dumps(attacks)
    assert attacks["plant"][0] == "success" and attacks["see"] == ["success", "[]\n", []], attacks
