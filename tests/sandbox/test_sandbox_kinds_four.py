"""Round four of hostile cells: a cell that breaks what runs after its code, and what a cell does to the
processes around it.

A cell is a fork of the sandbox's own code: after the cell's source, the same process waits for its
threads, runs its atexit handlers, flushes its output and leaves. A cell that replaced `os._exit`,
`threading` or `atexit._run_exitfuncs`, or closed its stderr and raised, must end as the interpreter
itself ends that code (`python -c`, run beside it here): same exit code, same output, and never by
running the sandbox's own code in the cell's process. The other cases (signals to the processes
around the cell, a child left behind, a 400 MB line, a 10 GB allocation, file names that are not
UTF-8) held before this round; they are here so a change that breaks them fails. Without a PID
namespace (t3rl not root, no user namespaces) a cell shares t3rl's uid: it must not change the limits,
priority, CPUs or I/O class of the launcher's own process.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from t3rl_core.sandbox.config import LocalSandboxConfig
from tests.sandbox.test_sandbox_redteam import Pool, fallback

# Cells that break the teardown the sandbox does by hand after their code.
TEARDOWN_BREAKERS = {
    "threading replaced in sys.modules": "import sys\nsys.modules['threading'] = 0\nprint('a', end='')\n"
    "raise SystemExit(3)",
    "threading._shutdown broken": "import threading\nthreading._shutdown = None\nprint('b', end='')\n"
    "raise SystemExit(4)",
    "os._exit replaced": "import os\nos._exit = lambda code: None\nprint('c')\nraise SystemExit(5)",
    "atexit's runner replaced": "import atexit\natexit._run_exitfuncs = None\nprint('d')\n"
    "raise SystemExit(6)",
    "contextlib.suppress replaced": "import contextlib\ncontextlib.suppress = None\nprint('e')\n"
    "raise SystemExit(7)",
    "stderr closed, then an exception": "import os\nos.close(2)\nraise ValueError('unseen')",
    "stdout closed with output buffered": "import os\nprint('f')\nos.close(1)",
    "an exit code beyond a C long": "raise SystemExit(2**70)",
    "KeyboardInterrupt": "print('h')\nraise KeyboardInterrupt",
    "stdout replaced by an object that cannot be written": "import sys\nsys.stdout = object()\nprint('g')",
    "its own excepthook": "import sys\nsys.excepthook = lambda *exc: print('hooked', file=sys.stderr)\n"
    "raise ValueError(1)",
}


# Cells that use their own module as `python -c` code does: pickle finds what they define in __main__.
MAIN_MODULE_USES = {
    "a process pool mapping a cell's function": "from concurrent.futures import ProcessPoolExecutor\n"
    "def square(x):\n    return x * x\n"
    "if __name__ == '__main__':\n    with ProcessPoolExecutor(2) as pool:\n"
    "        print(list(pool.map(square, range(4))))",
    "multiprocessing.Pool": "import multiprocessing\ndef square(x):\n    return x * x\n"
    "with multiprocessing.Pool(2) as pool:\n    print(pool.map(square, range(4)))",
    "pickle of a cell's class": "import pickle\nclass Point:\n    x = 1\n"
    "print(type(pickle.loads(pickle.dumps(Point()))).__name__)",
    "the module's own names": "import sys\nprint(__doc__, sys.modules['__main__'].__dict__ is globals())",
    "a module the cell wrote": "open('helper.py', 'w').write('def f():\\n    return 42\\n')\n"
    "import helper\nprint(helper.f())",
    "annotations evaluated": "x: int = 3\nprint(__annotations__)",
}
# ioprio_set's number, which Python has no call for (the kernel's x86-64 and generic tables).
IOPRIO_SET = {"x86_64": 251, "aarch64": 30}


@pytest.fixture(scope="module")
def pool() -> Iterator[Pool]:
    pool = Pool(LocalSandboxConfig(timeout_s=60.0, max_concurrency=2, max_processes=16))
    try:
        yield pool
    finally:
        pool.close()


def _python(code: str, tmp_path: os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    """The interpreter's own run of `code`, stdout a pipe and block-buffered as a cell's is."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run(
        [sys.executable, "-c", code],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )


def test_a_cell_that_breaks_its_own_teardown_ends_as_python_ends_it(pool, tmp_path):
    """Before: every one of these but the excepthook and os._exit ones was a `success` with exit code 0
    (most with their output lost); `os._exit` replaced ran init's and the zygote's code in the cell
    (its traceback showed the sandbox's host paths); a custom excepthook was not called."""
    results = pool.gather(*TEARDOWN_BREAKERS.values())
    for (name, code), result in zip(TEARDOWN_BREAKERS.items(), results, strict=True):
        python = _python(code, tmp_path)
        assert (result.exit_code, result.stdout) == (python.returncode, python.stdout), (name, result)
        assert result.status == ("success" if python.returncode == 0 else "error"), (name, result)
        assert "t3rl_core" not in result.stderr, (name, result.stderr)
    hooked = results[list(TEARDOWN_BREAKERS).index("its own excepthook")]
    assert hooked.stderr == "hooked\n"
    pool.serves()


def test_a_cell_runs_as_python_c_runs_its_code(pool, tmp_path):
    """Before: the cell's globals were a dict apart from sys.modules['__main__'], so pickle could not
    find a function or class the cell defined (`attribute lookup square on __main__ failed`): every
    process pool over a cell's own function failed; `__doc__` was the builtins module's. A module the
    cell wrote was not importable (no working directory on sys.path), and annotations were strings
    (the sandbox's own `from __future__ import annotations` was inherited by the cell's code)."""
    results = pool.gather(*MAIN_MODULE_USES.values())
    for (name, code), result in zip(MAIN_MODULE_USES.items(), results, strict=True):
        python = _python(code, tmp_path)
        assert python.returncode == 0, (name, python.stderr)
        assert (result.status, result.stdout) == ("success", python.stdout), (name, result)


