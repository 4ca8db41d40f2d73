"""Round twelve (docs/explanation/sandbox.md, "Round twelve"): where t3rl is not root its cells keep its
uid, and the pipes of the kernel's default size a cell makes count against that uid's pipe pages
(`fs.pipe-user-pages-soft`) while it runs. No layer an unprivileged process can set separates them, so
this checks the boundary the page states, as nobody with a user namespace per slot:

- a pipe stays counted with one of its ends open: one process holds as many pipes as its descriptor
  limit (`max_open_files`) allows, and as many again in flight over a socket pair (SCM_RIGHTS, bounded
  by the same limit per uid); no more;
- the pages come back when the cell ends: the next cell's pipe, and t3rl's own, get the default size.
"""

from __future__ import annotations

import json

from tests.sandbox.test_sandbox_non_root import as_nobody

HOLDS = """
import array, fcntl, json, os, resource, socket
F_GETPIPE_SZ = 1032
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
held, in_flight, last = [], 0, None
a, b = socket.socketpair()
def make():
    r, w = os.pipe()
    os.close(w)
    return r
try:  # pipes kept by their read end only, in flight over the socket pair while it takes them
    while True:
        r = make()
        try:
            a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [r]))])
        except OSError:
            os.close(r)
            break
        os.close(r)
        in_flight += 1
except OSError:
    pass
try:  # then by their descriptors, up to the limit
    while True:
        r = make()
        held.append(r)
        last = fcntl.fcntl(r, F_GETPIPE_SZ)
except OSError as error:
    stop = error.errno
print(json.dumps({"nofile": soft, "held": len(held), "in_flight": in_flight, "last": last, "stop": stop}))
"""

AFTER = """
import fcntl, os
r, w = os.pipe()
print(fcntl.fcntl(r, 1032))
"""

AS_T3RL = f"""
import asyncio, fcntl, os
from t3rl_core.sandbox.config import LocalSandboxConfig
from t3rl_core.sandbox.local import LocalSandbox

async def go():
    sandbox = LocalSandbox(LocalSandboxConfig(timeout_s=120, max_concurrency=1))
    try:
        first = await sandbox.run({HOLDS!r})
        second = await sandbox.run({AFTER!r})
    finally:
        await sandbox.aclose()
    r, w = os.pipe()
    print(first.status, second.status, second.stdout.strip(), fcntl.fcntl(r, 1032))
    print(first.stdout.strip() or first.stderr[-2000:])

asyncio.run(go())
"""


def test_without_root_a_cells_default_pipes_are_bounded_by_its_descriptors_and_end_with_it() -> None:
    done = as_nobody(AS_T3RL, 900)
    assert done.returncode == 0, done.stderr
    head, _, report_line = done.stdout.partition("\n")
    first, second, next_cell_pipe, own_pipe = head.split()
    assert (first, second) == ("success", "success"), done.stdout
    report = json.loads(report_line.strip())
    # One descriptor keeps a pipe (and its 16 pages) counted: a process holds up to its limit less the
    # three it was born with and the socket pair, and as many in flight, bounded by the same limit.
    assert report["stop"] == 24, report  # EMFILE
    assert report["nofile"] - 8 <= report["held"] <= report["nofile"], report
    assert 0 < report["in_flight"] <= report["nofile"] + 1, report
    assert report["last"] == 65536, report  # the default size while under the soft limit
    # After the cell, its pages are the uid's again: full-size pipes for the next cell and for t3rl.
    assert int(next_cell_pipe) == 65536 and int(own_pipe) == 65536, done.stdout
