"""Round seven of the mutation harness (tests/support/mutation_kinds.py): kinds it did not generate before,
each case one the new kinds found ending "refused, prose fix", "refused, fix fails" or "refused elsewhere":

- a key a file sets deleted (`~model.name`): "required key is missing" with the fix `set model.name=<value>`,
  which no shell parses; a key an interpolation reads (`~paths.models_dir`): blamed on the other file's
  key; a section's name (`~env.name`): the section's validator with "see the field's comment"; a key that
  is null (`~eval.top_p`): Hydra's "Could not delete" with no fix. Each is now blamed on the deletion with
  dropping it as the fix (launch/checks/deleted_groups.py);
- another option of the env or of a stage's curriculum swapped in (`env=tau2` under stage1_bfcl, a tau2
  curriculum under the BFCL env): the split a stage reads is not prepared, blamed on the curriculum's file
  with "use one of …" as the fix; now blamed on the swap typed, with undoing it as the fix
  (launch/checks/rules/batch.py); a key of the option a swap replaced (`env.user` under
  `env=bfcl_multi_turn`) is fixed by undoing the swap (launch/config/schema_errors.py);
- an option swapped in whose file lacks a key another file interpolates (`env=bfcl_multi_turn` under
  hub_env_grpo's `${env.data.eval_split}`, the hub curriculum's `${env.data.train_split}` under ToolRL):
  "give env.data.eval_split a value in conf/env/bfcl_multi_turn.yaml", t3rl's file; now dropping the swap
  (launch/config/composed.py);
- a config group given a number (`model=5`): Hydra's words at no key, now the group with dropping it;
- a stage overlay's key typed as a list (`stages.sft.hardware.max_tokens_per_gpu=[16384]`,
  `stages.eval.eval.split=[tau2_test]`): the fix was the root model's schema default (null, `bfcl_test`,
  which the overlay would not take) or the list quoted as text; now the stage's own value
  (launch/config/schema_errors.py); a mapping given a number (`env.sandbox.env=5`): "give a mapping, e.g.
  env.sandbox.env={k: v}", which Hydra refuses over a file's mapping, now dropping it; a root key deleted
  (`~name`, `~next_experiment`) and a section's tag deleted (`~…engine.name`) as keys are; an epoch count
  nulled (`num_epoch=null`): blamed on num_rollout, which nobody changed, now on the key nulled with its value
  back (launch/checks/rules/batch.py);
- a field typed as a union of a checked text and a choice (ReTool's `reward.end_of_turn`) set to null or a
  list: refused at `reward.end_of_turn.function-after[check(), str]`, pydantic's label of the union's arm
  taken for a key (launch/config/schema_errors._config_key), with a fix naming that key;
- accepted but broken: a reward of another world's format swapped in (ToolRL's reward on ReTool's world),
  refused by `RewardConfig.READS_FORMAT` against the env's `ACTION_FORMAT`.

Each is judged as the harness judges it: refused at the mutated key (a swap: anywhere) with a first fix
that validates when applied.
"""

from __future__ import annotations

import pytest

from tests.support.mutation_kinds import DELETED
from tests.support.preflight_mutations import Mutation, judge

CASES = [
    Mutation("bfcl_debug", "deleted", "model.name", DELETED),
    Mutation("tau2_pipeline", "deleted", "env.user.base_url", DELETED),
    Mutation("bfcl_debug", "deleted", "paths.models_dir", DELETED),
    Mutation("bfcl_debug", "deleted", "model.hf_checkpoint", DELETED),
    Mutation("bfcl_debug", "deleted", "env.name", DELETED),
    Mutation("bfcl_debug", "deleted", "eval.top_p", DELETED),
    Mutation("stage1_bfcl", "group option", "env", "tau2"),
    Mutation("bfcl_env_tuning", "group option", "env", "toolrl_single_turn"),
    Mutation("stage1_bfcl", "group option", "curriculum@stages.train.curriculum", "tau2_sft"),
    Mutation("hub_env_grpo", "group option", "curriculum@stages.train.curriculum", "bfcl_stage1"),
]


@pytest.mark.parametrize("mutation", CASES, ids=[str(m) for m in CASES])
def test_refused_at_the_mutation_with_a_fix_that_validates(mutation: Mutation) -> None:
    verdict = judge(mutation)
    assert verdict.outcome == "refused, fix validates", verdict.detail


