"""A sixth round of kinds of mistakes no issue listed, each refused (or, where only suspicious, warned
about) by a declaration it violates:

- a key typed by slime's name of the flag t3rl writes from it (`use_dynamic_batch_size`, `prompt_data`,
  `actor_num_gpus_per_node`, as a slime script spells `--use-dynamic-batch-size`): the fix is the key the
  one table of derived flags names (`launch.config.slime_flags`), not a guess by spelling;
- a layout typed that leaves the global batch unsplittable over the data-parallel ranks
  (`hardware.gpus_per_node=6`): blamed on the layout key typed, with a value of it under which the batch
  splits (it was blamed on the curriculum file's global batch, which nobody changed); likewise an SGLang
  memory share typed too small for the engine's weights (`hardware.sglang_mem_fraction=0.05`), blamed on
  the share with its value without the override as the fix (was: the hardware file's gpus_per_engine);
- a root `eval.<key>` typed on the command line that every eval stage replaces with its own value
  (`eval.split=bfcl_val` on stage1_bfcl, whose eval stage names bfcl_unseen): the run's evals never read
  it (warned: `t3rl eval` of the config without `--stage` reads the root section), with the key moved to
  each stage as the fix (`launch/checks/rules/unread.py`, merged as `launch.config.overlay` merges);
- a dataset path that exists but is no dataset: a directory (was warned "does not exist …: download it
  to conf"), refused with the one dataset file it holds as the fix; a text file that is not JSON rows
  (README.md as ToolRL's train split), whose lines were counted as the split's rows, so a batch-size
  error with a fix that cannot validate came first (`t3rl_core.input_files.count_rows`: lines are rows
  only when the file's first lines are JSON);
- a model swapped in under a recipe whose eval is to reproduce a published result of another model
  (`model=qwen3_8b` under stage1_bfcl's T3RL target, a Qwen3-4B-Instruct-2507 result): warned, since the
  eval's verdict would hold one model to another's number, with `eval.published.target=null` as the fix
  (`PublishedResult.trained_from`, declared by every shipped result whose base model is known);
- two experiments on one command line (`+experiment=stage1_bfcl +experiment=stage2_bfcl`): refused (was a
  warning; Hydra itself refuses `+experiment` twice, and t3rl's reading of it as `experiment` kept the
  last one whole), with the first dropped as the fix (`launch/checks/override_effects.py`);
- a key of another entry of a registry section (`env.url=` under the verifiers env, OpenEnv's server URL;
  `reward.format_max=` under the progress reward, ToolRL's): it was answered with a place elsewhere that
  only shares the last name (`eval.engine.url=…`, a fix that validates and points the eval's LLM
  client at the env's server), or the section's keys; the registry says which entries declare the field
  (`launch/config/other_entries.py`);
- a SLURM CPU request no node holds (`executor.cpus_per_task=100000`): SLURM refuses it only when the job
  is submitted, after the stages before it ran; warned with a `Usual` ceiling of 768 (two 192-core
  sockets, two threads a core), like `gpus_per_node`'s.

Each refusal names the key, where it was set (the file, or the override) and a first fix that validates
when applied; the valid settings next to them are accepted. The config cases share the first round's
working directory and composition cache (a module-scoped fixture)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import test_preflight_unlisted_kinds as first_round
from test_preflight import _invoke
from test_preflight_slime_kinds import refused_with_a_fix_that_validates

from tests.support.fix_applier import apply_first_fix

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


# ------------------------------------------------------ the layout typed that leaves the batch unsplit


@pytest.mark.parametrize(
    ("overrides", "key", "fix"),
    [
        ([S1, "hardware.gpus_per_node=6"], "hardware.gpus_per_node", "set hardware.gpus_per_node=8"),
        (
            [S1, f"{C}.global_batch_size=256", "hardware.gpus_per_node=6"],
            "hardware.gpus_per_node",
            "set hardware.gpus_per_node=8",
        ),
        # the batch typed last is the side changed
        (
            [S1, "hardware.gpus_per_node=6", f"{C}.global_batch_size=256"],
            f"{C}.global_batch_size",
            "set hardware.gpus_per_node=8",
        ),
    ],
    ids=["the_gpus_per_node_typed", "the_gpus_per_node_typed_last", "the_batch_typed_last"],
)
def test_a_batch_that_does_not_split_is_blamed_on_the_side_typed_last(
    overrides: list[str], key: str, fix: str, data: Path
) -> None:
    block = refused_with_a_fix_that_validates(overrides, key, "does not split over 3 data-parallel ranks")
    assert block["fix"].startswith(fix), block
    typed = next(o for o in overrides if o.startswith(f"{key}="))
    assert block["source"] == f"override `{typed}`", block


def test_a_memory_share_typed_too_small_for_the_weights_is_blamed_on_the_share(data: Path) -> None:
    args = [S1, "hardware.sglang_mem_fraction=0.05"]
    block = refused_with_a_fix_that_validates(
        args, "hardware.sglang_mem_fraction", "GiB of bf16 weights per GPU"
    )
    assert block["source"] == "override `hardware.sglang_mem_fraction=0.05`", block
    assert "or set hardware.sglang_mem_fraction > 0.06 (the weights' share" in block["fix"], block


def test_a_layout_under_which_the_batch_splits_is_accepted(data: Path) -> None:
    code, out = _invoke("validate", S1, "hardware.gpus_per_node=4")
    assert code == 0, out


# ------------------------------------------------------------- a root eval key every eval stage replaces

QUICK = "+experiment=quickstart"


@pytest.mark.parametrize(
    ("overrides", "fix"),
    [
        ([S1, "eval.split=bfcl_val"], "set stages.eval.eval.split=bfcl_val instead of `eval.split=bfcl_val`"),
        (
            [QUICK, "eval.limit_per_category=3"],
            "set stages.eval_reference.eval.limit_per_category=3 stages.eval_tiny.eval.limit_per_category=3 "
            "instead of `eval.limit_per_category=3`",
        ),
    ],
    ids=["one_eval_stage", "two_eval_stages"],
)
def test_a_root_eval_key_every_eval_stage_replaces_is_warned_with_the_key_moved(
    overrides: list[str], fix: str, data: Path
) -> None:
    """Was valid without a word: the run evaluated the stage's own split."""
    key = overrides[1].split("=")[0]
    code, out = _invoke("validate", *overrides)
    assert code == 0, out
    assert f"warning {key}: {key} is set to " in out and "but every eval stage sets its own" in out, out
    assert f"fix: {fix}" in out, out
    fixed = apply_first_fix(overrides, {"message": "", "source": f"override `{overrides[1]}`", "fix": fix})
    assert fixed is not None and overrides[1] not in fixed
    code, out = _invoke("validate", *fixed)
    assert code == 0 and "every eval stage sets its own" not in out, out


