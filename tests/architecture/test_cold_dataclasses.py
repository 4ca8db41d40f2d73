"""The dataclasses t3rl's own modules define on the way of a cold `t3rl validate` / `plan` of stage2_bfcl
are the ones listed here: a dataclass compiles its methods from text as its class is created (~2-4 M
instructions each, benchmarks/cli_instructions.py), a `t3rl_core.records.Record` or a plain class does
not. A record added to the cold path as a dataclass fails here until it is listed (and its cost said).
Run in a fresh interpreter, as a user runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.architecture.cold_command import probed

# None: `Problem` is a plain class (tests/launch/test_problem_plain.py), and the reward plugin records of
# `t3rl_core.rewards.base` are not on the path (the built-in rewards' configs have a module of their own).
LISTED: set[str] = set()
# A plan also records its run: the run dir's mutable state and the pipeline's result are plain classes
# (tests/launch/test_run_records_plain.py).
LISTED_FOR_PLAN: set[str] = set()

PROBE = """
import atexit, dataclasses, json, sys
made = []
original = dataclasses._process_class

def recording(cls, *args, **kwargs):
    made.append(f"{cls.__module__}.{cls.__qualname__}")
    return original(cls, *args, **kwargs)

dataclasses._process_class = recording
atexit.register(lambda: print(json.dumps(made), file=sys.__stderr__))
sys.argv[0] = "t3rl"
from launch.cli import main
main()
"""


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_the_cold_path_defines_only_the_listed_dataclasses(command: str, tmp_path: Path) -> None:
    made = probed(PROBE, [command, "+experiment=stage2_bfcl"], tmp_path)
    assert len(made) > 20  # the probe sees the libraries' dataclasses too
    listed = LISTED | (LISTED_FOR_PLAN if command == "plan" else set())
    own = {name for name in made if name.startswith(("launch.", "t3rl_core."))}
    assert sorted(own - listed) == []
