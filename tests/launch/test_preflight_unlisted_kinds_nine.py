"""A ninth round of kinds of mistakes no issue listed, each refused at the key that was changed, with a first
fix that validates, by a declaration rather than by a case of its own:

- a mapping typed where a list goes (`env.data.categories={a: 1}`, at any depth of a mapping typed for a
  section): Hydra's "Error merging override", with no fix. A value of the other container shape replaces
  the earlier one, as a number over a mapping does, and the schema is the one judge of a value's shape
  (launch/config/other_shapes.py);
- the same in a user's config file (`categories: {a: 1}` over the base experiment's list, `parsers: [1]`
  over a section): the pre-flight crashed ("t3rl failed unexpectedly: ConfigTypeError: Cannot merge
  DictConfig with ListConfig"), or blamed another file's interpolation of a key below the section;
- a mapping typed for a section with a key the section has no field for (`env.data={a: 1}`): the fix was
  Hydra's "add its keys with '+'", which the schema refused again; the mapping's keys are judged as the
  keys typed one by one are (launch/config/mapping_keys.py): a misspelt one renamed, another dropped;
- a whole number past int64 (`num_rollout=2**63`): accepted by every field without an upper bound, though
  numpy, torch and C extensions raise OverflowError on it (launch/config/machine_ints.py);
- a letter of another script drawn as an ASCII one (`'qwеn'` with a Cyrillic е, `Ｈ100`, a flag's `–-` from an
  editor): the key's old value as the fix, a name made safe (`bfcl_unsen`), or Hydra's grammar error with
  the look-alike quoted; a value a string kind refuses that it takes with its look-alikes in ASCII meant
  that ASCII (`t3rl_core.fields.ascii_lookalike`), and an argv token starting with a typographic dash is
  no flag;
- a root hardware key typed that every train stage sets again in its overlay and no other stage reads
  (`hardware.context_parallel=2` on stage2_bfcl, whose train stage runs CP 4): accepted without a word; a
  warning with the stage's key as the fix (launch/checks/rules/stage_hardware.py: the plan is built with the
  root section behind a recorder of the fields read from it);
- an entry of the stages deleted (`~stages.train`): refused at the key of the file that names it ("no stage
  named 'train'" at `stages.to_hf.source`, "no prepare_data stage runs before it") with a stage to add as
  the fix; the deletion is the key changed last, and the cause when the line without it has no such
  refusal (launch/checks/deleted_groups.deleted_entries_needed).

Each case is judged as the mutation harness judges it (tests/support/preflight_mutations.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from launch.checks.resolve import resolve
from launch.config.errors import Problem
from tests.support.in_tmp import in_tmp
from tests.support.mutation_kinds import A_MAPPING, BEYOND_INT64, DELETED
from tests.support.preflight_mutations import Mutation, judge
from tests.support.refusals import errors as _errors
from tests.support.refusals import fixed as _fixed

_in_tmp = in_tmp()  # relative paths of the configs resolve in one empty dir


CASES = [
    # a mapping where a list goes: Hydra's "Error merging override", no fix
    Mutation("stage1_bfcl", "mapping for list", "env.data.categories", A_MAPPING),
    Mutation("tau2_pipeline", "mapping for list", "env.domains", A_MAPPING),
    Mutation("bfcl_debug", "mapping for list", "eval.server.extra_args", "{tp: 2}"),
    # a list of sections: its value without the override was each section quoted as text
    Mutation("bfcl_env_tuning", "mapping for list", "eval.published.results", A_MAPPING),
    # a mapping with a key the section has no field for: "add its keys with '+'", refused again
    Mutation("stage1_bfcl", "mapping for section", "env.data", A_MAPPING),
    Mutation("retool", "mapping for section", "model.parsers", "{tool_call: qwen}"),
    Mutation("bfcl_debug", "mapping for section", "env.data", "{num_id: 200}"),
    # past int64: accepted
    Mutation("stage1_bfcl", "beyond int64", "stages.train.curriculum.num_rollout", BEYOND_INT64),
    Mutation("bfcl_debug", "beyond int64", "eval.concurrency", BEYOND_INT64),
    # within int64 but past any machine: the batch rule's search of layouts ran out of memory
    # (MemoryError out of the pre-flight), the eval server's count of TPs ran for hours (node_gpus)
    Mutation("stage1_bfcl", "huge", "hardware.gpus_per_node", str(10**12)),
    # a letter of another script drawn as an ASCII one: the key's old value, a name made safe
    # (`bfcl_unsen`: the letter dropped) or the default (H200 for `Н100`) as the fix
    Mutation("stage1_bfcl", "look-alike", "model.parsers.tool_call_parser", "'qwеn'"),
    Mutation("stage1_bfcl", "look-alike", "stages.eval.eval.split", "'bfcl_unseеn'"),
    Mutation("stage1_bfcl", "look-alike", "hardware.gpu_type", "'Н100'"),
    # a hub id's pattern took any script's letters (re's \w): accepted
    Mutation("retool", "look-alike", "model.hf_id", "'Qwеn/Qwen3-4B'"),
    Mutation("bfcl_debug", "look-alike", "eval.server.extra_args", "['–-mem-fraction-static','0.8']"),
    # unquoted, Hydra's grammar refuses it: the fix quoted the look-alike, or was prose
    Mutation("stage1_bfcl", "look-alike", "model", "qwеn3_8b"),
    Mutation("stage1_bfcl", "look-alike", "hardware.gpu_type", "Ｈ100"),
    Mutation("stage1_bfcl", "look-alike", "seed", "４２"),
    # a stage deleted: blamed on the experiment's file, with a stage to add as the fix
    Mutation("stage1_bfcl", "deleted entry", "stages.train", DELETED),
    Mutation("stage1_bfcl", "deleted entry", "stages.data", DELETED),
    Mutation("tau2_pipeline", "deleted entry", "stages.sft", DELETED),
]


@pytest.mark.parametrize("mutation", CASES, ids=[str(m) for m in CASES])
def test_refused_at_the_key_changed_with_a_fix_that_validates(mutation: Mutation) -> None:
    verdict = judge(mutation)
    assert verdict.outcome == "refused, fix validates", verdict.detail


def test_a_mapping_for_a_list_gets_the_schemas_words_and_the_value_without_it() -> None:
    (error, *_) = _errors(["+experiment=stage1_bfcl", "env.data.categories={a: 1}"])
    assert error.key == "env.data.categories"
    assert error.message.startswith("Input should be a valid list"), error.message
    assert error.fix.startswith("set env.data.categories=[multi_turn_base,"), error.fix


def test_a_misspelt_key_of_a_mapping_is_renamed_in_it_and_an_unknown_one_dropped() -> None:
    (misspelt, *_) = _errors(["+experiment=stage1_bfcl", "env.data={num_id: 200}"])
    assert misspelt.key == "env.data" and "unknown key 'num_id'" in misspelt.message
    assert misspelt.fix == "set env.data={num_ids: 200} instead of `env.data={num_id: 200}`"
    (unknown, *_) = _errors(["+experiment=stage1_bfcl", "env.data={a: 1}"])
    assert unknown.fix.startswith("drop `env.data={a: 1}` (known keys under 'env.data': categories,")
    assert "'+'" not in unknown.fix


def test_a_mapping_whose_key_holds_a_list_is_refused_at_that_key() -> None:
    args = ["+experiment=stage1_bfcl", "env.data={categories: {x: 1}}"]
    (error, *_) = _errors(args)
    assert error.key == "env.data.categories" and "valid list" in error.message
    assert _errors(_fixed(args, error)) == []


def test_a_mapping_of_a_sections_own_keys_is_still_merged() -> None:
    assert _errors(["+experiment=stage1_bfcl", "env.data={seed: 3, train_ratio: 0.5}"]) == []


def _user_experiment(config_dir: Path, name: str, body: str) -> str:
    (config_dir / "experiment").mkdir(parents=True, exist_ok=True)
    header = "# @package _global_\ndefaults:\n  - stage1_bfcl\n  - _self_\n"
    (config_dir / "experiment" / f"{name}.yaml").write_text(header + body)
    return f"+experiment={name}"


def test_a_files_mapping_over_a_list_is_refused_at_the_key_not_a_crash(tmp_path: Path) -> None:
    dirs = (str(tmp_path / "conf"),)
    args = [_user_experiment(tmp_path / "conf", "mine", "env:\n  data:\n    categories: {a: 1}\n")]
    (error, *_) = _errors(args, dirs)  # was ConfigTypeError out of the pre-flight
    assert error.key == "env.data.categories"
    assert "mine.yaml" in error.source
    assert _errors(_fixed(args, error), dirs) == []


def test_a_files_list_over_a_section_is_named_with_the_file(tmp_path: Path) -> None:
    dirs = (str(tmp_path / "conf"),)
    args = [_user_experiment(tmp_path / "conf", "mine", "model:\n  parsers: [1]\n")]
    (error, *_) = _errors(args, dirs)  # was a crash, then env.data.think_tags's interpolation in another file
    assert error.key == "model.parsers"
    assert "must be a mapping" in error.message and "mine.yaml" in error.source
    assert "mine.yaml" in error.fix


def test_int64_itself_is_accepted_and_a_float_field_is_not_judged() -> None:
    assert _errors(["+experiment=stage1_bfcl", f"stages.train.curriculum.num_rollout={2**63 - 1}"]) == []
    errors = _errors(
        ["+experiment=toolrl_grpo", f"reward.format_max={2**64}", f"reward.correctness_max={2**64}"]
    )
    assert not any("64-bit" in e.message for e in errors), errors


def test_the_lookalike_is_named_and_its_ascii_is_the_first_fix() -> None:
    (error, *_) = _errors(["+experiment=stage1_bfcl", "stages.eval.eval.split='bfcl_unseеn'"])
    assert "CYRILLIC SMALL LETTER IE" in error.message
    assert error.fix.startswith("set stages.eval.eval.split=bfcl_unseen"), error.fix
    (unquoted, *_) = _errors(["+experiment=stage1_bfcl", "model=qwеn3_8b"])
    assert unquoted.fix.startswith("set model=qwen3_8b ("), unquoted.fix


def test_a_name_with_a_letter_of_no_ascii_look_is_not_read_as_ascii() -> None:
    from t3rl_core.fields import ascii_lookalike

    assert ascii_lookalike("café") is None and ascii_lookalike("qwen3") is None
    assert ascii_lookalike("—tp") == "--tp" and ascii_lookalike("a–b") == "a-b"


def test_a_stage_nothing_needs_may_be_deleted() -> None:
    assert _errors(["+experiment=stage1_bfcl", "~stages.eval"]) == []


def test_the_deleted_stage_is_named_with_what_needs_it() -> None:
    (error, *_) = _errors(["+experiment=stage1_bfcl", "~stages.train"])
    assert (error.key, error.source, error.fix) == (
        "stages.train",
        "override `~stages.train`",
        "drop `~stages.train`",
    )
    assert "stages.to_hf.source" in error.message


def _warned(overrides: list[str], key: str) -> list[Problem]:
    return [w for w in resolve(overrides).warnings if w.key == key]


def test_a_root_hardware_key_every_train_stage_sets_again_is_warned_with_the_stages_key() -> None:
    args = ["+experiment=stage2_bfcl", "hardware.context_parallel=2"]
    (warning,) = _warned(args, "hardware.context_parallel")  # was accepted without a word: CP 4 ran
    assert "stages.train.hardware.context_parallel=4" in warning.message
    assert (
        warning.fix == "set stages.train.hardware.context_parallel=2 instead of `hardware.context_parallel=2`"
    )
    fixed = _fixed(args, warning)
    assert _errors(fixed) == [] and _warned(fixed, "hardware.context_parallel") == []


@pytest.mark.parametrize(
    "overrides",
    [
        # a train stage without an overlay reads the root's (bfcl_env_tuning's stage1)
        ["+experiment=bfcl_env_tuning", "hardware.context_parallel=2"],
        # the eval stage's server reads the root's gpus_per_engine and gpu_memory_gib
        ["+experiment=stage2_bfcl", "+stages.train.hardware.gpus_per_engine=2", "hardware.gpus_per_engine=4"],
        [
            "+experiment=stage2_bfcl",
            "+stages.train.hardware.gpu_memory_gib=100",
            "hardware.gpu_memory_gib=120",
        ],
    ],
)
def test_a_root_hardware_key_another_stage_reads_is_not_warned(overrides: list[str]) -> None:
    key = overrides[-1].partition("=")[0]
    assert _warned(overrides, key) == []


# Property: any list of a shipped experiment typed as a mapping (of any keys) is refused at it with a fix
# that validates (the harness's judgement).
_LISTS = [
    ("stage1_bfcl", "env.data.categories"),
    ("stage1_bfcl", "eval.pass_k"),
    ("tau2_pipeline", "env.domains"),
    ("bfcl_debug", "model.parsers.think_tags"),
    ("retool", "eval.server.extra_args"),
]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    target=st.sampled_from(_LISTS),
    keys=st.lists(st.from_regex(r"[a-z][a-z_]{0,6}", fullmatch=True), min_size=1, max_size=3, unique=True),
    number=st.integers(-3, 99),
)
def test_any_list_given_a_mapping_is_refused_at_it(
    target: tuple[str, str], keys: list[str], number: int
) -> None:
    experiment, key = target
    value = "{" + ", ".join(f"{k}: {number}" for k in keys) + "}"
    verdict = judge(Mutation(experiment, "mapping for list", key, value))
    assert verdict.outcome == "refused, fix validates", verdict.detail
