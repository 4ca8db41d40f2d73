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
- a config group given a number (`model=5`): Hydra's words at no key, now the group with dropping it;
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
