"""Comparable results, the hunt of docs/explanation/comparable-results.md: kinds no list named.

A ReTool world's sandbox was recorded by its name alone, so two evals whose code cells ran under a 1 s
or a 10 s limit, 64 MiB or 1 GiB, were one benchmark, though the model reads the timeout or the
MemoryError back and its score follows. Each sandbox field is now declared once
(`t3rl_core.eval.compared.SANDBOXES`): compared in the env part, or why not; the property below holds
the identity an eval records to every declaration.
"""

from __future__ import annotations

from typing import Any

import pytest

from t3rl_core.envs.retool.config import ReToolEnvConfig
from t3rl_core.eval.compared import NOT_COMPARED, SANDBOXES
from t3rl_core.eval.identity import differences
from t3rl_core.registries import SANDBOXES as SANDBOX_REGISTRY
from t3rl_core.sandbox.config import LocalSandboxConfig
from tests.eval.test_comparable_kinds_three import identity
from tests.support.eval_runs import bfcl_runtime

# Another valid value of each field of each shipped sandbox.
OTHER: dict[str, dict[str, Any]] = {
    "local": {
        "python": "python3",
        "timeout_s": 1.0,
        "cpu_time_s": 3,
        "memory_mb": 64,
        "cpu_cores": 2.0,
        "max_processes": 4,
        "max_open_files": 64,
        "max_file_size_mb": 1,
        "max_output_bytes": 100,
        "max_concurrency": 2,
        "isolation": "none",
        "require": ["user"],
        "cell_uid": 60000,
        "cell_gid": 60000,
        "cell_disk_mb": 8,
        "private_dirs": ["/tmp"],
        "preload": ["json"],
        "hidden_paths": ["~/.ssh"],
        "readable_paths": ["/opt"],
        "env_allowlist": ["PATH"],
        "env": {"OMP_NUM_THREADS": "2"},
    },
    "sandbox_fusion": {
        "url": "http://10.0.0.2:8080",
        "language": "cpp",
        "run_timeout_s": 3.0,
        "compile_timeout_s": 3.0,
        "request_timeout_s": 30.0,
        "max_concurrency": 4,
        "max_attempts": 2,
        "backoff_initial_s": 0.1,
        "backoff_max_s": 1.0,
    },
}


def _sandbox_class(name: str) -> Any:
    return SANDBOX_REGISTRY.config_class(name)


def test_every_field_of_a_shipped_sandbox_is_declared() -> None:
    """A field added to a sandbox fails here until compared.py says whether its results compare."""
    assert set(SANDBOXES) == set(SANDBOX_REGISTRY.entries)
    for name, declared in SANDBOXES.items():
        fields = set(_sandbox_class(name).model_fields)
        assert fields == set(declared), (name, sorted(fields ^ set(declared)))
        assert set(OTHER[name]) == fields - {"name"}, f"{name}: give the test another value of each field"
        for part in declared.values():
            assert part == "env" or part.startswith(f"{NOT_COMPARED}: "), (name, part)


def _env_of(sandbox: dict[str, Any]) -> ReToolEnvConfig:
    return ReToolEnvConfig.model_validate({"sandbox": sandbox})


def _found(a: ReToolEnvConfig, b: ReToolEnvConfig) -> set[str]:
    base = bfcl_runtime()
    ours, theirs = (identity(base.model_copy(update={"env": env})) for env in (a, b))
    return {part.split(":", 1)[0] for part in differences(ours, theirs)}


CASES = [(name, field) for name, fields in OTHER.items() for field in fields]


@pytest.mark.parametrize(("sandbox", "field"), CASES, ids=[f"{s}.{f}" for s, f in CASES])
def test_a_sandbox_declaration_holds_for_the_identity(sandbox: str, field: str) -> None:
    """Each field at another value changes the env part exactly when it is declared compared."""
    found = _found(_env_of({"name": sandbox}), _env_of({"name": sandbox, field: OTHER[sandbox][field]}))
    assert found == ({"env"} if SANDBOXES[sandbox][field] == "env" else set()), (sandbox, field, found)


def test_another_sandbox_is_another_benchmark() -> None:
    assert _found(_env_of({"name": "local"}), _env_of({"name": "sandbox_fusion"})) == {"env"}


def test_a_sandbox_nothing_declares_is_compared_by_every_field() -> None:
    """A plugin's sandbox: no declaration, so none of its fields is taken for where it runs."""

    class Mine(LocalSandboxConfig):
        name: str = "my_pkg.sandbox:Mine"  # type: ignore[assignment]

    def env(**fields: Any) -> ReToolEnvConfig:
        config = _env_of({"name": "local"})
        return config.model_copy(update={"sandbox": Mine(**fields)})

    assert _found(env(), env(max_concurrency=2)) == {"env"}
    assert _found(env(), env()) == set()
