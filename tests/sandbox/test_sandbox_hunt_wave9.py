"""Hunt wave nine (docs/explanation/sandbox.md, "Hunt wave nine"): what a cell inherits is one policy.

A real cell raised its soft RLIMIT_STACK from 8 MiB to the host's hard limit, unlimited (the stack its
recursion, its threads and its children get): the limits `privileges.set_limits` chose were pinned,
every other one kept t3rl's soft and hard values. Now every limit a cell inherits is pinned at t3rl's
soft value, soft and hard (`privileges.inherited_limits`); RLIMIT_CPU's one second between soft and hard
is the one chosen gap. And a credential's variable named in another language (`DB_PASSWORT`) is one
for the cells' environment as `DB_PASSWORD` is (t3rl_core.secret_name_words.OTHER_LANGUAGES).
"""

from __future__ import annotations

import json
import os
import resource

import pytest

from t3rl_core.sandbox.child.privileges import inherited_limits
from t3rl_core.sandbox.config import LocalSandboxConfig
from t3rl_core.sandbox.local import cell_env
from tests.sandbox.conftest import one_cell

ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="the cells' own limits are set by a root zygote here")

# Each limit: its soft and hard value as the cell starts, and whether raising soft to hard succeeded.
CELL = """
import json, resource
found = {}
for name in dir(resource):
    if name.startswith("RLIMIT_") and name != "RLIMIT_CORE":
        which = getattr(resource, name)
        soft, hard = resource.getrlimit(which)
        try:
            resource.setrlimit(which, (hard, hard))
            raised = soft != hard
        except (ValueError, OSError):
            raised = False
        found[name] = [soft, hard, raised]
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def limits() -> dict[str, list]:
    """What one cell found of its limits, with t3rl's soft stack limit below its hard one (as a host's
    default `ulimit -s 8192` under an unlimited hard limit is)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    if hard != resource.RLIM_INFINITY and soft >= hard:
        pytest.skip("this host's stack limit has no room above its soft value")
    return json.loads(one_cell(CELL))


@ROOT
def test_a_cell_raises_no_limit_but_cpus_chosen_second(limits: dict[str, list]) -> None:
    raised = sorted(name for name, (_, _, up) in limits.items() if up)
    assert raised == ["RLIMIT_CPU"], limits


@ROOT
def test_the_stack_stays_what_t3rl_started_with(limits: dict[str, list]) -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
    assert limits["RLIMIT_STACK"][:2] == [soft, soft]


def test_every_limit_is_chosen_or_pinned() -> None:
    inherited = inherited_limits({resource.RLIMIT_NOFILE: (1, 1)})
    assert resource.RLIMIT_STACK in inherited and resource.RLIMIT_DATA in inherited
    assert resource.RLIMIT_NOFILE not in inherited and resource.RLIMIT_CORE not in inherited


@pytest.mark.parametrize("name", ["DB_PASSWORT", "CONTRASENA", "PAROLE_SENHA"])
def test_a_credentials_variable_named_in_another_language_is_refused_in_env_allowlist(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        LocalSandboxConfig(env_allowlist=[name])


def test_its_value_under_another_name_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DB_PASSWORT", "tulipgarden1987")
    monkeypatch.setenv("NOTE_FOR_CELLS", "tulipgarden1987")
    env = cell_env(LocalSandboxConfig(env_allowlist=["NOTE_FOR_CELLS"]))
    assert "NOTE_FOR_CELLS" not in env
