"""A fourth round of kinds of mistakes no issue listed, each refused (or, where only suspicious, warned
about) by a declaration it violates:

- a value a config file wrote that YAML 1.1 (Hydra's loader) reads otherwise than it is written: a SLURM
  time limit `12:00:00` became 43200 minutes, `seed: 0123` the octal 83, an env var `off` a boolean;
- limits on one count out of order: an episode's response cap at or below one call's tokens, or at or
  above the episode's whole-context cap or the model's context (`launch/checks/rules/budgets.py`);
- an SFT stage's policy-gradient settings, which nothing reads (`ReadWhen` on `mode`);
- Adam's betas out of the order its updates need (β1 < √β2), as when typed in each other's places;
- a timeout typed in milliseconds (`Seconds` declares a usual ceiling of a day, with a scale of 1000);
- a reward whose settings leave it one value for every episode (`RewardConfig.constant()`);
- an eval file that is the training file by another name (relative, `./`, a symlink): ToolRL's split
  parts are real paths.

Each refusal names the key, where it was set (the file, or the override) and a first fix that validates
when applied; each warning's first fix clears it; the valid settings next to them are accepted. The
cases share the first round's working directory and composition cache (a module-scoped fixture)."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest
import test_preflight_unlisted_kinds as first_round
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from test_preflight import _invoke
from test_preflight_slime_kinds import refused_with_a_fix_that_validates

from launch.checks.resolve import resolve
from launch.config import yaml_readings
from tests.support.cli_app import fix_of, refused, validates, warned_with_a_fix_that_clears_it
from tests.support.fix_applier import apply_first_fix
from tests.support.preflight_mutations import judge, yaml_text_mutations

S1 = "+experiment=stage1_bfcl"
RETOOL = "+experiment=retool"
C = "stages.train.curriculum"
SFT = "stages.sft.curriculum"

data = first_round.data

# ------------------------------------------------------------------------------ YAML 1.1 readings

# (id, the experiment file's own lines below `# @package _global_` and its defaults, key, message, fix)
MISREAD = [
    (
        "slurm_time_limit_read_as_base_60",
        "executor:\n  time_limit: 12:00:00\n",
        "executor.time_limit",
        "`12:00:00` written unquoted is the base-60 number 43200",
        "set executor.time_limit='12:00:00' (quote it in the file)",
    ),
    (
        "seed_read_as_octal",
        "seed: 0123\n",
        "seed",
        "`0123` written unquoted is the octal number 83 to Hydra's YAML 1.1 loader, not the number 123",
        "set seed=123 (write it as a plain decimal in the file)",
    ),
    (
        "batch_read_as_octal",
        "stages:\n  train:\n    curriculum:\n      rollout_batch_size: 032\n",
        f"{C}.rollout_batch_size",
        "octal number 26",
        f"set {C}.rollout_batch_size=32",
    ),
    (
        "env_var_word_read_as_boolean",
        "hardware:\n  env_vars:\n    NCCL_DEBUG: off\n",
        "hardware.env_vars.NCCL_DEBUG",
        "`off` written unquoted is a boolean false",
        "set hardware.env_vars.NCCL_DEBUG=off (quote it in the file)",
    ),
    (
        "env_var_word_in_a_flow_mapping",
        "hardware:\n  env_vars: {NCCL_DEBUG: off, NCCL_P2P_DISABLE: '1'}\n",
        "hardware.env_vars.NCCL_DEBUG",
        "`off` written unquoted is a boolean false",
        "set hardware.env_vars.NCCL_DEBUG=off",
    ),
]
# (id, lines): the same values written as meant
WRITTEN_AS_MEANT = [
    ("slurm_time_limit_quoted", 'executor:\n  time_limit: "12:00:00"\n'),
    ("seed_without_a_leading_zero", "seed: 123\n"),
    ("a_leading_zero_that_reads_the_same", "seed: 07\n"),
    ("env_var_word_quoted", "hardware:\n  env_vars:\n    NCCL_DEBUG: 'off'\n"),
    (
        "a_boolean_word_where_a_boolean_is_meant",
        "stages:\n  train:\n    curriculum:\n      algorithm:\n        use_kl_loss: yes\n",
    ),
]
# on SLURM, whose executor has a time limit
_HEADER = "# @package _global_\ndefaults:\n  - stage1_bfcl\n  - override /executor: slurm\n  - _self_\n"


def _experiment(root: Path, name: str, lines: str) -> list[str]:
    """`--config-dir` with an experiment `name` built on stage1_bfcl under SLURM, and the overrides
    choosing it."""
    (root / "experiment").mkdir(parents=True, exist_ok=True)
    (root / "experiment" / f"{name}.yaml").write_text(_HEADER + lines)
    return ["--config-dir", str(root), f"+experiment={name}"]


@pytest.mark.parametrize(
    ("lines", "key", "message", "fix"), [c[1:] for c in MISREAD], ids=[c[0] for c in MISREAD]
)
def test_a_value_yaml_reads_otherwise_than_written_is_refused_with_the_text_as_fix(
    lines: str, key: str, message: str, fix: str, data: Path, tmp_path: Path
) -> None:
    args = _experiment(tmp_path, "mine", lines)
    out = refused(args)
    assert re.search(rf"^error {re.escape(key)}: .*{re.escape(message)}", out, re.M), out
    assert f"set in: {tmp_path / 'experiment' / 'mine.yaml'}" in out, out
    assert fix_of(out).startswith(fix), out
    fixed = apply_first_fix(args, {"message": message, "source": "", "fix": fix_of(out)})
    assert fixed is not None
    validates(fixed)


@pytest.mark.parametrize("lines", [c[1] for c in WRITTEN_AS_MEANT], ids=[c[0] for c in WRITTEN_AS_MEANT])
def test_the_same_value_written_as_meant_is_accepted(lines: str, data: Path, tmp_path: Path) -> None:
    validates(_experiment(tmp_path, "mine", lines))


_WORDS = st.sampled_from(["yes", "No", "ON", "off", "true", "null", "abc", "0x1F", "1e3", "1_000"])
_CLOCK = st.tuples(st.integers(0, 99), st.integers(0, 59), st.integers(0, 59)).map(
    lambda t: f"{t[0]}:{t[1]:02d}:{t[2]:02d}"
)
_DIGITS = st.text("0123456789", min_size=1, max_size=5)


def _human(text: str) -> object:
    """What a person (and YAML 1.2's core schema) reads in a plain scalar of these shapes."""
    if re.fullmatch(r"[0-9]+", text):
        return int(text)
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return None if text == "null" else text


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(_WORDS, _CLOCK, _DIGITS, _DIGITS.map(lambda d: "0" + d)))
def test_a_scalar_is_flagged_exactly_when_yaml_reads_it_otherwise_than_a_person(text: str) -> None:
    """Property: the scan of a file flags a plain scalar exactly when PyYAML's YAML 1.1 value differs from
    the value a person reads in it. A text YAML keeps as written (`08`) is not flagged: a field taking a
    number converts it as a person reads it; hex and underscores read the same to both."""
    with tempfile.TemporaryDirectory() as root:
        file = Path(root) / "f.yaml"
        file.write_text(f"a:\n  b: {text}\n")
        found = yaml_readings._of_file.__wrapped__(str(file))
    read = yaml.safe_load(text)
    differs = read not in (_human(text), text) and not re.fullmatch(r"0x[0-9A-Fa-f]+|1_000", text)
    assert ("a.b" in found) == differs, (text, read, found)


