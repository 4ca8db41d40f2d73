"""The dependency rules of the layout, checked on the sources: no import circles anywhere in t3rl's
packages, `t3rl_core` never imports `launch` (nor Hydra), and each `launch/` step imports only the
steps before it (config → checks → plan → run; cli may import all)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from tests.architecture.import_graph import cycles, import_graph, modules

REPO = Path(__file__).resolve().parents[2]
# The flow's order: a step may import itself and the steps before it.
STEPS = ("launch.config", "launch.checks", "launch.plan", "launch.run", "launch.cli")
# The one backward edge, on purpose: validation ends with a trial plan built in memory and dropped, so
# `validate` refuses everything `plan` would (the plan builders never import the checks).
ALLOWED_BACKWARD = {("launch.checks.validate", "launch.plan.build")}


@cache  # on first use: parsed at import, t3rl's modules cost every xdist worker ~2 s of CPU to collect this
def graph() -> dict[str, set[str]]:
    return import_graph(REPO)


def step_of(module: str) -> int | None:
    return next((i for i, step in enumerate(STEPS) if module == step or module.startswith(step + ".")), None)


def test_the_graph_covers_every_module() -> None:
    assert set(graph()) == set(modules(REPO))
    assert len(graph()) > 100
    # Sanity of the reader: known edges are seen, including lazy ones inside functions.
    assert "launch.checks.rules" in graph()["launch.checks.validate"]
    assert "launch.config.errors" in graph()["launch.checks.validate"]


def test_no_import_circles() -> None:
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_a_planted_circle() -> None:
    planted = {name: set(targets) for name, targets in graph().items()}
    planted["launch.config.errors"].add("launch.checks.validate")
    found = cycles(planted)
    assert found and any({"launch.config.errors", "launch.checks.validate"} <= set(c) for c in found)


def test_the_plan_step_never_imports_the_checks() -> None:
    # What keeps the allowed backward edge from being a circle between the steps.
    plan = {name: targets for name, targets in graph().items() if step_of(name) == STEPS.index("launch.plan")}
    assert [(n, t) for n, ts in plan.items() for t in ts if t.startswith("launch.checks")] == []


def test_t3rl_core_imports_neither_launch_nor_hydra() -> None:
    core = {name: targets for name, targets in graph().items() if name.startswith("t3rl_core")}
    offenders = [(name, t) for name, targets in core.items() for t in targets if t.startswith("launch")]
    assert offenders == []
    for name, file in modules(REPO).items():
        if name.startswith("t3rl_core"):
            text = file.read_text(encoding="utf-8")
            assert "import hydra" not in text and "from hydra" not in text, name


@pytest.mark.parametrize("module", sorted(m for m in modules(REPO) if step_of(m) is not None))
def test_launch_steps_import_only_earlier_steps(module: str) -> None:
    own = step_of(module)
    assert own is not None
    later = sorted(
        t
        for t in graph()[module]
        if (step := step_of(t)) is not None and step > own and (module, t) not in ALLOWED_BACKWARD
    )
    assert later == [], f"{module} imports a later step of the flow: {later}"
