"""A third round of kinds of mistakes no issue listed, each refused (or, where only suspicious, warned
about) by a declaration it violates. Each refusal names the key the user changed, where it was set, and
a first fix that validates when applied; the valid settings next to them are accepted. The cases share
the first round's working directory and composition cache (a module-scoped fixture)."""

from __future__ import annotations

from pathlib import Path

import pytest
import test_preflight_unlisted_kinds as first_round
from test_preflight import _errors, _invoke
from test_preflight_slime_kinds import refused_with_a_fix_that_validates

S1 = "+experiment=stage1_bfcl"
# DeepSeek-V3 on a layout that plans (SLURM: 16 nodes are not this machine's)
MOE = [S1, "model=deepseek_v3", "hardware.nodes=16", "hardware.tensor_parallel=4"]
MOE += ["hardware.expert_parallel=128", "executor=slurm"]
A = "model.architecture"

# (id, overrides, key named, a fragment of the message)
BAD = [
    (
        "head_size_of_another_checkpoint",
        [S1, f"{A}.kv_channels=64"],
        f"{A}.kv_channels",
        "checkpoint has head_dim 128",
    ),
    (
        "head_size_left_to_megatrons_default",
        [S1, f"{A}.kv_channels=null"],
        f"{A}.kv_channels",
        "kv_channels is 80, but",
    ),
    (
        "experts_of_another_checkpoint",
        [*MOE, f"{A}.moe.num_experts=128"],
        f"{A}.moe.num_experts",
        "cannot load the checkpoint's weights into a model of that shape",
    ),
    (
        "routed_to_other_experts_than_trained",
        [*MOE, f"{A}.moe.moe_router_topk=4"],
        f"{A}.moe.moe_router_topk",
        "num_experts_per_tok 8",
    ),
    (
        "latent_rank_of_another_checkpoint",
        [*MOE, f"{A}.mla.kv_lora_rank=256"],
        f"{A}.mla.kv_lora_rank",
        "kv_lora_rank 512",
    ),
    (
        "a_stages_env_override_of_no_field",
        [S1, "+stages.train.env.nosuch=1"],
        "stages.train.env.nosuch",
        "unknown key 'nosuch' under 'stages.train.env'",
    ),
    (
        "a_stages_env_override_of_the_wrong_kind",
        [S1, "+stages.train.env.augmentation.enabled=maybe"],
        "stages.train.env.augmentation.enabled",
        "Input should be a valid boolean",
    ),
    (
        "a_stages_env_override_misspelt",
        [S1, "+stages.train.env.augmentatio.enabled=true"],
        "stages.train.env.augmentatio",
        "unknown key 'augmentatio'",
    ),
    (
        "a_stages_reward_override_of_no_reward",
        [S1, "+stages.train.reward.name=nosuch"],
        "stages.train.reward.name",
        "unknown reward 'nosuch'",
    ),
    (
        "a_section_of_another_env_kind_added",
        [S1, "+env.user.name=x"],
        "env.user",
        "unknown key 'user' under 'env'",
    ),
]

# (id, overrides, key, the override `set in:` must name): blamed on the line the user typed
BLAMED_ON_THE_OVERRIDE = [
    (
        "a_stages_env_override",
        [S1, "+stages.train.env.augmentatio.enabled=true"],
        "stages.train.env.augmentatio",
    ),
    ("a_stages_reward_override", [S1, "+stages.train.reward.nosuch=1"], "stages.train.reward.nosuch"),
    ("a_section_an_override_created", [S1, "+env.user.name=x"], "env.user"),
    ("a_section_an_override_created_deeper", [S1, "+env.user.extra_body.a=1"], "env.user"),
]

UNUSUAL = [
    ("head_size_given_as_megatrons_default", [S1, "model=glm4_9b", f"{A}.kv_channels=128"]),
    ("deepseek_as_shipped", MOE),
    ("a_stages_env_override_valid", [S1, "+stages.train.env.augmentation.enabled=true"]),
    ("a_stages_reward_of_another_name", [S1, "+stages.train.reward.name=binary"]),
]


# The first round's fixture (a working directory, a composition cache, its dataset files) and filler.
data = first_round.data
_filled = first_round._filled

CASES = [pytest.param(o, k, m, id=i) for i, o, k, m in BAD] + [
    pytest.param(o, None, "", id=i) for i, o in UNUSUAL
]


@pytest.mark.parametrize(("overrides", "key", "message"), CASES)
def test_refused_with_a_fix_that_validates_or_accepted(
    overrides: list[str], key: str | None, message: str, data: Path
) -> None:
    args = _filled(overrides, data)
    if key is not None:
        refused_with_a_fix_that_validates(args, key, message)
        return
    code, out = _invoke("validate", *args)
    assert code == 0, out


@pytest.mark.parametrize(
    ("overrides", "key"), [c[1:] for c in BLAMED_ON_THE_OVERRIDE], ids=[c[0] for c in BLAMED_ON_THE_OVERRIDE]
)
def test_blamed_on_the_override_that_set_it(overrides: list[str], key: str, data: Path) -> None:
    """A key an override created (or set below a stage's section) is blamed on that override, not on the
    file that set the section around it (the composed node it was added to is that file's)."""
    code, out = _invoke("validate", *overrides)
    assert code == 2, out
    (block, *_) = [b for b in _errors(out) if b["key"] == key]
    assert f"override `{overrides[-1]}`" in block["source"], out