# ------------------------------------------------- limits on one count, settings that do nothing

# (id, overrides, key warned about, a fragment of the message)
WARNED = [
    (
        "response_cap_below_one_call",
        [S1, f"{C}.max_response_len=5000"],
        f"{C}.max_response_len",
        "the first long call ends the episode, however many calls its task needs",
    ),
    (
        "per_call_limit_raised_above_the_response_cap",
        [S1, f"{C}.max_response_len=20000", f"{C}.rollout_max_response_len=25000"],
        f"{C}.rollout_max_response_len",
        "rollout_max_response_len does nothing",
    ),
    (
        "response_cap_above_the_context_cap",
        [S1, f"{C}.max_context_len=30000", f"{C}.max_response_len=40000"],
        f"{C}.max_response_len",
        f"is at or above {C}.max_context_len 30000",
    ),
    (
        "response_cap_above_the_models_context",
        [S1, "model=qwen3_4b", f"{C}.max_response_len=50000"],
        f"{C}.max_response_len",
        "is at or above model.context_length 40960",
    ),
    (
        "rl_setting_of_an_sft_stage",
        [RETOOL, f"{SFT}.algorithm.use_kl_loss=true"],
        f"{SFT}.algorithm.use_kl_loss",
        f"{SFT}.mode is sft: an SFT stage samples no groups and computes no advantage",
    ),
    (
        "data_balancing_of_an_sft_stage",
        [RETOOL, f"{SFT}.balance_data=true"],
        f"{SFT}.balance_data",
        f"{SFT}.mode is sft",
    ),
    (
        "a_timeout_typed_in_milliseconds",
        [S1, "eval.engine.timeout_s=600000"],
        "eval.engine.timeout_s",
        "is it a typo for 600?",
    ),
    (
        "adam_betas_typed_in_each_others_places",
        [S1, f"{C}.optimizer.adam_beta1=0.999", f"{C}.optimizer.adam_beta2=0.9"],
        f"{C}.optimizer.adam_beta2",
        "are the two betas swapped?",
    ),
    (
        "adam_beta2_lowered_past_beta1_squared",
        [S1, f"{C}.optimizer.adam_beta2=0.8"],
        f"{C}.optimizer.adam_beta2",
        "adam_beta1 0.9 is not below √adam_beta2 = 0.894",
    ),
    (
        "mismatch_metrics_of_an_sft_stage",
        [RETOOL, f"{SFT}.algorithm.mismatch_metrics=true"],
        f"{SFT}.algorithm.mismatch_metrics",
        f"{SFT}.mode is sft",
    ),
]
NOT_WARNED = [
    ("response_cap_above_one_call", [S1, f"{C}.max_response_len=30000"]),
    (
        "response_cap_inside_the_context_cap",
        [S1, f"{C}.max_context_len=30000", f"{C}.max_response_len=20000"],
    ),
    ("rl_setting_of_an_rl_stage", [RETOOL, "stages.rl.curriculum.algorithm.use_kl_loss=true"]),
    ("a_timeout_of_two_hours", [S1, "eval.engine.timeout_s=7200"]),
    ("adam_betas_of_an_llm_recipe", [S1, f"{C}.optimizer.adam_beta2=0.95"]),
    ("adam_betas_of_sgd_not_judged", [S1, f"{C}.optimizer.name=sgd"]),
]