@pytest.mark.parametrize(
    "overrides",
    [
        [S1, "eval.split=bfcl_unseen"],  # the stage's own value: nothing lost
        [S1, "eval.repeats=2"],  # no stage sets its own: the stage reads the root's
        ["+experiment=stage2_bfcl", "eval.temperature=0.6"],
    ],
    ids=["the_stages_own_value", "a_key_the_stage_reads", "stage2"],
)
def test_a_root_eval_key_a_stage_reads_is_quiet(overrides: list[str], data: Path) -> None:
    code, out = _invoke("validate", *overrides)
    assert code == 0 and "every eval stage sets its own" not in out, out


# ----------------------------------------------------------------- a dataset path that is no dataset

RETOOL = "+experiment=retool"
TOOLRL = "+experiment=toolrl_grpo"


def test_a_dataset_path_that_is_a_directory_is_refused_with_the_file_in_it(data: Path) -> None:
    """Was a warning that the path does not exist, with "download it to <the directory>" as the fix."""
    folder = data / "problems"
    folder.mkdir(exist_ok=True)
    (folder / "short.jsonl").write_text((data / "short.jsonl").read_text())
    args = [RETOOL, f"env.data.source={folder}", f"env.data.sft_source={data}/sft.jsonl"]
    block = refused_with_a_fix_that_validates(args, "env.data.source", f"{folder} is a directory, not a file")
    assert f"set env.data.source={folder / 'short.jsonl'} (the dataset file in it)" in block["fix"], block


@pytest.mark.parametrize(
    ("args", "key"),
    [
        ([TOOLRL, "env.data.splits.toolrl_train={readme}"], "env.data.splits.toolrl_train"),
        ([RETOOL, "env.data.source={readme}", "env.data.sft_source={data}/sft.jsonl"], "env.data.source"),
    ],
    ids=["toolrl_train_split", "retool_problems"],
)
def test_a_text_file_that_is_no_rows_is_refused_once_and_not_counted(
    args: list[str], key: str, data: Path
) -> None:
    """ToolRL's README.md was counted as 78 rows: 'rollout_batch_size 512 > 78' came first, with a fix
    (a batch of 78) that still left the file unreadable; ReTool's was 'holds no rows'."""
    readme = data / "README.md"
    readme.write_text("# my data\n\nSee the parquet files.\n" * 30)
    typed = [a.format(readme=readme, data=data) for a in args]
    block = refused_with_a_fix_that_validates(typed, key, "cannot be read: line 1 is not JSON")
    _, out = _invoke("validate", *typed)
    assert out.count(f"error {key}:") == 1, out
    assert block["fix"].startswith(f"set {key}="), block


def test_a_directory_of_files_next_to_a_file_that_is_rows_is_accepted(data: Path) -> None:
    code, out = _invoke(
        "validate", RETOOL, f"env.data.source={data}/short.jsonl", f"env.data.sft_source={data}/sft.jsonl"
    )
    assert code == 0 and "is a directory" not in out, out


# -------------------------------------------------------- a published target of another model than the run's


