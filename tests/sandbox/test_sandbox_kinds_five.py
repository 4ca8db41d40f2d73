"""Round six of hostile cells: what a cell learns of the host from its own /proc.

A cell's /proc is its own PID namespace's, but files about the cell itself still name things of the
host: `/proc/self/cgroup` gave the host's cgroup paths (a container's id, the slot's name with t3rl's pid).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from t3rl_core.sandbox.config import LocalSandboxConfig
from tests.sandbox.conftest import host_offers
from tests.sandbox.test_sandbox_redteam import Pool


@pytest.fixture(scope="module")
def pool() -> Iterator[Pool]:
    pool = Pool(LocalSandboxConfig(timeout_s=60.0, max_concurrency=2))
    try:
        yield pool
    finally:
        pool.close()


@pytest.mark.skipif(not host_offers("mount"), reason="the host offers no namespaces")
def test_a_cell_sees_its_cgroups_as_roots_not_the_hosts_layout(pool):
    """Before: `4:memory:/process_api/f264e7…/t3rl-sandbox-25917-0/cell-2`, the host container's cgroup
    and t3rl's pid; now each line of the cell's own cgroups ends in "/" (a cgroup namespace per
    zygote, entered after it joined its slot's cgroups)."""
    result = pool.run("print(open('/proc/self/cgroup').read(), end='')")
    assert result.status == "success", result
    lines = result.stdout.splitlines()
    assert lines and all(line.split(":", 2)[2] == "/" for line in lines), result.stdout
    pool.serves()
