"""Suite-wide setup.

- The composition cache lives in a fresh directory for this session only, so tests (and the `t3rl`
  processes they start) neither read nor fill the user's ~/.cache/t3rl, nor write into the checkout.
  Hypothesis's directory (its example database, the constants it read from t3rl's modules) is one for
  the run's processes, filled by the xdist controller while its workers start
  (tests/support/hypothesis_constants.py).
- Users clone the repository alone: opening anything in a sibling `shared/` folder of the checkout
  fails the test that did it (an audit hook sees every `open` of this process; `scripts/test.sh`
  also runs the suite from a copy with no sibling folder, which covers subprocesses).
- Under pytest-xdist (`scripts/test.sh` runs `-n 3 --dist loadfile`) workers are handed whole modules,
  so a module-scoped fixture (a quickstart run, a server) is built once; SAME_WORKER keeps modules
  that share a session fixture together, and RUN_FIRST hands out the longest units first.
- An xdist controller writes the test modules' rewritten asserts once for its workers
  (tests/support/rewrite_ahead.py).
- What the collection leaves on the heap is frozen out of the garbage collector's way
  (pytest_collection_finish).
- What is built once for the whole run, whichever worker asks first (the tiny model of
  tests/support/tiny_stack.py), lives in a directory the first process (xdist's controller, or the one
  process without xdist) makes and its workers inherit: $T3RL_TEST_SHARED_DIR.
"""

from __future__ import annotations

import gc
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

from tests.support.hypothesis_constants import warm_constants
from tests.support.rewrite_ahead import rewrite_ahead

