"""A tenth round of kinds of mistakes no issue listed, each refused at the key that was changed, with a first
fix that validates, by a declaration rather than by a case of its own:

- a boolean typed for a number (`seed=true`, `eval.max_new_tokens=true`, a file's `temperature: off`, YAML
  1.1's false): pydantic's lax mode read it as 1 or 0, so the run took seed 1, one token per call or greedy
  sampling without a word, and `rollout_batch_size=true` was refused as a batch of 1 at another key
  (`global_batch_size`). Every number the validated config holds is compared with the value written
  (launch/config/schema_errors.numbers_misread, launch/config/machine_ints.py), a stage's overlays where
  they are validated;
- a whole number past int64 written as text (`num_rollout='9223372036854775808'`, an interpolation's text):
  round nine judged only a number written as one, so the quoted spelling was accepted.

Each case is judged as the mutation harness judges it (tests/support/preflight_mutations.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.in_tmp import in_tmp
from tests.support.mutation_kinds import BEYOND_INT64
from tests.support.preflight_mutations import YAML_TEXT, Mutation, judge
from tests.support.refusals import errors as _errors
from tests.support.refusals import fixed as _fixed

_in_tmp = in_tmp()  # relative paths of the configs resolve in one empty dir


CASES = [
    # a boolean for a number: accepted as 1 or 0
    Mutation("stage2_bfcl", "boolean for number", "seed", "true"),
    Mutation("stage2_bfcl", "boolean for number", "eval.max_new_tokens", "true"),
    Mutation("stage1_bfcl", "boolean for number", "eval.temperature", "false"),
    Mutation("toolrl_grpo", "boolean for number", "reward.format_max", "true"),
    Mutation("stage1_bfcl", "boolean for number", "eval.pass_k", "[true]"),
    # ... or refused as 1 at another key (`global_batch_size`, which nobody changed)
    Mutation("stage2_bfcl", "boolean for number", "stages.train.curriculum.rollout_batch_size", "true"),
    # ... in a user's file, YAML 1.1's words included
    Mutation("stage1_bfcl", YAML_TEXT, "seed", "yes"),
    Mutation("stage1_bfcl", YAML_TEXT, "eval.temperature", "off"),
    # past int64 as text: accepted
    Mutation("stage1_bfcl", "beyond int64", "stages.train.curriculum.num_rollout", f"'{BEYOND_INT64}'"),
    Mutation("bfcl_debug", "beyond int64", "eval.concurrency", f"'{BEYOND_INT64}0'"),
]


@pytest.mark.parametrize("mutation", CASES, ids=[str(m) for m in CASES])
def test_refused_at_the_key_changed_with_a_fix_that_validates(mutation: Mutation) -> None:
    verdict = judge(mutation)
    assert verdict.outcome == "refused, fix validates", verdict.detail


def test_a_boolean_for_a_number_is_named_as_one() -> None:
    (error,) = _errors(["+experiment=stage2_bfcl", "stages.train.curriculum.rollout_batch_size=true"])
    assert error.key == "stages.train.curriculum.rollout_batch_size"  # was global_batch_size's refusal
    assert "true is a boolean, which would be read as 1" in error.message
    assert error.fix.startswith("set stages.train.curriculum.rollout_batch_size=32 (its value without")


@pytest.mark.parametrize(
    "override",
    [
        "+stages.train.hardware.max_tokens_per_gpu=true",
        "+stages.eval.eval.temperature=false",
        "+stages.eval.eval.max_new_tokens=true",
    ],
)
def test_a_boolean_for_a_number_in_a_stages_overlay_is_refused_where_the_overlay_is_merged(
    override: str,
) -> None:
    args = ["+experiment=stage2_bfcl", override]
    (error, *_) = _errors(args)  # was accepted as 1 or 0
    assert error.key == override.partition("=")[0].lstrip("+") and "is a boolean" in error.message
    assert _errors(_fixed(args, error)) == []


def test_an_interpolation_into_a_number_past_int64_is_refused() -> None:
    args = [
        "+experiment=stage2_bfcl",
        "stages.train.curriculum.num_rollout=${hardware.gpus_per_node}" + "0" * 20,
    ]
    (error,) = _errors(args)
    assert error.key == "stages.train.curriculum.num_rollout" and "64-bit" in error.message
    assert _errors(_fixed(args, error)) == []


@pytest.mark.parametrize(
    "overrides",
    [
        # a field that takes a boolean keeps it, and a number written as one is not judged
        ["+experiment=stage2_bfcl", "hardware.dynamic_batch=true", "seed=1"],
        # a number in quotes is read as that number
        ["+experiment=stage2_bfcl", "seed='7'", "stages.train.curriculum.num_rollout='1_000'"],
        # a boolean in a stage's overlay for a field that takes one
        ["+experiment=stage2_bfcl", "+stages.train.hardware.sequence_parallel=true"],
    ],
)
def test_booleans_where_booleans_go_and_numbers_as_text_are_accepted(overrides: list[str]) -> None:
    assert _errors(overrides) == []


# Property: any number of a shipped experiment (a root field, a section's, a stage's curriculum) given a
# boolean is refused at it with a fix that validates.
_NUMBERS = [
    ("stage1_bfcl", "seed"),
    ("stage1_bfcl", "eval.top_p"),
    ("stage1_bfcl", "eval.concurrency"),
    ("stage1_bfcl", "hardware.sglang_mem_fraction"),
    ("stage2_bfcl", "stages.train.curriculum.optimizer.lr"),
    ("stage2_bfcl", "stages.train.curriculum.n_samples_per_prompt"),
    ("retool", "env.max_turns"),
    ("tau2_pipeline", "env.user.temperature"),
    ("toolrl_grpo", "reward.correctness_min"),
]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=st.sampled_from(_NUMBERS), value=st.sampled_from(["true", "false", "True", "FALSE"]))
def test_any_number_given_a_boolean_is_refused_at_it(target: tuple[str, str], value: str) -> None:
    experiment, key = target
    verdict = judge(Mutation(experiment, "boolean for number", key, value))
    assert verdict.outcome == "refused, fix validates", verdict.detail


# --- a local model directory a stage loads: one declaration (t3rl_core.fields.ModelDir), one probe.
# The HF eval engine's model_path only got "holds no config.json" as a warning: a config.json that is no
# JSON, a size that is no number, or a config.json given for its directory passed validate and failed the
# eval stage when it loaded the model, after the stages before it ran.
_MODEL_DIRS = [
    ("stage1_bfcl", "model.hf_checkpoint"),
    ("quickstart", "stages.eval_tiny.eval.engine.model_path"),
]
_BROKEN = {
    "not JSON": ('{"hidden_size": 2560,', "is not JSON"),
    "no object": ("[1, 2]", "not a JSON object"),
    "a size as text": ('{"num_hidden_layers": "36"}', 'num_hidden_layers "36"'),
    "a flag as a number": ('{"tie_word_embeddings": 1}', "tie_word_embeddings 1"),
}


def test_every_model_directory_field_declares_its_kind() -> None:
    from launch.checks.declared import markers
    from launch.config.schema import ModelConfig
    from t3rl_core.engines.config import HFEngineConfig
    from t3rl_core.fields import StrKind

    for model, name in ((ModelConfig, "hf_checkpoint"), (HFEngineConfig, "model_path")):
        field = model.model_fields[name]
        assert "model dir" in {m.name for m in markers(field.metadata, field.annotation, StrKind)}


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=st.sampled_from(_MODEL_DIRS), broken=st.sampled_from(sorted(_BROKEN)))
def test_any_model_directory_whose_config_json_does_not_read_is_refused(
    target: tuple[str, str], broken: str, tmp_path: Path
) -> None:
    experiment, key = target
    text, said = _BROKEN[broken]
    model = tmp_path / f"model-{broken.replace(' ', '_')}"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text(text)
    args = [f"+experiment={experiment}", f"{key}={model}"]
    (error, *_) = [e for e in _errors(args) if e.key == key]  # the engine's was accepted
    assert said in error.message, error.message
    assert _errors(_fixed(args, error)) == []


@pytest.mark.parametrize(("experiment", "key"), _MODEL_DIRS)
def test_a_config_json_given_for_its_model_directory_gets_the_directory(
    experiment: str, key: str, tmp_path: Path
) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"hidden_size": 8}')
    args = [f"+experiment={experiment}", f"{key}={model / 'config.json'}"]
    (error,) = [e for e in _errors(args) if e.key == key]  # the engine's got a warning only
    assert error.fix == f"set {key}={model} (the directory holding it)"


# --- a defaults list's entry of a user's experiment that names no option, or chooses a group again without
# `override`: Hydra names the primary config ("In 'config': Could not find 'model/nope'") or no file
# ("Multiple values for model"), so t3rl blamed config.yaml, or "(schema default)" with no fix, for a line
# of the user's own file (launch/config/defaults_order.entry_choosing).
_GROUPS = [("model", "qwen3_8b"), ("hardware", "h100x8"), ("reward", "binary"), ("tracking", "none")]


def _experiment_listing(config_dir: Path, entry: str) -> str:
    name = f"mine_{abs(hash(entry)):x}"
    (config_dir / "experiment").mkdir(parents=True, exist_ok=True)
    text = f"# @package _global_\ndefaults:\n  - stage1_bfcl\n  - {entry}\n  - _self_\n"
    (config_dir / "experiment" / f"{name}.yaml").write_text(text)
    return f"+experiment={name}"


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=st.sampled_from(_GROUPS), how=st.sampled_from(["upper", "title", "missing"]))
def test_an_override_entry_naming_no_option_is_blamed_on_its_file(
    target: tuple[str, str], how: str, tmp_path: Path
) -> None:
    group, option = target
    typed = {"upper": option.upper(), "title": option.title(), "missing": f"{option}_nosuch"}[how]
    dirs = (str(tmp_path / "conf"),)
    args = [_experiment_listing(tmp_path / "conf", f"override /{group}: {typed}")]
    (error,) = _errors(args, dirs)
    assert error.key == group and "experiment/mine_" in error.source, error  # was config.yaml
    assert "experiment/mine_" in error.fix, error.fix
    if how != "missing":  # the option in other letters: the override chooses it
        assert error.fix.startswith(f"set {group}={option} "), error.fix
        assert _errors(_fixed(args, error), dirs) == []


@pytest.mark.parametrize(("group", "option"), _GROUPS)
def test_a_group_chosen_again_without_override_is_blamed_on_its_file(
    group: str, option: str, tmp_path: Path
) -> None:
    dirs = (str(tmp_path / "conf"),)
    (error,) = _errors([_experiment_listing(tmp_path / "conf", f"/{group}: {option}")], dirs)
    assert error.key == "defaults" and "experiment/mine_" in error.source  # was "(schema default)"
    assert f"write `- override /{group}: {option}` for `- /{group}: {option}`" in error.fix


# --- a search entry's range that steps by 0 (`range(0, 10, 0)`): validate -m ended "t3rl failed
# unexpectedly: ValueError: range() arg 3 must not be zero" (launch/checks/search_space.py read every value
# of the range, as Python's range and Hydra's do).
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.integers(3, 8), length=st.integers(-3, 3).filter(bool))
def test_a_search_range_that_steps_by_zero_is_refused_with_a_step(start: int, length: int) -> None:
    from test_sweep_checks import SEARCH, _refused_then_fixed

    stop, step = start + length, 1 if length > 0 else -1
    _refused_then_fixed(
        [*SEARCH, f"hydra.sweeper.params.seed=range({start}, {stop}, 0)"],
        {"seed": f'"seed=range({start}, {stop}, {step})"'},
    )


# --- a search entry's bound typed as a boolean (`interval(0.0, true)`): Hydra reads it as 1.0, so the study
# searched [0, 1] without a word (the probe of each bound set the key to 1.0, a number).
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    entry=st.sampled_from(["interval(0.0, {b})", "tag(log, interval({b}, 1e-5))", "range(0, {b})"]),
    boolean=st.sampled_from(["true", "false", "True"]),
)
def test_a_search_bound_typed_as_a_boolean_is_refused(entry: str, boolean: str) -> None:
    from test_sweep_checks import SEARCH, _refused_then_fixed

    key = "stages.train.curriculum.algorithm.kl_loss_coef"
    typed = f"hydra.sweeper.params.{key}={entry.format(b=boolean)}"
    (error,) = _refused_then_fixed([*SEARCH, typed], {key: f"drop `{typed}`"})
    assert "a boolean, which Hydra reads as" in error["message"]


# --- an override interpolating what no resolver of t3rl reads: Hydra's own `${hydra:runtime.cwd}` and
# `${now:%Y}` (Hydra apps' idioms, which t3rl's composition does not register), a key above the root
# (`${..seed}`): the fix was prose ("fix the ${...} interpolation"); now the override dropped, or, for a
# path below the directory t3rl starts in, the relative path that means it (launch/config/composed.py).
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    key=st.sampled_from(["seed", "name", "paths.runs_dir", "eval.concurrency", "tracking.project"]),
    value=st.sampled_from(["${hydra:runtime.cwd}", "${now:%H}", "run-${hydra:job.name}", "${..seed}"]),
)
def test_an_interpolation_no_resolver_reads_is_refused_with_a_fix_that_validates(
    key: str, value: str
) -> None:
    verdict = judge(Mutation("stage2_bfcl", "unresolvable interpolation", key, value))
    assert verdict.outcome == "refused, fix validates", verdict.detail


def test_a_path_below_hydras_cwd_is_fixed_as_the_relative_path() -> None:
    args = ["+experiment=stage2_bfcl", "paths.runs_dir=${hydra:runtime.cwd}/mine"]
    (error,) = _errors(args)
    assert error.fix.startswith("set paths.runs_dir=mine (a relative path is read from the directory"), error
    assert _errors(_fixed(args, error)) == []


# --- a key of a mapping YAML or Hydra reads as no text (`env_vars: {on: "1"}`, `{1: x}`, a section's `1:`):
# "Input should be a valid string (got True)" at the mapping, with the fix `+hardware.env_vars.1='True'` (an
# item of a list), or "Keys should be strings" with "see the field's comment".
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    where=st.sampled_from(["hardware.env_vars", "hardware", "model.chat.chat_template_kwargs"]),
    key=st.sampled_from(["on", "yes", "1", "true", "3.5"]),
)
def test_a_key_read_as_no_text_is_named_at_its_mapping_with_its_file(
    where: str, key: str, tmp_path: Path
) -> None:
    config_dir = tmp_path / "conf"
    (config_dir / "experiment").mkdir(parents=True, exist_ok=True)
    parts = where.split(".")
    lines = [f"{'  ' * depth}{part}:" for depth, part in enumerate(parts)]
    lines.append(f"{'  ' * len(parts)}{key}: '1'")
    header = "# @package _global_\ndefaults:\n  - stage1_bfcl\n  - _self_\n"
    (config_dir / "experiment" / "mine.yaml").write_text(header + "\n".join(lines) + "\n")
    errors = [e for e in _errors(["+experiment=mine"], (str(config_dir),)) if e.key == where]
    (error,) = errors  # was another key's words (a list item's fix), or "see the field's comment"
    assert "not as text" in error.message and "mine.yaml" in error.source, error
    assert error.fix.startswith("in ") and "quote the key" in error.fix, error.fix


@pytest.mark.parametrize("where", ["hardware.env_vars", "hardware", "model.chat.chat_template_kwargs"])
@pytest.mark.parametrize("key", ["~", "null", "Null"])
def test_a_null_key_is_named_at_its_mapping_with_its_file(where: str, key: str, tmp_path: Path) -> None:
    config_dir = tmp_path / "conf"
    (config_dir / "experiment").mkdir(parents=True)
    parts = where.split(".")
    lines = [f"{'  ' * depth}{part}:" for depth, part in enumerate(parts)]
    lines.append(f"{'  ' * len(parts)}{key}: '1'")
    header = "# @package _global_\ndefaults:\n  - stage1_bfcl\n  - _self_\n"
    (config_dir / "experiment" / "mine.yaml").write_text(header + "\n".join(lines) + "\n")
    (error,) = _errors(["+experiment=mine"], (str(config_dir),))
    # was "error NoneType: Incompatible key type 'NoneType'", set in "(schema default)", no fix
    assert error.key == where and "is null" in error.message and "mine.yaml" in error.source, error
    assert error.fix.startswith("in ") and "mine.yaml" in error.fix
