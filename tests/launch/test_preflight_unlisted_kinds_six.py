"""A sixth round of kinds of mistakes no issue listed, each refused (or, where only suspicious, warned
about) by a declaration it violates:

- a key typed by slime's name of the flag t3rl writes from it (`use_dynamic_batch_size`, `prompt_data`,
  `actor_num_gpus_per_node`, as a slime script spells `--use-dynamic-batch-size`): the fix is the key the
  one table of derived flags names (`launch.config.slime_flags`), not a guess by spelling.

Each refusal names the key, where it was set (the file, or the override) and a first fix that validates
when applied; the valid settings next to them are accepted. The config cases share the first round's
working directory and composition cache (a module-scoped fixture)."""

from __future__ import annotations

from pathlib import Path

import pytest
import test_preflight_unlisted_kinds as first_round
from test_preflight import _invoke
from test_preflight_slime_kinds import refused_with_a_fix_that_validates

S1 = "+experiment=stage1_bfcl"
TUNING = "+experiment=bfcl_env_tuning"
C = "stages.train.curriculum"

data = first_round.data

# ---------------------------------------------------------------- slime's name of a flag typed as a key

# (id, overrides, the key refused, the first fix)
SLIME_NAMES = [
    (
        # was: "did you mean …over_sampling_batch_size? e.g. …over_sampling_batch_size=false" (an int)
        "dynamic_batching_under_the_curriculum",
        [S1, f"{C}.use_dynamic_batch_size=false"],
        f"{C}.use_dynamic_batch_size",
        "set the key t3rl writes --use-dynamic-batch-size from: hardware.dynamic_batch=false",
    ),
    (
        # was: the curriculum's known keys listed
        "the_prompt_data_of_a_stage",
        [TUNING, "stages.stage2.curriculum.prompt_data=bfcl_train_base"],
        "stages.stage2.curriculum.prompt_data",
        "set the key t3rl writes --prompt-data from: stages.stage2.curriculum.train_split=bfcl_train_base",
    ),
    (
        "the_actors_gpus_under_the_curriculum",
        [S1, f"{C}.actor_num_gpus_per_node=4"],
        f"{C}.actor_num_gpus_per_node",
        "set the key t3rl writes --actor-num-gpus-per-node from: hardware.gpus_per_node=4",
    ),
    (
        "a_parallel_size_in_a_stages_hardware",
        [TUNING, "stages.stage2.hardware.context_parallel_size=2"],
        "stages.stage2.hardware.context_parallel_size",
        "set the key t3rl writes --context-parallel-size from: stages.stage2.hardware.context_parallel=2",
    ),
]


@pytest.mark.parametrize(
    ("overrides", "key", "fix"), [c[1:] for c in SLIME_NAMES], ids=[c[0] for c in SLIME_NAMES]
)
def test_a_key_typed_by_slimes_flag_name_gets_the_key_t3rl_writes_the_flag_from(
    overrides: list[str], key: str, fix: str, data: Path
) -> None:
    block = refused_with_a_fix_that_validates(overrides, key, "unknown key")
    assert block["fix"].startswith(fix), block


def test_a_misspelt_key_that_is_no_flags_name_still_gets_the_nearest_key(data: Path) -> None:
    block = refused_with_a_fix_that_validates(
        [S1, f"{C}.rollout_batch_sise=64"], f"{C}.rollout_batch_sise", ""
    )
    assert "rollout_batch_size=64" in block["fix"] and "t3rl writes" not in block["fix"], block
