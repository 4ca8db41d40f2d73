"""Hunt wave ten (docs/explanation/sandbox.md, "Hunt wave ten"): what a cell may learn of its host is
declared. A /proc of the cell's own PID namespace filtered processes, not the kernel's host-wide files:
a cell read `/proc/vmstat`, `zoneinfo`, `buddyinfo`, `pagetypeinfo` (every page the host faults, frees
and reclaims, sampled as the trainer and the other cells run: a channel between two cells too),
`kallsyms` (the loaded modules by name), `devices`, `consoles`, `iomem`, `/proc/fs` (a filesystem's
statistics), `/proc/sys/fs/file-nr` and `entropy_avail` (the host's open files and entropy, moving with
everyone's work); wave eight's list (`PROC_COVERED`) named sixteen files and left whatever else a kernel
has. Now /proc's top level is an allow-list (`t3rl_core.sandbox.child.mounts.PROC_KEPT`, each entry
with why): every other file reads empty and every other directory is empty, whatever the kernel adds;
`PROC_SYS_COVERED` names the host-wide counters under /proc/sys.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from t3rl_core.sandbox.child.mounts import (
    PROC_COVERED,
    PROC_KEPT,
    PROC_SYS_COVERED,
    SYS_COVERED_DIRS,
    SYS_COVERED_FILES,
    SYS_TOPOLOGY,
)
from t3rl_core.sandbox.config import LocalSandboxConfig
from t3rl_core.sandbox.local import cell_hidden_paths
from tests.sandbox.conftest import one_cell

ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="a PID namespace's /proc needs root here")

# What the cell finds at /proc's top level: each entry (not a pid's) with what reading it gives (a file's
# length, a directory's number of entries; -1: refused), and the length of each path of `SYS`.
CELL = """
import json, os
def size(path):
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            return len(os.listdir(path))
        with open(path, 'rb') as f:
            return len(f.read())
    except OSError:
        return -1
top = {name: size('/proc/' + name) for name in os.listdir('/proc') if not name.isdigit()}
print(json.dumps([top, {path: size(path) for path in %r}]))
"""


@pytest.fixture(scope="module")
def seen() -> tuple[dict[str, int], dict[str, int]]:
    top, sys_sizes = json.loads(one_cell(CELL % (PROC_SYS_COVERED,)))
    return top, sys_sizes


@ROOT
def test_only_the_declared_entries_of_proc_show_anything(seen: tuple[dict[str, int], dict[str, int]]) -> None:
    top, _ = seen
    shown = {name: size for name, size in top.items() if name not in PROC_KEPT and size > 0}
    assert not shown, shown


@ROOT
def test_the_host_activity_this_kernel_has_was_real_and_is_covered(
    seen: tuple[dict[str, int], dict[str, int]],
) -> None:
    """The entries this host's kernel has (the kind was real here) read empty in a cell."""
    top, _ = seen
    present = [
        name
        for name in ("vmstat", "zoneinfo", "buddyinfo", "kallsyms", "devices", "fs")
        if os.path.exists(f"/proc/{name}")
    ]
    assert present, "this kernel has none of the counters the wave found"
    assert all(top.get(name, 0) <= 0 for name in present), top


@ROOT
def test_the_host_wide_counters_under_proc_sys_read_empty(
    seen: tuple[dict[str, int], dict[str, int]],
) -> None:
    _, sys_sizes = seen
    assert any(os.path.exists(path) for path in PROC_SYS_COVERED)
    assert all(size <= 0 for size in sys_sizes.values()), sys_sizes


@ROOT
def test_what_programs_size_themselves_by_still_reads(seen: tuple[dict[str, int], dict[str, int]]) -> None:
    top, _ = seen
    for name in ("cpuinfo", "meminfo", "stat", "loadavg", "sys"):
        assert top.get(name, -1) > 0, (name, top)


def test_every_kept_entry_says_why_and_none_of_wave_eights_is_kept() -> None:
    assert all(why.strip() for why in PROC_KEPT.values())
    assert not {path.split("/")[2] for path in PROC_COVERED} & set(PROC_KEPT) - {"sys"}
    assert all(path.startswith("/proc/sys/") for path in PROC_SYS_COVERED)