@pytest.mark.parametrize(("overrides", "key", "message"), [c[1:] for c in WARNED], ids=[c[0] for c in WARNED])
def test_a_setting_that_does_not_do_what_it_says_is_warned_and_its_fix_clears_it(
    overrides: list[str], key: str, message: str, data: Path
) -> None:
    warned_with_a_fix_that_clears_it(overrides, key, message)


@pytest.mark.parametrize("overrides", [c[1] for c in NOT_WARNED], ids=[c[0] for c in NOT_WARNED])
def test_the_setting_as_meant_is_not_warned(overrides: list[str], data: Path) -> None:
    code, out = _invoke("validate", *overrides)
    assert code == 0, out
    assert "does nothing" not in out and " is set, but " not in out and "is it a typo" not in out, out
    assert "adam_beta" not in out, out


# ------------------------------------------------------------------------- one file by another name

TOOLRL = "+experiment=toolrl_grpo"
TEST_FILE = "env.data.splits.toolrl_test"


@pytest.fixture
def train_file(data: Path) -> str:
    """ToolRL's training parquet as the shipped experiment names it (absolute)."""
    return resolve([TOOLRL]).config["env"]["data"]["splits"]["toolrl_train"]


@pytest.mark.parametrize("name", ["relative", "dotted", "symlink"])
def test_an_eval_file_that_is_the_training_file_by_another_name_is_refused(
    name: str, train_file: str, tmp_path: Path
) -> None:
    """ToolRL's splits are files: the test split given the training parquet by a relative path, through
    `./`, or through a symlink scored the training tasks, since the files were compared by name."""
    link = tmp_path / "link.parquet"
    link.symlink_to(train_file)
    other = {
        "relative": os.path.relpath(train_file),
        "dotted": str(Path(train_file).parent / "." / Path(train_file).name),
        "symlink": str(link),
    }[name]
    block = refused_with_a_fix_that_validates([TOOLRL, f"{TEST_FILE}={other}"], TEST_FILE, "memorised tasks")
    assert f"override `{TEST_FILE}={other}`" in block["source"], block