# The suite's property tests draw the same examples on every run (a failure is one anyone can rerun, not
# one run in twenty), and nothing in them is timed: Hypothesis's per-example deadline and its "too slow"
# health check both fail a test on a busy machine that passes on an idle one. `--hypothesis-profile
# explore` draws new examples, as Hypothesis does by default.
settings.register_profile(
    "t3rl", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("explore", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("t3rl")

_CACHE_DIR = "T3RL_CACHE_DIR"
SHARED_DIR = "T3RL_TEST_SHARED_DIR"
# Modules whose tests share a session fixture too costly to build on both xdist workers: one worker
# runs them all. (xdist's own `xdist_group` marks are lost on pytest 9: pytest-xdist issue 1386.)
SAME_WORKER = {
    f"tests/scaleout/{name}.py": "ray_head"  # tests/scaleout/conftest.py's real Ray head
    for name in ("test_ray_executor", "test_parallel_sweep_ray", "test_ray_plugin_preflight")
} | {
    # Scans of every source file, parsed once per process (tests/support/source_tree.py): on one worker
    # the tree is parsed once (~4 s of CPU), not by each worker one of them landed on.
    f"tests/architecture/{name}.py": "source_tree"
    for name in (
        "test_declared_dependencies", "test_seeded_draws", "test_outside_json", "test_yaml_reads",
        "test_records", "test_lazy_imports", "test_import_graph",
    )
}  # fmt: skip
# The longest units of work (a module, or a SAME_WORKER group), longest first. xdist otherwise hands out
# modules by their number of tests, most first, so few-test modules of real runs, servers, clusters and
# searches came last and one worker ran them while the other idled. Every unit of 15 s or more (and the
# older list's few below it, slow to set up) in
# `T3RL_TEST_WORKERS=2 ./scripts/test.sh --durations=120 -p no:randomly` (the sum of its tests' phases
# listed there, load 6-9; docs/explanation/performance.md, "The test suite").
RUN_FIRST = (
    "ray_head",  # 133 s
    "tests/docs/test_docs_commands.py",  # 127 s
    "tests/cli/test_search_settings.py",  # 113 s
    "tests/eval/test_eval_serve_checkpoint.py",  # 90 s
    # 112 s in `./scripts/test.sh --durations=150` of 2026-11-29 (3 workers, load 8-9), ~90 s since
    # its sweeps share a first one; not listed before, so it could come last
    "tests/launch/test_launcher_kinds_ten.py",
    "tests/launch/test_sweep_checks.py",  # 82 s
    "tests/launch/test_resume_dependencies.py",  # 78 s
    "tests/cli/test_newcomer_kinds_five.py",  # 108 s in the same profile, ~72 s since its evals read --data
    "tests/hooks/test_hooks_slime_e2e.py",  # 66 s
    "tests/e2e/test_quickstart.py",  # 54 s
    "tests/launch/test_schema_domains.py",  # 60 s alone (44 tests, most under the listed 4.4 s)
    "tests/launch/test_preflight_leaf_hunt.py",  # 48 s of CPU (-n 0, load ~13: 145 s)
    "tests/launch/test_record_mutation_hunt.py",  # 58 s of CPU (-n 0, load ~7: 111 s)
    "tests/launch/test_sweep_evals.py",  # 33 s
    "tests/envs/bfcl/test_bfcl_data.py",  # 32 s
    "tests/launch/test_cli_sweep.py",  # 30 s
    "tests/envs/tau2/test_tau2_data.py",  # 29 s
    "tests/launch/test_plain_commands.py",  # 29 s
    "tests/envs/openenv/test_openenv_world.py",  # 25 s
    "tests/launch/test_cli_run.py",  # 24 s
    "tests/launch/test_search_refusals.py",  # 24 s
    "tests/launch/test_search_cli.py",  # 21 s
    "tests/plugins/test_plugin_hooks.py",  # 21 s
    "tests/launch/test_data_cache.py",  # 21 s
    "tests/scaleout/test_secrets.py",  # 20 s
    "tests/eval/test_eval_schedule.py",  # 19 s
    "tests/launch/test_holds_secret_one_scan.py",  # 18 s
    "tests/engines/test_hf_engine.py",  # 16 s
    "tests/envs/tau2/test_tau2_evaluation.py",  # 16 s
    "tests/parsers/test_sglang_loader.py",  # 16 s
    "tests/launch/test_runtime_commands.py",  # 16 s
    "tests/plugins/test_example_plugin.py",  # 15 s
    "tests/scaleout/test_hparams_search.py",  # 13 s
    "tests/launch/test_packaging.py",  # 10 s
    "tests/launch/test_preflight_sglang_kinds.py",  # 10 s
)
_SIBLING_SHARED = Path(__file__).resolve().parents[2] / "shared"
_OWN_SHARED_DIR = pytest.StashKey[str]()


class ReadOutsideRepository(RuntimeError):
    """A test opened a file in the sibling `shared/` folder that users do not have."""


def _refuse_sibling_shared(event: str, args: tuple) -> None:
    if event != "open" or not args or not isinstance(args[0], str | os.PathLike):
        return
    path = os.fspath(args[0])
    if isinstance(path, bytes) or "shared" not in path:
        return
    resolved = Path(os.path.abspath(path))
    if resolved == _SIBLING_SHARED or _SIBLING_SHARED in resolved.parents:
        raise ReadOutsideRepository(f"{path}: tests must not read ../shared; put data under tests/fixtures/")


def pytest_configure(config: pytest.Config) -> None:
    os.environ[_CACHE_DIR] = tempfile.mkdtemp(prefix="t3rl-test-cache-")
    # An xdist worker keeps its controller's (set here before the workers start, inherited by them).
    if not hasattr(config, "workerinput") or SHARED_DIR not in os.environ:
        os.environ[SHARED_DIR] = tempfile.mkdtemp(prefix="t3rl-test-shared-")
        config.stash[_OWN_SHARED_DIR] = os.environ[SHARED_DIR]
    # Hypothesis keeps its example database in ./.hypothesis by default: the checkout (scripts/test.sh
    # fails a suite that writes there). One for the run's processes: the constants of t3rl's modules it
    # stores there are read once for all workers (pytest_sessionstart).
    set_hypothesis_home_dir(Path(os.environ[SHARED_DIR]) / "hypothesis")
    # Only where there is a sibling to read: a Python audit hook is called for every audited event, each
    # id() among them (copy.deepcopy calls it for every object it copies: ~2 M calls in a module that
    # composes with Hydra, ~0.2 us each, ~3 % of its CPU). Where ../shared does not exist (the copy
    # scripts/test.sh runs, a user's clone) an open of it fails without the hook.
    if _SIBLING_SHARED.exists():
        sys.addaudithook(_refuse_sibling_shared)
    # An xdist controller (its workers have `workerinput`) rewrites the test modules' asserts once for all
    # of them: with bytecode writing off, each worker rewrote every module as it collected.
    if not hasattr(config, "workerinput") and getattr(config.option, "numprocesses", None):
        rewrite_ahead(config)
    # A suite started as a background job (`… &` in a script, nohup) inherits SIGINT ignored, and so
    # would every process a test starts: each Ctrl-C test saw its launcher run on to the end. Python's
    # own handler here (in the controller and in each worker) makes a test's children start with the
    # default, as from a terminal.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(trylast=True)  # after Hypothesis's own: its initialization ends there
def pytest_sessionstart(session: pytest.Session) -> None:
    """An xdist controller stores Hypothesis's constants of t3rl's modules while its workers start: each
    worker read them all (~2 s of CPU) as it ended its collection."""
    config = session.config
    if not hasattr(config, "workerinput") and getattr(config.option, "numprocesses", None):
        warm_constants(config.rootpath)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The heap the collection leaves (the imported stack, every collected test) moved out of the garbage
    collector's way for the rest of the process: each full collection walked it again (in
    tests/launch/test_direct_compose.py the oldest generation's 13 passes took 0.91 s of its 13.6 s of
    CPU). Collected once first, so no cyclic garbage is kept; undone at exit (t3rl_core.gc_freeze)."""
    from t3rl_core.gc_freeze import freeze_long_lived  # lazy: conftest imports as little as it can

    gc.collect()
    freeze_long_lived()


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`--dist loadfile`, with the modules of SAME_WORKER as one unit each and RUN_FIRST's units first."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling  # lazy: only the xdist controller schedules

    class ModulesAndSharedFixtures(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = super()._split_scope(nodeid)
            return SAME_WORKER.get(module, module)

        def _assign_work_unit(self, node: object) -> None:
            first = next((unit for unit in RUN_FIRST if unit in self.workqueue), None)
            if first is not None:
                self.workqueue.move_to_end(first, last=False)
            super()._assign_work_unit(node)

    return ModulesAndSharedFixtures(config, log)


def pytest_unconfigure(config: pytest.Config) -> None:
    path = os.environ.pop(_CACHE_DIR, None)
    if path:
        shutil.rmtree(path, ignore_errors=True)
    shared = config.stash.get(_OWN_SHARED_DIR, None)
    if shared:
        shutil.rmtree(shared, ignore_errors=True)


@pytest.fixture(autouse=True)
def _forget_remembered_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test stands for a fresh command: values an earlier test's config remembered as secrets
    (masked for the rest of that process) must not mask this test's files."""
    from launch.config import secrets
    from t3rl_core import secret

    monkeypatch.setattr(secrets, "_REMEMBERED", set())
    monkeypatch.setattr(secret, "_REVEALED", set())  # values a Secret revealed, masked likewise
