"""Red team, third round: what a cell sees of the host (/etc, /sys, /proc, the zygote's command line),
the CPU it takes from t3rl, and credentials in its environment.

Host-side targets are planted where a cell could read them by file mode (world-readable, outside
/tmp), so the layer that stops them is exercised. Fast: one shared pool, no sleeps, no wall-clock
assertions (the CPU test compares the CPU a cell used with the wall time it took, which a loaded
machine only makes safer).
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from t3rl_core.sandbox.config import LocalSandboxConfig
from t3rl_core.sandbox.local import cell_env
from t3rl_core.sandbox.protections import observe
from t3rl_core.secret import Secret
from tests.sandbox.conftest import need
from tests.sandbox.test_sandbox_redteam import Pool, attempt, outcomes

MARKER = "t3rl-round3-" + uuid.uuid4().hex
# The most CPU a cell of the pool may use; well below one core, so four busy threads exceed it anywhere.
CORES = 0.25


@pytest.fixture(scope="module")
def planted_etc() -> Iterator[Path]:
    """A world-readable host file in /etc (root can write there; a host's config as a cell would see it)."""
    if not os.access("/etc", os.W_OK):
        pytest.skip("needs write access to /etc to plant a host config file")
    path = Path("/etc") / f"{MARKER}.conf"
    path.write_text(f"token={MARKER}\n")
    path.chmod(0o644)
    try:
        yield path
    finally:
        path.unlink()


@pytest.fixture(scope="module")
def pool() -> Iterator[Pool]:
    # A hidden path and a readable path carrying the marker: the host's layout a cell must not learn
    # from the zygote's command line.
    config = LocalSandboxConfig(
        timeout_s=60.0,
        max_concurrency=2,
        cpu_cores=CORES,
        hidden_paths=[f"/var/lib/{MARKER}-hidden"],
        readable_paths=[f"/opt/{MARKER}-readable"],
    )
    pool = Pool(config)
    try:
        yield pool
    finally:
        pool.close()


def test_a_cell_sees_only_the_loader_and_time_zone_of_etc(pool, planted_etc):
    """/etc holds the host's users, names, addresses and config (a package index's token in pip.conf):
    a cell reads none of it. It still resolves its own user, loads libraries and tells the time."""
    need("landlock")
    code = (
        "import os, time, pwd, getpass, mimetypes, numpy\n"
        + attempt("planted", f"print(open({str(planted_etc)!r}).read())")
        + "".join(
            attempt(name, f"open({path!r}).read()")
            for name, path in (
                ("hosts", "/etc/hosts"),
                ("hostname", "/etc/hostname"),
                ("os", "/etc/os-release"),
            )
        )
        + attempt("list", "os.listdir('/etc')")
        + "print('users: ' + repr(sorted(p.pw_name for p in pwd.getpwall())))\n"
        "print('me: ' + getpass.getuser())\n"
        "print('tz: ' + time.strftime('%Z'))\n"
        "print('mime: ' + str(mimetypes.guess_type('a.txt')[0]))\n"
        "print('numpy: ' + str(int(numpy.linalg.det(numpy.eye(3)))))\n"
    )
    r = pool.run(code)
    assert r.status == "success", r
    assert MARKER not in r.stdout
    seen = outcomes(r)
    for name in ("planted", "hosts", "hostname", "os", "list"):
        assert seen[name] in ("Permission denied", "No such file or directory"), (name, seen)
    host_users = {line.split(":")[0] for line in Path("/etc/passwd").read_text().splitlines() if line}
    users = set(json.loads(seen["users"].replace("'", '"')))
    assert users <= {"root", "cell"} and not (users & host_users - {"root"}), users
    assert seen["me"] in ("cell", "root")
    assert (seen["mime"], seen["numpy"]) == ("text/plain", "1")
    assert seen["tz"]


def test_a_readable_path_below_etc_is_shown(planted_etc):
    """`readable_paths` may name what a cell needs of /etc (a CA bundle directory): shown in its /etc,
    and nothing beside it."""
    need("landlock")
    shown = planted_etc.parent / f"{MARKER}-shown"
    shown.mkdir()
    (shown / "ca.pem").write_text("certificate\n")
    shown.chmod(0o755)
    try:
        pool = Pool(LocalSandboxConfig(readable_paths=[str(shown)], max_concurrency=1))
        try:
            r = pool.run(
                attempt("shown", f"print(open({str(shown / 'ca.pem')!r}).read(), end='')")
                + attempt("beside", f"open({str(planted_etc)!r}).read()")
            )
        finally:
            pool.close()
    finally:
        (shown / "ca.pem").unlink()
        shown.rmdir()
    assert r.status == "success", r
    assert r.stdout.startswith("certificate\n")
    assert outcomes(r)["beside"] in ("Permission denied", "No such file or directory")


def test_host_configuration_below_usr_is_unread(pool):
    """/usr/local/etc (and /usr/etc) hold a host's configuration as /etc does (a package index's token
    in pip.conf); the rest of /usr, programs and libraries, stays readable."""
    need("landlock")
    config = Path("/usr/local/etc")
    if not os.access(config.parent, os.W_OK):
        pytest.skip("needs write access to /usr/local to plant a host config file")
    made = not config.exists()
    config.mkdir(exist_ok=True)
    planted = config / f"{MARKER}.conf"
    planted.write_text(f"token={MARKER}\n")
    planted.chmod(0o644)
    try:
        r = pool.run(
            attempt("planted", f"print(open({str(planted)!r}).read())")
            + attempt("list", "__import__('os').listdir('/usr/local/etc')")
            + attempt("lib", "__import__('os').listdir('/usr/lib')")
        )
    finally:
        planted.unlink()
        if made:
            config.rmdir()
    assert r.status == "success", r
    assert MARKER not in r.stdout
    seen = outcomes(r)
    assert (
        seen["planted"] in ("Permission denied", "No such file or directory")
        and seen["list"] in ("Permission denied", "No such file or directory")
        and seen["lib"] == "ok"
    ), seen


def test_sys_shows_the_cpu_topology_only(pool):
    """/sys describes the host's devices, network interfaces and cgroups; programs read the CPUs only."""
    need("landlock")
    code = (
        "import os\n"
        + attempt("net", "os.listdir('/sys/class/net')")
        + attempt("dmi", "os.listdir('/sys/class/dmi')")
        + attempt("cgroup", "os.listdir('/sys/fs/cgroup')")
        + "print('cpus: ' + str(os.cpu_count()))\n"
        + attempt("online", "open('/sys/devices/system/cpu/online').read()")
    )
    r = pool.run(code)
    assert r.status == "success", r
    seen = outcomes(r)
    assert {seen[n] for n in ("net", "dmi", "cgroup")} <= {"Permission denied", "No such file or directory"}
    assert (seen["cpus"], seen["online"]) == (str(os.cpu_count()), "ok")


def test_the_zygotes_spec_is_in_no_command_line_nor_the_cells_memory(pool):
    """Cells' init processes are forks of the zygote: its command line (every cell's /proc/1/cmdline,
    and the cell's own sys.argv) once carried the whole spec, the host's hidden and readable paths
    among it, and so did the dicts the cell inherited (found through `gc`)."""
    code = (
        "import gc, glob, sys\n"
        "print(repr(sys.argv))\n"
        "print(repr([o for o in gc.get_objects() if isinstance(o, dict) and 'hidden' in o]))\n"
        "for path in glob.glob('/proc/[0-9]*/cmdline') + ['/proc/self/cmdline']:\n"
        "    try:\n"
        "        print(open(path, 'rb').read().decode(errors='replace'))\n"
        "    except OSError as err:\n"
        "        print(path, err.strerror)\n"
    )
    r = pool.run(code)
    assert r.status == "success", r
    assert MARKER not in r.stdout, r.stdout
    assert r.stdout.splitlines()[1] == "[]"  # no settings dict left in the cell's memory
    assert '"hidden"' not in r.stdout and '"readable_paths"' not in r.stdout  # no spec's JSON keys


def test_the_kernels_command_line_is_not_shown(pool):
    """A VM's boot parameters (/proc/cmdline) can carry a provisioning token; the cell's own /proc
    covers them, and the kernel's build configuration and modules."""
    need("pid")
    r = pool.run("print(repr(open('/proc/cmdline').read()))")
    assert (r.status, r.stdout) == ("success", "''\n"), r


def test_a_relative_library_path_opens_no_more_than_the_cells_dir(monkeypatch):
    """LD_LIBRARY_PATH allow-listed with a relative entry ("." or a trailing ":", as shells build it): the
    loader takes it against a cell's own directory, the sandbox took it against its working
    directory "/" (so it could not start, or without a mount namespace made everything readable)."""
    need("landlock")
    monkeypatch.setenv("LD_LIBRARY_PATH", ".:lib:/nonexistent:")
    pool = Pool(LocalSandboxConfig(env_allowlist=["PATH", "LD_LIBRARY_PATH"], max_concurrency=1))
    try:
        r = pool.run(
            "import os\n" + attempt("opt", "os.listdir('/opt')") + attempt("srv", "os.listdir('/srv')")
        )
    finally:
        pool.close()
    assert r.status == "success", r
    assert set(outcomes(r).values()) <= {"Permission denied", "No such file or directory"}, r.stdout


def test_the_hosts_name_is_not_the_cells(pool):
    """A node's name says whose cluster and which machine the rollout runs on: cells have their own."""
    need("mount")
    code = (
        "import os, socket\n"
        "print(os.uname().nodename, socket.gethostname(), open('/proc/sys/kernel/hostname').read())"
    )
    r = pool.run(code)
    assert r.status == "success", r
    assert r.stdout.split() == ["sandbox"] * 3 and os.uname().nodename not in r.stdout.split()


def test_no_cell_watches_the_files_others_open(pool):
    """inotify (and fanotify) on the system's files, which every cell reads, would show a cell which
    files the cells of other episodes open and read at the same time."""
    need("seccomp")
    code = (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "for name in ('inotify_init', 'inotify_init1'):\n"
        "    call = getattr(libc, name)\n"
        "    fd = call() if name == 'inotify_init' else call(0)\n"
        "    print(name, fd, ctypes.get_errno())\n"
        "print('fanotify_init', libc.fanotify_init(0, 0), ctypes.get_errno())\n"
    )
    r = pool.run(code)
    assert r.status == "success", r
    assert r.stdout.split("\n")[:3] == [
        f"{name} -1 1" for name in ("inotify_init", "inotify_init1", "fanotify_init")
    ]
    pool.serves()


def test_a_busy_cell_uses_at_most_its_cores_and_the_sandbox_weighs_its_concurrency(pool):
    """Four busy threads in one cell: with a cpu cgroup they share `cpu_cores` (the CPU used never
    exceeds the quota times the wall time, however loaded the machine: load only lengthens the wall
    time), and the sandbox's cgroup weighs as `max_concurrency` processes against t3rl's own."""
    cgroups = pool.sandbox._cgroups
    if cgroups is None or not cgroups.cpu:
        pytest.skip("no cpu cgroup on this host: cells run at nice 10 instead (the fallback tests)")
    assert "cpu cgroup" in pool.sandbox.protections.active["cpu"]
    code = (
        "import os, threading, time\n"
        "before, start = sum(os.times()[:2]), time.monotonic()\n"
        "def spin():\n"
        "    while sum(os.times()[:2]) - before < 0.5:\n"
        "        pass\n"
        "threads = [threading.Thread(target=spin) for _ in range(4)]\n"
        "[t.start() for t in threads]\n"
        "[t.join() for t in threads]\n"
        "print(sum(os.times()[:2]) - before, time.monotonic() - start)\n"
    )
    r = pool.run(code)
    assert r.status == "success", r
    cpu_s, wall_s = map(float, r.stdout.split())
    # The quota is handed out per 100 ms period: the period running at the start may have all of its
    # share left. Generous slack; without the quota four threads use several times more.
    assert cpu_s <= CORES * wall_s + 0.15, (cpu_s, wall_s)
    parent = cgroups.parents["cpu"]
    weight = parent / ("cpu.shares" if cgroups.cpu_v1 else "cpu.weight")
    assert weight.read_text().strip() == str(2 * (1024 if cgroups.cpu_v1 else 100))


def test_no_credential_reaches_a_cells_environment(monkeypatch):
    """A secret name in the allow-list or among the set variables is refused when the config is read;
    an allow-listed variable whose value is a credential (by its form, or revealed by a Secret here) is
    dropped when a zygote starts."""
    for bad in (
        {"env_allowlist": ["PATH", "HF_TOKEN"]},
        {"env_allowlist": ["WANDB_API_KEY"]},
        {"env": {"OPENAI_API_KEY": "x"}},
        {"env": {"NOTE": "sk-proj-" + uuid.uuid4().hex + uuid.uuid4().hex}},
    ):
        with pytest.raises(ValidationError, match="must not get a credential") as caught:
            LocalSandboxConfig(**bad)
        assert "sk-proj-" not in str(caught.value)
    LocalSandboxConfig(env={"TOKENIZERS_PARALLELISM": "false"}, env_allowlist=["PATH", "TZ"])

    # A credential variable's value composed under a plain name (`NOTE: ${oc.env:HF_TOKEN}`): refused,
    # and dropped at start-up if it got past the config (a value set after validation).
    copied = "t3rl-" + uuid.uuid4().hex
    monkeypatch.setenv("T3RL_TEST_API_KEY", copied)
    with pytest.raises(ValidationError, match="NOTE: a sandbox cell"):
        LocalSandboxConfig(env={"NOTE": copied})
    late = LocalSandboxConfig()
    late.env["NOTE"] = copied
    assert "NOTE" not in cell_env(late) and cell_env(late)["OMP_NUM_THREADS"] == "1"

    revealed = "t3rl-" + uuid.uuid4().hex
    monkeypatch.setenv("TZ", revealed)
    monkeypatch.setenv("LANG", "hf_" + uuid.uuid4().hex)
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    config = LocalSandboxConfig()
    assert cell_env(config)["TZ"] == revealed  # not a credential until a Secret reveals it
    assert Secret("env:TZ").reveal().get_secret_value() == revealed
    env = cell_env(config)
    assert "TZ" not in env and "LANG" not in env and env["LC_ALL"] == "C.UTF-8", env


def test_an_unconfined_sandbox_warns(caplog):
    """isolation=none runs model-written code as plain processes: said as a warning, like any missing
    protection, not as information."""
    with caplog.at_level(logging.INFO, logger="t3rl_core.sandbox"):
        Pool(LocalSandboxConfig(isolation="none", max_concurrency=1)).close()
    lines = [r for r in caplog.records if "local sandbox protections" in r.getMessage()]
    assert lines and all(r.levelno == logging.WARNING and "MISSING" in r.getMessage() for r in lines)


def test_protections_name_the_cpu_share():
    """Every host says how a cell's CPU is bounded: a cpu cgroup, else nice 10."""
    spec = {
        "host_euid": 0, "namespaces": False, "landlock_abi": 0, "disk_bytes": 1 << 26, "memory_cgroup": False,
        "limits": {"memory_bytes": 1 << 30, "nproc": 32}, "seccomp": False, "isolation": "best_effort",
        "machine": "x86_64", "cpu_cores": 1.0, "cpu_weight": 8,
    }  # fmt: skip
    seen = {"uid": 0, "gid": 0, "groups": [], "no_new_privs": False, "interfaces": ["eth0"], "ppid": 7}
    seen |= {"root_readonly": False, "cwd_writable": True, "disk_bytes": 1 << 40, "reads_confined": False}
    cgroup = observe({**spec, "cpu_cgroup": True, "nice": 0}, seen, [], "none")
    assert (
        cgroup.active["cpu"]
        == "cpu cgroup: all cells together weigh 8 processes of t3rl's, each at most 1 CPU"
    )
    niced = observe({**spec, "cpu_cgroup": False, "nice": 10}, seen, [], "none")
    assert niced.active["cpu"] == "no cpu cgroup: cells run at nice 10"