# Every file of the CPU and NUMA topology a cell reads, with its length as the cell reads it, and the
# entries of each covered directory.
SYS_CELL = """
import json, os
files, dirs = {}, {}
for tree in %r:
    for directory, subdirectories, names in os.walk(tree):
        for name in subdirectories:
            if name in %r:
                dirs[f"{directory}/{name}"] = len(os.listdir(f"{directory}/{name}"))
        for name in names:
            try:
                with open(f"{directory}/{name}", "rb") as f:
                    files[f"{directory}/{name}"] = len(f.read(4096))
            except OSError:
                files[f"{directory}/{name}"] = -1
print(json.dumps([files, dirs]))
"""


@pytest.fixture(scope="module")
def topology() -> tuple[dict[str, int], dict[str, int]]:
    files, dirs = json.loads(one_cell(SYS_CELL % (SYS_TOPOLOGY, sorted(SYS_COVERED_DIRS))))
    return files, dirs


def _host_has(name: str) -> bool:
    return any(name in files + dirs for tree in SYS_TOPOLOGY for _, dirs, files in os.walk(tree))


@ROOT
def test_the_topologys_activity_counters_and_vulnerabilities_are_covered(
    topology: tuple[dict[str, int], dict[str, int]],
) -> None:
    """A node's `vmstat` and `numastat`, each idle state's `usage` and `time`, the CPU's vulnerabilities:
    read by a cell before (the host had them here), empty now."""
    files, dirs = topology
    assert _host_has("vmstat") or _host_has("vulnerabilities"), "this host's /sys has none of them"
    shown = {
        path: size for path, size in files.items() if path.rsplit("/", 1)[1] in SYS_COVERED_FILES and size > 0
    }
    assert not shown, shown
    assert all(entries == 0 for entries in dirs.values()), dirs


@ROOT
def test_the_topology_itself_still_reads(topology: tuple[dict[str, int], dict[str, int]]) -> None:
    files, _ = topology
    assert files.get("/sys/devices/system/cpu/online", -1) > 0
    assert any(path.endswith("/topology/core_id") and size > 0 for path, size in files.items()), files


# What an ML job's machine keeps credentials in, by tool, under a home a user made readable.
TOOLS_FILES = (
    ".kaggle/kaggle.json", ".databrickscfg", ".pgpass", ".my.cnf", ".mylogin.cnf", ".s3cfg", ".boto",
    ".azure/msal_token_cache.json", ".config/gh/hosts.yml", ".vault-token", ".config/gcloud/credentials.db",
    ".config/gcloud/access_tokens.db", ".config/gcloud/legacy_credentials/alice@example.com/adc.json",
    ".config/rclone/rclone.conf", ".modal.toml", ".config/ngrok/ngrok.yml", ".dockercfg", ".yarnrc.yml",
    ".m2/settings.xml",
)  # fmt: skip


def test_a_readable_homes_tool_credentials_are_hidden_from_cells(tmp_path: Path) -> None:
    """`readable_paths: ['~']` gave cells Kaggle's key, the GitHub CLI's token, `.pgpass`, … (wave six's
    search knew `.netrc` and `.aws/`, not these): each is now a row of `secret_files.SECRET_FILES`, covered
    in every cell's root as a hidden path is; the home's data and code stay readable."""
    home = tmp_path / "home"
    for relative in (*TOOLS_FILES, "data/train.jsonl", "proj/model.py", "proj/config.yml"):
        (home / relative).parent.mkdir(parents=True, exist_ok=True)
        (home / relative).write_text("x")
    hidden = cell_hidden_paths(LocalSandboxConfig(readable_paths=[str(home)]))
    covered = [relative for relative in TOOLS_FILES if any(
        str(home / relative) == h or str(home / relative).startswith(h + "/") for h in hidden
    )]  # fmt: skip
    assert covered == list(TOOLS_FILES), set(TOOLS_FILES) - set(covered)
    assert not any(h.endswith(("train.jsonl", "model.py", "config.yml")) for h in hidden), hidden


@ROOT
def test_a_cells_path_names_only_directories_it_can_see(monkeypatch: pytest.MonkeyPatch) -> None:
    """t3rl's PATH named the host's homes and tools (`/home/<user>/.local/bin`, `/opt/<project>/bin`) in
    every cell: now only the directories of the cell's root (`cell.visible_path`); the system's stay."""
    host_only = ["/home/wave10-user/.local/bin", "/opt/wave10-project/bin"]
    monkeypatch.setenv("PATH", ":".join([*host_only, "/usr/bin", "/bin"]))
    entries = one_cell("import os; print(os.environ['PATH'])").strip().split(":")
    assert not set(host_only) & set(entries), entries
    assert "/usr/bin" in entries