# A key of the option a swap replaced (`env.user` of tau2_pipeline's LLM customer under env=bfcl_multi_turn,
# retool's `env.data.source` under env=tau2): was "remove env.user from conf/user_sim/llm.yaml", a file
# of t3rl's, and "set it where it lives: stages.rl_hf.source=<the parquet file>", a stage's source, which
# names a stage (launch/config/schema_errors.py: the swap typed is undone).
SWAPS = [
    Mutation("tau2_pipeline", "group option", "env", "bfcl_multi_turn"),
    Mutation("retool", "group option", "env", "tau2"),
    Mutation("hub_env_grpo", "group option", "env", "bfcl_multi_turn"),
    Mutation("toolrl_grpo", "group option", "curriculum@stages.train.curriculum", "hub_grpo"),
]


@pytest.mark.parametrize("mutation", SWAPS, ids=[str(m) for m in SWAPS])
def test_a_key_of_the_option_a_swap_replaced_is_fixed_by_undoing_the_swap(mutation: Mutation) -> None:
    verdict = judge(mutation)
    assert verdict.outcome == "refused, fix validates", verdict.detail


# A config group given a number (`model=5`, a section replaced by a scalar): was Hydra's "Config group
# override must be a string or a list. Got int" at no key, with no fix (launch/config/compose.py).
def test_a_group_given_a_number_is_fixed_by_dropping_it() -> None:
    verdict = judge(Mutation("bfcl_debug", "scalar for section", "model", "5"))
    assert verdict.outcome == "refused, fix validates", verdict.detail


# Accepted but broken: a reward of one world swapped in under another whose outcome has the same keys
# (`response`, `ground_truth`) holding other things: ToolRL's reward on ReTool's math answers, ReTool's on
# ToolRL's gold calls; every episode would score as wrong. Declared: RewardConfig.READS_FORMAT against the
# env's ACTION_FORMAT (launch/checks/rules/contracts.py); the reward's own world's variants stay accepted.
FORMATS = [
    (Mutation("retool", "group option", "reward", "toolrl"), "refused, fix validates"),
    (Mutation("toolrl_grpo", "group option", "reward", "retool_outcome"), "refused, fix validates"),
    (Mutation("toolrl_grpo", "group option", "reward", "toolrl_coarse"), "accepted"),
]


@pytest.mark.parametrize(("mutation", "outcome"), FORMATS, ids=[str(m) for m, _ in FORMATS])
def test_a_reward_of_another_worlds_format_is_refused(mutation: Mutation, outcome: str) -> None:
    verdict = judge(mutation)
    assert verdict.outcome == outcome, verdict.detail


# Found by the one-item list, scalar-for-section, deleted and null kinds (see the module docstring).
SHAPES = [
    Mutation("retool", "one-item list", "stages.sft.hardware.max_tokens_per_gpu", "[16384]"),
    Mutation("tau2_pipeline", "one-item list", "stages.eval.eval.split", "[tau2_test]"),
    Mutation("tau2_pipeline", "one-item list", "stages.eval.eval.samples", "[4]"),
    Mutation("retool", "scalar for section", "env.sandbox.env", "5"),
    Mutation("tau2_pipeline", "scalar for section", "reward.alpha_multipliers", "5"),
    Mutation("bfcl_debug", "deleted", "name", DELETED),
    Mutation("bfcl_debug", "deleted", "next_experiment", DELETED),
    Mutation("quickstart", "deleted", "stages.eval_tiny.eval.engine.name", DELETED),
    Mutation("retool", "null", "stages.sft.curriculum.num_epoch", "null"),
    Mutation("retool", "null", "reward.end_of_turn", "null"),
    Mutation("retool", "one-item list", "reward.end_of_turn", "['<|im_end|>']"),
    # The fix was the value quoted (`…device='null'`, a device named "null", refused in turn): null typed
    # for a text means no value, and the override dropped leaves the files' value.
    Mutation("quickstart", "null", "stages.eval_tiny.eval.engine.device", "null"),
    # Refused at the SFT stage's train_split, with "did you mean …=tau2_test" (training on the test
    # tasks): the env field typed null is what left the split out, and dropping it the fix.
    Mutation("tau2_pipeline", "null", "env.data.demonstrations_split", "null"),
]


@pytest.mark.parametrize("mutation", SHAPES, ids=[str(m) for m in SHAPES])
def test_a_value_of_another_shape_is_fixed_at_its_key(mutation: Mutation) -> None:
    verdict = judge(mutation)
    assert verdict.outcome == "refused, fix validates", verdict.detail
