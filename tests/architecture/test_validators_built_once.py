"""A cold `t3rl validate` generates the schema of each config section it validates alone (a stage's
hardware, its eval settings, the sections the runtime config shares with the run, the architecture)
once: built before the run's validator, which reuses them (launch.config.schema.build_run_validator);
built after it, pydantic generates each again (a cold start cost, benchmarks/cli_startup.py). Run in a
fresh interpreter, as a user runs it: this process has built its validators already."""

from __future__ import annotations

from pathlib import Path

from tests.architecture.cold_command import probed

# Counts, per model class, the schema generations that built it rather than reused a built one
# (pydantic's GenerateSchema._model_schema, once per generation and class).
PROBE = """
import atexit, collections, json, sys
from pydantic._internal import _generate_schema
from pydantic._internal._mock_val_ser import MockCoreSchema

generated = collections.Counter()
seen = set()
original = _generate_schema.GenerateSchema._model_schema

def counting(self, cls):
    built = cls.__dict__.get("__pydantic_core_schema__")
    if (built is None or isinstance(built, MockCoreSchema)) and (id(self), cls) not in seen:
        seen.add((id(self), cls))
        generated[cls.__name__] += 1
    return original(self, cls)

_generate_schema.GenerateSchema._model_schema = counting
atexit.register(lambda: print(json.dumps(generated), file=sys.__stderr__))
sys.argv[0] = "t3rl"
from launch.cli import main
main()
"""


def test_sections_validated_alone_are_generated_once(tmp_path: Path) -> None:
    generated = probed(PROBE, ["validate", "+experiment=stage2_bfcl"], tmp_path)
    # stage2_bfcl has a train stage (its hardware validated alone) and an eval stage (its settings)
    assert generated["HardwareConfig"] == 1
    assert generated["EvalConfig"] == 1
    assert generated["RunConfig"] == 1
    # shared with the runtime config the trial plan validates, and the architecture a rule dumps
    for shared in ("ChatConfig", "ParsersConfig", "MisConfig", "KlInRewardConfig", "MegatronArch"):
        assert generated[shared] == 1, shared


# The modules a plain plan and validate import before their command runs; pydantic imports its plugin
# loader (pydantic.plugin._loader) as it builds its first validator, of a model or a TypeAdapter.
IMPORT_PROBE = """
import json, sys
import launch.cli.run_command, launch.cli.validate_command
print(json.dumps("pydantic.plugin._loader" in sys.modules), file=sys.stderr)
"""


def test_importing_plan_and_validate_builds_no_validator(tmp_path: Path) -> None:
    """A validator built as a module is imported (a model instance or a TypeAdapter at module level) is
    built outside `launch.config.pydantic_plugins.without_plugins`: pydantic then scans every installed
    distribution for plugins (~60 M instructions of a cold validate), and the model's schema is generated
    again inside the run's validator."""
    assert probed(IMPORT_PROBE, [], tmp_path) is False
