"""Hunt wave eight (docs/explanation/sandbox.md, "Hunt wave eight"): what a cell reads of /proc is one list.

A cell's /proc is its own PID namespace's, which filters processes, not the host's facts: a real cell
(root, every layer present) read `/proc/key-users` (the host's users by uid, with their keys' counts),
`/proc/sys/kernel/random/boot_id` (the same in every cell of every run on the host), `/proc/interrupts`,
`/proc/diskstats` and `/proc/pressure/cpu` (how hard the trainer and the other cells work, sampled as
they run). `t3rl_core.sandbox.child.mounts.PROC_COVERED` is the one table of what is covered by
/dev/null; what programs size themselves by (`cpuinfo`, `meminfo`, `stat`, `loadavg`) stays.

A cell's bidirectional controls (U+202E and its kin) reached the terminal: `t3rl rollouts show` printed
the rest of such a line reversed. They are among the controls a console of t3rl prints as a sign
(`launch.output.markup._CONTROLS`).
"""

from __future__ import annotations

import asyncio
import io
import json
import os

import pytest
from rich.console import Console

from launch.config.secret_rich import scrub_rich
from launch.config.secrets import scrub_text
from launch.output.plain import PlainConsole
from t3rl_core.sandbox.child.mounts import PROC_COVERED
from t3rl_core.sandbox.config import LocalSandboxConfig
from t3rl_core.sandbox.local import LocalSandbox

ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="a PID namespace's /proc needs root here")

KEPT = ("/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/loadavg", "/proc/self/status")
# Each path's length as the cell reads it (-1: absent or refused).
CELL = """
import json, os
def size(path):
    try:
        with open(path, 'rb') as f:
            return len(f.read())
    except OSError:
        return -1
print(json.dumps({path: size(path) for path in %r}), os.getloadavg()[0] >= 0)
"""


@pytest.fixture(scope="module")
def read() -> tuple[dict[str, int], str]:
    """What one cell read of every covered and kept path."""

    async def run() -> tuple[dict[str, int], str]:
        sandbox = LocalSandbox(LocalSandboxConfig(timeout_s=30, max_concurrency=1))
        try:
            result = await sandbox.run(CELL % ((*PROC_COVERED, *KEPT),))
        finally:
            await sandbox.aclose()
        assert result.ok, (result.error, result.stderr)
        sizes, loadavg = result.stdout.rsplit(" ", 1)
        return json.loads(sizes), loadavg.strip()

    return asyncio.run(run())


@ROOT
def test_the_hosts_facts_are_covered_in_a_cells_proc(read: tuple[dict[str, int], str]) -> None:
    sizes, _ = read
    shown = {path: size for path, size in sizes.items() if path in PROC_COVERED and size > 0}
    assert not shown, shown
    # Those this host has: the kind was real here (a kernel without PSI has no /proc/pressure).
    present = [
        p
        for p in ("/proc/key-users", "/proc/sys/kernel/random/boot_id", "/proc/interrupts")
        if os.path.exists(p)
    ]
    assert all(sizes[path] == 0 for path in present), sizes


@ROOT
def test_what_programs_size_themselves_by_stays(read: tuple[dict[str, int], str]) -> None:
    sizes, loadavg = read
    assert all(sizes[path] > 0 for path in KEPT), sizes
    assert loadavg == "True"  # os.getloadavg still answers


BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


@pytest.mark.parametrize("console", [Console, PlainConsole])
def test_a_cells_bidirectional_controls_print_as_a_sign(console: type) -> None:
    scrub_rich(scrub_text)
    out = io.StringIO()
    console(file=out, highlight=False, soft_wrap=True).print(f"reward \u202e0.1 = {BIDI} done", markup=False)
    assert not any(c in out.getvalue() for c in BIDI), repr(out.getvalue())
    assert "reward \ufffd0.1" in out.getvalue() and "done" in out.getvalue()


def test_joiners_of_emoji_and_other_scripts_print_as_written() -> None:
    """The neighbours: a zero-width joiner (an emoji family), Arabic and Hebrew letters themselves."""
    text = "\U0001f468\u200d\U0001f469 \u0645\u0631\u062d\u0628\u0627 \u05e9\u05dc\u05d5\u05dd"
    out = io.StringIO()
    PlainConsole(file=out, highlight=False, soft_wrap=True).print(text, markup=False)
    assert out.getvalue() == text + "\n"
