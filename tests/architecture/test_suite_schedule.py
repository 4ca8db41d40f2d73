"""How tests/conftest.py hands the suite to pytest-xdist workers (`--dist loadfile`): whole modules,
the Ray-head modules as one unit, and the longest units (RUN_FIRST) before everything else."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from tests import conftest

ROOT = Path(__file__).resolve().parents[2]


class Worker:
    """What the scheduler calls on an xdist worker: it records the tests it is sent."""

    shutting_down = False

    def __init__(self, collection: list[str], name: str) -> None:
        self.collection = collection
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[str] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent += [self.collection[i] for i in indices]

    def shutdown(self) -> None:
        self.shutting_down = True


def modules_in_order(collection: list[str], workers: int) -> list[list[str]]:
    """The modules each worker is sent first, as the scheduler hands them out."""
    config = SimpleNamespace(
        getoption=lambda name: {"dist": "loadfile"}[name],
        getvalue=lambda name: {"tx": [f"{workers}*popen"]}[name],
        option=SimpleNamespace(loadscopereorder=True),
    )
    scheduler = conftest.pytest_xdist_make_scheduler(config, None)
    nodes = [Worker(collection, f"gw{i}") for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    return [list(dict.fromkeys(nodeid.split("::")[0] for nodeid in node.sent)) for node in nodes]


def test_the_longest_units_go_out_first_whatever_their_number_of_tests() -> None:
    many = [f"tests/a/test_many.py::test_{i}" for i in range(50)]
    slow = ["tests/eval/test_eval_serve_checkpoint.py::test_one", "tests/e2e/test_quickstart.py::test_one"]
    ray = [f"tests/scaleout/{name}.py::test_one" for name in ("test_ray_executor", "test_parallel_sweep_ray")]
    first, second = modules_in_order([*many, *slow, *ray], workers=2)
    # Without RUN_FIRST the 50-test module went first and the few-test slow ones last.
    assert first[0] == "tests/scaleout/test_ray_executor.py"
    assert "tests/scaleout/test_parallel_sweep_ray.py" in first  # one Ray head: the same worker
    assert second[0] == "tests/eval/test_eval_serve_checkpoint.py"
    assert "tests/a/test_many.py" not in (first[0], second[0])


def test_every_unit_run_first_is_a_module_of_the_suite_or_a_group() -> None:
    groups = set(conftest.SAME_WORKER.values())
    assert [u for u in conftest.RUN_FIRST if u not in groups and not (ROOT / u).is_file()] == []
    assert len(set(conftest.RUN_FIRST)) == len(conftest.RUN_FIRST)
