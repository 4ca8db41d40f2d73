"""An eval's written records stay byte for byte what they were, whatever the loop's speed work changes.

The eval loop keeps caches (prompt heads, prompts, pieces, turn deltas, the engine's reply ids) and
orders and overlaps its episodes for throughput; none of it may change a record. Two checks:
- a property: the same episodes from a cold chat format at concurrency 1 and from warm caches at a
  higher concurrency (a second eval in the process) write the same lines, with faults injected so the
  repair and error paths are played too;
- a digest of the lines of a fixed eval (every multi-turn category, faults on), taken from the
  checkout before the eval loop's fifth round (docs/explanation/performance.md). When a change to the
  records is intended, print the new one with
  `.venv/bin/python -m tests.eval.test_records_stable` and say why in the commit.

Each line is compared as written, with only its `timings` (seconds measured on the clock) blanked.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from pathlib import Path

import pytest

from t3rl_core.eval.runner import TRAJECTORIES_FILE, run_eval
from tests.support.eval_runs import bfcl_runtime, reference_config
from tests.support.tiny_stack import bfcl_rows

FAULTS = {"malformed_json": 0.1, "wrong_argument": 0.1, "extra_call": 0.05, "premature_answer": 0.05}
# Of `lines_digest` over `fixed_eval` (see the module docstring). Since the reference engine draws its
# faults per sample (4b2db98: the two samples of a task drew the same faults; b2d3b45f… before, and
# d28f4687… before each record carried `cut_tokens`; d1bb1a04… before each carried `after_stop_tokens`;
# 3df28178… before each carried `step_info`, the world's Transition.info per env call: the lines without
# it hash to that digest still; ffd1a3c0… before each carried `reproducible` and `unseeded`, the
# samplers its seed may not decide, likewise).
RECORDS_SHA256 = "346ef747e143e8adc2e01668875dfbcf57dd8f5f6e7f35d7819257d48870b930"
_TIMINGS = re.compile(r'"timings": \{[^{}]*\}')


def fixed_eval(out: Path, concurrency: int) -> list[str]:
    """The written lines of two samples of the first two tasks of each category, faults injected."""
    engine = {"name": "reference", "faults": FAULTS}
    config = reference_config(concurrency, samples=2, pass_k=[1, 2], engine=engine)
    asyncio.run(run_eval(bfcl_runtime(), config, bfcl_rows(per_category=2), out, show_progress=False))
    lines = (out / TRAJECTORIES_FILE).read_text().splitlines()
    return sorted(_TIMINGS.sub('"timings": {}', line) for line in lines)


def lines_digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return fixed_eval(tmp_path_factory.mktemp("cold"), concurrency=1)


def test_the_records_are_the_ones_written_before(first: list[str]) -> None:
    assert len(first) == 16
    assert lines_digest(first) == RECORDS_SHA256


def test_warm_caches_and_concurrency_write_the_same_records(first: list[str], tmp_path: Path) -> None:
    assert fixed_eval(tmp_path, concurrency=5) == first


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as out:
        print(lines_digest(fixed_eval(Path(out), concurrency=1)))