def test_an_eval_file_of_its_own_is_accepted(data: Path, tmp_path: Path) -> None:
    validates([TOOLRL, f"{TEST_FILE}={tmp_path / 'held_out.parquet'}"])


# ------------------------------------------------------------------------------ a constant reward

RANGES = ("format_max", "format_min", "correctness_max", "correctness_min")
# (id, overrides, key named, a fragment of the message)
CONSTANT = [
    (
        "every_range_of_the_reward_a_single_point",
        [
            TOOLRL,
            *(f"reward.{f}=0" for f in ("format_max", "format_min", "correctness_max", "correctness_min")),
        ],
        "reward.correctness_min",
        "gives every episode 0 (format_max, format_min, correctness_max, correctness_min leave it no other",
    ),
    (
        "a_stages_reward_made_constant_by_the_root_key_typed_last",
        [
            TOOLRL,
            "+stages.train.reward.correctness_max=1",
            "+stages.train.reward.correctness_min=1",
            "reward.format_min=1",
        ],
        "reward.format_min",
        "the reward stage train scores with gives every episode 2",
    ),
]
VARYING = [
    (
        "a_constant_format_part_beside_a_correctness_range",
        [TOOLRL, "reward.format_max=0", "reward.format_min=0"],
    ),
    (
        "a_single_point_range_a_schedule_moves",
        [TOOLRL, *(f"reward.{f}=0" for f in ("format_max", "format_min")), "reward.schedule_reward=true"],
    ),
]


@pytest.mark.parametrize(
    ("overrides", "key", "message"), [c[1:] for c in CONSTANT], ids=[c[0] for c in CONSTANT]
)
def test_a_reward_that_gives_every_episode_one_value_is_refused(
    overrides: list[str], key: str, message: str, data: Path
) -> None:
    block = refused_with_a_fix_that_validates(overrides, key, message)
    assert f"override `{overrides[-1]}`" in block["source"], block


@pytest.mark.parametrize("overrides", [c[1] for c in VARYING], ids=[c[0] for c in VARYING])
def test_a_reward_that_can_vary_is_accepted(overrides: list[str], data: Path) -> None:
    validates(overrides)


# ------------------------------------------------------------------------------------ mutations


@pytest.mark.parametrize("experiment", ["stage1_bfcl", "toolrl_grpo"])
def test_every_integer_written_with_a_leading_zero_is_refused_with_its_decimal(experiment: str) -> None:
    """The harness's "yaml text" kind: each integer of the experiment, written into a user's file with
    a leading zero, is refused at its key, and its fix (the decimal) validates."""
    found = list(yaml_text_mutations(experiment))
    assert len(found) >= 3, found
    for mutation in found[::3]:
        assert judge(mutation).outcome == "refused, fix validates", mutation


def test_a_sections_name_set_to_the_name_it_has_renames_nothing(data: Path) -> None:
    """The harness's `env.name=not_a_choice` on ReTool got the fix `env.name=retool_python`, which was then
    refused as a rename that keeps the experiment's own env settings: the name it already had."""
    validates([RETOOL, "env.name=retool_python"])