@pytest.mark.parametrize(
    ("overrides", "fix"),
    [
        # two options declare the base's hub id (the 2507 option and its plain one): no model alternative
        (
            [S1, "model=qwen3_8b"],
            "set eval.published.target=null (the published results stay, for reference)",
        ),
        (
            [TOOLRL, "model=qwen2_5_7b_instruct"],
            "set eval.published.target=null (the published results stay, for reference); "
            "or model=qwen2_5_3b_instruct (the model the result was trained from)",
        ),
        (["+experiment=tau2_pipeline", "model=qwen3_8b"], "set eval.published.target=null (the published"),
    ],
    ids=["t3rl_stage1", "toolrl", "tau2"],
)
def test_a_published_target_of_another_model_is_warned(overrides: list[str], fix: str, data: Path) -> None:
    """Was valid without a word: the eval's verdict compared the swapped model with the recipe's number."""
    code, out = _invoke("validate", *overrides)
    assert code == 0, out
    assert (
        "warning model.hf_id: eval.published.target is '" in out and "a number published for another" in out
    )
    # the option's file and the line writing hf_id
    assert re.search(
        rf"conf/model/{overrides[1].split('=')[1]}\.yaml:\d+ \(chosen by override `{overrides[1]}`\)", out
    )
    line = out.split("a number published for another model", 1)[1].split("fix: ", 1)[1].splitlines()[0]
    assert line.startswith(fix), line
    assert ("; or model=" in line) == (overrides[0] == TOOLRL), line
    code, out = _invoke("validate", *overrides, "eval.published.target=null")
    assert code == 0 and "published for another model" not in out, out


@pytest.mark.parametrize(
    "overrides",
    [
        [S1, "model=qwen3_4b_instruct_2507_plain"],  # the same checkpoint, parsed otherwise
        ["+experiment=stage2_bfcl", "model=qwen3_8b"],  # stage 2 names no target
        [S1],
    ],
    ids=["the_same_hub_id", "no_target", "as_shipped"],
)
def test_a_published_target_of_the_runs_model_is_quiet(overrides: list[str], data: Path) -> None:
    code, out = _invoke("validate", *overrides)
    assert code == 0 and "published for another model" not in out, out


# ------------------------------------------------------------------ two experiments on one command line


def test_two_experiments_on_one_command_line_are_refused(data: Path) -> None:
    """They read as if they combined; the first was dropped whole with a warning (Hydra refuses it)."""
    args = [S1, "+experiment=stage2_bfcl"]
    block = refused_with_a_fix_that_validates(args, "experiment", "experiments do not combine")
    assert block["fix"].startswith(f"drop `{S1}`"), block


def test_one_experiment_typed_twice_or_a_key_set_twice_stays_a_warning(data: Path) -> None:
    for args in ([S1, S1], [S1, "seed=1", "seed=2"]):
        code, out = _invoke("validate", *args)
        assert code == 0 and "set twice on the command line" in out, out


# ------------------------------------------------------------ a key of another entry of a registry section


@pytest.mark.parametrize(
    ("overrides", "key", "owner"),
    [
        (
            ["+experiment=hub_env_grpo", "env.url=http://localhost:8000"],
            "env.url",
            "field of the env kind openenv only",
        ),
        ([S1, "reward.format_max=2"], "reward.format_max", "field of the reward kind toolrl only"),
        (
            ["+experiment=quickstart", "eval.engine.device=cuda"],
            "eval.engine.device",
            "field of the eval.engine kind hf only",
        ),
    ],
    ids=["openenv_url_under_verifiers", "toolrl_range_under_progress", "hf_device_under_sglang"],
)
def test_a_key_of_another_registry_entry_names_the_entries_that_have_it(
    overrides: list[str], key: str, owner: str, data: Path
) -> None:
    """`env.url` got "set it where it lives: eval.engine.url=…": another setting with the same last name.
    Now the kinds that have the key are named, and the group option choosing one where a group does."""
    block = refused_with_a_fix_that_validates(overrides, key, "unknown key")
    assert block["fix"].startswith(f"drop `{overrides[-1]}` ("), block
    assert owner in block["fix"] and "eval.engine.url" not in block["fix"], block
    assert not block["fix"].endswith(": "), block  # a section no group chooses names no option


def test_a_key_no_entry_has_still_lists_the_sections_keys(data: Path) -> None:
    block = refused_with_a_fix_that_validates(
        [S1, "env.max_step_limitt=5"], "env.max_step_limitt", "unknown key"
    )
    assert "max_step_limit" in block["fix"] and "field of the env" not in block["fix"], block


# ------------------------------------------------------------------------ a CPU request no node holds


def test_a_cpu_request_no_node_holds_is_warned(data: Path) -> None:
    args = [S1, "executor=slurm", "executor.cpus_per_task=100000"]
    code, out = _invoke("validate", *args)
    assert (
        code == 0 and "warning executor.cpus_per_task: executor.cpus_per_task is 100000, far above" in out
    ), out
    assert "fix: set executor.cpus_per_task=64" in out, out
    code, out = _invoke("validate", *args[:-1], "executor.cpus_per_task=64")
    assert code == 0 and "cpus_per_task" not in out, out