def test_signals_to_the_processes_around_a_cell_reach_only_the_cell(pool):
    """The cell's parent, the parent's process group and every process it may signal: only the cell's
    own processes can be hit, and the pool serves on."""
    code = (
        "import os, signal\n"
        "for target in ('parent', 'group of the parent', 'every process'):\n"
        "    try:\n"
        "        if target == 'parent':\n"
        "            os.kill(os.getppid(), signal.SIGKILL)\n"
        "        elif target == 'group of the parent':\n"
        "            os.killpg(os.getpgid(os.getppid()), signal.SIGKILL)\n"
        "        else:\n"
        "            os.kill(-1, signal.SIGKILL)\n"
        "        print(target, 'signalled', flush=True)\n"
        "    except OSError as err:\n"
        "        print(target, err.strerror, flush=True)\n"
    )
    result = pool.run(code)
    # kill(-1) reaches the cell itself (it may signal its own uid), nothing outside the cell.
    assert result.status == "error" and "killed by SIGKILL" in (result.error or ""), result
    assert "parent signalled" not in result.stdout, result
    pool.serves()


def test_a_child_left_running_a_huge_line_and_a_huge_allocation_end_with_their_cell(pool):
    orphan = "import os, time\nif os.fork() == 0:\n    time.sleep(1000)\nprint('parent done')"
    line = "import sys\nsys.stdout.write('x' * (400 * 10**6))"
    allocation = "x = bytearray(10**10)\nprint(len(x))"
    names = "import os\nopen('f\\u00e9\\udcff'.encode('utf-8', 'surrogateescape'), 'w').write('x')\n"
    names += "print(os.listdir(b'.'))"
    left, flood, bomb, odd = pool.gather(orphan, line, allocation, names)
    assert (left.status, left.stdout) == ("success", "parent done\n"), left
    assert flood.status == "output_limit", flood
    assert bomb.status == "error" and "MemoryError" in bomb.stderr, bomb
    assert odd.status == "success" and "\\xff" in odd.stdout, odd
    pool.serves()


def test_a_cell_that_ignores_sigxcpu_is_stopped_at_its_cpu_time_as_a_timeout():
    """RLIMIT_CPU's SIGXCPU ignored, the kernel SIGKILLs the cell a second later: before, that was an
    `error` (`killed by SIGKILL`), which says nothing of the limit it ran into."""
    pool = Pool(LocalSandboxConfig(timeout_s=120.0, cpu_time_s=1, max_concurrency=1))
    try:
        result = pool.run(
            "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass"
        )
        assert (result.status, result.error) == ("timeout", "CPU-time limit of 1 s exceeded"), result
        killed = pool.run("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
        assert (killed.status, killed.error) == ("error", "killed by SIGKILL"), killed
    finally:
        pool.close()


def _calls_on_the_launcher() -> dict[str, str]:
    """Cells acting on the launcher's process ({launcher}) by its pid, as its own uid may."""
    ioprio_set = IOPRIO_SET.get(platform.machine(), -1)
    return {
        "prlimit": "import resource\nresource.prlimit({launcher}, resource.RLIMIT_NOFILE, (20, 20))",
        "renice": "import os\nos.setpriority(os.PRIO_PROCESS, {launcher}, 19)",
        "renice the uid": "import os\nos.setpriority(os.PRIO_USER, 0, 19)",
        "affinity": "import os\nos.sched_setaffinity({launcher}, {{0}})",
        "idle": "import os\nos.sched_setscheduler({launcher}, os.SCHED_IDLE, os.sched_param(0))",
        # IOPRIO_WHO_PROCESS, the idle class
        "io priority": "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        f"if libc.syscall({ioprio_set}, 1, {{launcher}}, (3 << 13) | 7) != 0:\n"
        "    raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))",
        "serves": "print(6 * 7)",
    }


def test_without_a_pid_namespace_a_cell_cannot_act_on_the_launchers_process(visible_dir: Path):
    """Before: the cell cut the launcher's open-file limit to 20 (every later cell was a sandbox_error:
    no pipe for it), reniced it to 19 and pinned it to one CPU; Landlock and the uid do not cover these
    calls, seccomp allows them on the caller only."""
    marker = "t3rl-kinds-four-" + uuid.uuid4().hex
    report = fallback(visible_dir, "userns", marker, _calls_on_the_launcher())
    assert "pid" in report["protections"]["missing"]
    attacks = report["attacks"]
    for name in _calls_on_the_launcher():
        if name != "serves":
            assert attacks[name][0] == "error", (name, attacks[name])
            assert attacks[name][2][0].startswith("PermissionError"), (name, attacks[name])
    assert attacks["serves"][:2] == ["success", "42\n"], attacks


def test_cells_forked_from_a_zygote_that_preloaded_numpy_random_draw_different_numbers():
    """numpy.random seeds its global generator once, at import: preloaded in the zygote, every cell
    forked from it drew the same `numpy.random.rand()` (before), where each `python -c` draws afresh."""
    pytest.importorskip("numpy")
    pool = Pool(LocalSandboxConfig(timeout_s=60.0, max_concurrency=1, preload=["numpy.random"]))
    try:
        code = "import numpy, random\nprint(numpy.random.rand(), random.random())"
        draws = [pool.run(code) for _ in range(3)]
    finally:
        pool.close()
    assert all(d.status == "success" for d in draws), draws
    assert len({d.stdout.split()[0] for d in draws}) == 3, draws
    assert len({d.stdout.split()[1] for d in draws}) == 3, draws
