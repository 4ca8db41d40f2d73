"""An eighth round of kinds of mistakes no issue listed, and the leftovers of round seven's harness, each
refused (or left alone) by a declaration rather than by a case of its own:

- a key deleted or nulled that another rule's condition reads: `~env.data.think_tags` on bfcl_debug left
  the env's prompt without reasoning tags, and the forced reasoning parser was blamed
  (`model.parsers.reasoning_parser`, a key nobody changed); the prompt's tags take part in that rule's
  blame (launch/checks/rules/model.py), so the deletion is named and dropped. ReTool's
  `env.data.sft_source` deleted or nulled left the SFT split unprepared, blamed on the SFT stage's
  `train_split`: a split is left out by an env override when the env prepares it with the field as the
  files set it, not only at its schema default (launch/checks/rules/batch._left_out_by_override);
- a section given a scalar or a list (`model.parsers=5`, hub_env_grpo's `env.data=5`,
  `env.data=[1]`): refused at another file's interpolation of a key below it ("node is not a container"),
  or with the fix "add its keys with '+'" (which Hydra refuses again); now "must be a mapping" at the
  section, with the override dropped (launch/config/composed.py, launch/config/compose.py);
- a sweep's own tracking names (`tracking.group=<sweep>`, `tracking.run_name=<sweep>-pNN`) warned about as
  "set, but tracking.kind is none: no tracker reads it", though the user typed neither; and a
  `tracking.group` the user typed was replaced by the sweep's with a "set twice" warning. The sweep says
  which overrides are its own (`Point.added`, `launch.config.command_line.ADDED_BY_LAUNCHER`), and a name
  typed is kept;
- a tokenizer given as a hub id of a sibling line (`model.chat.tokenizer=Qwen/Qwen2.5-7B-Instruct` on
  Qwen3): the families share their control tokens, so it was accepted, but Qwen2.5's tokenizer has no
  `<think>`/`</think>`, which a Qwen3 model writes as one token each. A tokenizer's family must declare
  every control and tag token of the model's family (`Family.special_tokens`, `Family.tag_tokens`).

Each case is judged as the mutation harness judges it (tests/support/preflight_mutations.py): refused at
the mutated key with a first fix that validates when applied; the valid setting next to each is accepted.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError, Problem
from launch.run.sweep import check_points, expand_points
from tests.support.fix_applier import apply_first_fix
from tests.support.in_tmp import in_tmp
from tests.support.mutation_kinds import DELETED
from tests.support.preflight_mutations import Mutation, judge

_in_tmp = in_tmp()  # relative paths of the configs resolve in one empty dir


LEFTOVERS = [
    Mutation("bfcl_debug", "deleted", "env.data.think_tags", DELETED),
    Mutation("bfcl_debug", "null", "env.data.think_tags", "null"),
    Mutation("retool", "deleted", "env.data.sft_source", DELETED),
    Mutation("retool", "null", "env.data.sft_source", "null"),
    Mutation("bfcl_debug", "scalar for section", "model.parsers", "5"),
    Mutation("hub_env_grpo", "scalar for section", "env.data", "5"),
    Mutation("bfcl_debug", "list for section", "env.data", "[1]"),
    Mutation("retool", "list for section", "model.parsers", "[qwen3]"),
    # a config group given a list of no option of it: the fix named the list's first item, no option
    Mutation("bfcl_debug", "list for section", "tracking", "[0]"),
]


@pytest.mark.parametrize("mutation", LEFTOVERS, ids=[str(m) for m in LEFTOVERS])
def test_refused_at_the_key_changed_with_a_fix_that_validates(mutation: Mutation) -> None:
    verdict = judge(mutation)
    assert verdict.outcome == "refused, fix validates", verdict.detail


def _problems(*overrides: str) -> list:
    try:
        resolved = resolve(list(overrides))
    except ConfigError as error:
        return error.problems
    return resolved.warnings


def test_the_deleted_prompt_tags_are_named_with_the_deletion() -> None:
    errors = [p for p in _problems("+experiment=bfcl_debug", "~env.data.think_tags") if p.severity == "error"]
    assert [p.key for p in errors] == ["env.data.think_tags"]
    assert errors[0].source == "override `~env.data.think_tags`"
    assert errors[0].fix == "drop `~env.data.think_tags`"


def test_a_section_given_a_number_says_it_is_a_mapping() -> None:
    errors = _problems("+experiment=bfcl_debug", "model.parsers=5")
    assert errors[0].key == "model.parsers"
    assert "must be a mapping" in errors[0].message
    assert errors[0].fix.startswith("drop `model.parsers=5`")


# The valid settings next to them: the prompt's tags given again, the parsers' own keys set, a Qwen3
# tokenizer of another size on a Qwen3 model and on a Qwen2.5 one (its tokens are a superset).
VALID = [
    ("bfcl_debug", ("env.data.think_tags=['<thinking>','</thinking>']",)),
    ("bfcl_debug", ("model.parsers.tool_call_parser=qwen25",)),
    ("stage1_bfcl", ("model.chat.tokenizer=Qwen/Qwen3-8B",)),
    ("toolrl_grpo", ("model.chat.tokenizer=Qwen/Qwen3-8B",)),
]


@pytest.mark.parametrize(("experiment", "overrides"), VALID, ids=[" ".join(o) for _, o in VALID])
def test_the_valid_setting_next_to_it_is_accepted(experiment: str, overrides: tuple[str, ...]) -> None:
    errors = [p for p in _problems(f"+experiment={experiment}", *overrides) if p.severity == "error"]
    assert errors == []


# A tokenizer of the sibling line that lacks the model family's tag tokens (Qwen3's <think>).
SIBLING_TOKENIZERS = [
    Mutation("stage1_bfcl", "tokenizer", "model.chat.tokenizer", "Qwen/Qwen2.5-7B-Instruct"),
    Mutation("bfcl_debug", "tokenizer", "model.chat.tokenizer", "Qwen/Qwen2.5-3B-Instruct"),
]


@pytest.mark.parametrize("mutation", SIBLING_TOKENIZERS, ids=[str(m) for m in SIBLING_TOKENIZERS])
def test_a_tokenizer_without_the_families_tags_is_refused(mutation: Mutation) -> None:
    verdict = judge(mutation)
    assert verdict.outcome == "refused, fix validates", verdict.detail
    errors = [p for p in _problems(*mutation.overrides) if p.severity == "error"]
    assert "<think>" in errors[0].message


def _sweep_warnings(*overrides: str) -> list:
    points = [p.tracked("sweep-x") for p in expand_points(list(overrides))]
    checks = check_points(points, lambda line: resolve(list(line)))
    assert all(c.ok for c in checks), [c.problems for c in checks]
    return [w for c in checks for w in c.plan.warnings]


def test_a_sweeps_own_tracking_names_are_not_warned_as_typed() -> None:
    warned = {w.key for w in _sweep_warnings("+experiment=quickstart", "seed=1,2")}
    assert not warned & {"tracking.group", "tracking.run_name"}, warned


def test_a_tracking_group_typed_for_a_sweep_is_the_users_and_judged() -> None:
    warnings = _sweep_warnings("+experiment=quickstart", "seed=1,2", "tracking.group=mine")
    groups = [w for w in warnings if w.key == "tracking.group"]
    # typed under tracking.kind: none, so warned about as unread (once per point), and never "set twice"
    assert len(groups) == 2 and all("no tracker reads it" in w.message for w in groups), groups
    points = [p.tracked("sweep-x") for p in expand_points(["+experiment=quickstart", "seed=1,2"])]
    assert all("tracking.group=sweep-x" in p.overrides for p in points)
    typed = [
        p.tracked("sweep-x")
        for p in expand_points(["+experiment=quickstart", "tracking.group=g", "seed=1,2"])
    ]
    assert all(
        "tracking.group=sweep-x" not in p.overrides
        and p.added == ("tracking.run_name=" + p.run_name("sweep-x"),)
        for p in typed
    )


# Property: any section of a shipped experiment given a number or a one-item list is refused at that
# section, with a fix that drops the override and validates (the harness's judgement).
_SECTIONS = ["model.parsers", "env.data", "model.chat", "eval.engine", "tracking", "model.architecture"]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    experiment=st.sampled_from(["bfcl_debug", "hub_env_grpo", "retool"]),
    section=st.sampled_from(_SECTIONS),
    value=st.one_of(st.integers(-5, 99).map(str), st.integers(0, 9).map(lambda n: f"[{n}]")),
)
def test_any_section_given_a_scalar_or_list_is_refused_at_it(
    experiment: str, section: str, value: str
) -> None:
    verdict = judge(Mutation(experiment, "scalar for section", section, value))
    assert verdict.outcome == "refused, fix validates", verdict.detail


# The reference engine (the scripted gold policy) on an env that keeps no gold actions: the eval started,
# prepared its data, built the world and failed its first episode ("no gold action here"). Declared:
# `EnvConfig.gold_missing` (OpenEnv: every task; verifiers: a row without an answer).
def test_an_eval_stage_of_the_reference_engine_on_openenv_is_refused_with_a_fix_that_validates() -> None:
    args = ["+experiment=hub_env_grpo", "env=openenv", "+stages.eval.eval.engine={name: reference}"]
    errors = [p for p in _problems(*args) if p.severity == "error"]
    assert errors and errors[0].key == "stages.eval.eval.engine.name", errors
    assert "no gold actions" in errors[0].message
    fixed = apply_first_fix(
        args, {"message": errors[0].message, "source": errors[0].source, "fix": errors[0].fix}
    )
    assert fixed is not None
    assert [p for p in _problems(*fixed) if p.severity == "error"] == []


def _text(output: str) -> str:
    """A CLI's output as one line of words (rich draws its error in a box, wrapped)."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", output).split())


def test_the_gold_each_env_declares() -> None:
    from t3rl_core.envs.openenv.config import OpenEnvEnvConfig
    from t3rl_core.envs.verifiers.config import VerifiersEnvConfig

    assert OpenEnvEnvConfig.model_construct().gold_missing(None) is not None
    verifiers = VerifiersEnvConfig.model_construct(id="my_env")
    assert verifiers.gold_missing(None) is None  # it depends on the rows
    assert verifiers.gold_missing({"label": "42"}) is None
    assert "no answer" in (verifiers.gold_missing({"label": None}) or "")


def test_t3rl_eval_of_the_reference_engine_on_openenv_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from launch.cli.app import app

    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["eval", "+experiment=hub_env_grpo", "env=openenv", "--engine", "reference", "--out", str(out)]
    )
    assert result.exit_code == 2, result.output
    assert "no gold actions" in _text(result.output)
    assert not out.exists()


def test_t3rl_eval_of_the_reference_engine_on_rows_without_an_answer_exits_2(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from launch.cli.app import app

    data = tmp_path / "verifiers_eval.jsonl"
    row = {"prompt": [{"role": "user", "content": "2+2?"}], "metadata": {"data_source": "x", "index": 0}}
    data.write_text(json.dumps({**row, "label": None}) + "\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["eval", "+experiment=hub_env_grpo", "--engine", "reference", "--data", str(data), "--out", str(out)],
    )
    assert result.exit_code == 2, result.output
    assert "no answer" in _text(result.output)
    assert not out.exists()


# A number typed for a list of numbers (`eval.pass_k=4`, pass@4 meant): the fix was the key's old value,
# `[1]`, which drops what was typed; `[4]` alone is refused in turn (pass@4 needs four samples per task).
# The fix that reads what was typed is tried and completed with what it needs (launch/checks/fix_closure.py).
@pytest.mark.parametrize("experiment", ["retool", "stage1_bfcl"])
def test_a_number_typed_for_a_list_of_numbers_is_read_as_meant_with_what_it_needs(experiment: str) -> None:
    args = [f"+experiment={experiment}", "eval.pass_k=4"]
    errors = [p for p in _problems(*args) if p.severity == "error"]
    assert [p.key for p in errors] == ["eval.pass_k"]
    assert errors[0].fix.startswith("set eval.pass_k=[4] eval.samples=4 eval.temperature=1.0 ("), errors[
        0
    ].fix
    fixed = apply_first_fix(
        args, {"message": errors[0].message, "source": errors[0].source, "fix": errors[0].fix}
    )
    assert fixed is not None
    assert [p for p in _problems(*fixed) if p.severity == "error"] == []
    verdict = judge(Mutation(experiment, "only item", "eval.pass_k", "4"))
    assert verdict.outcome == "refused, fix validates", verdict.detail


# A key of another engine typed under a stage's eval overlay: stage1_bfcl's eval stage reads the root SGLang
# engine, so an HF engine's `model_path` there was "unknown key 'engine' under 'stages.eval.eval'" with the
# section's keys listed (engine among them); quickstart's eval_tiny runs the HF engine, and an SGLang `url`
# typed there got "set it where it lives: eval.engine.url=…" (the root engine, which that stage does not
# read); eval_reference's `device` got eval_tiny's key, another stage's. The registry says which engines
# hold the field (launch/config/other_entries.py reads a stage's overlay as the section the stage runs).
STAGE_ENGINE_KEYS = [
    (Mutation("stage1_bfcl", "another entry", "stages.eval.eval.engine.model_path", "/x"), "hf"),
    (
        Mutation("quickstart", "another entry", "stages.eval_tiny.eval.engine.url", "http://localhost:1234"),
        "sglang",
    ),
    (Mutation("quickstart", "another entry", "stages.eval_reference.eval.engine.device", "cpu"), "hf"),
]


@pytest.mark.parametrize(("mutation", "owner"), STAGE_ENGINE_KEYS, ids=[str(m) for m, _ in STAGE_ENGINE_KEYS])
def test_a_key_of_another_engine_under_a_stage_names_the_engine_that_has_it(
    mutation: Mutation, owner: str
) -> None:
    verdict = judge(mutation)
    assert verdict.outcome == "refused, fix validates", verdict.detail
    error = _problems(*mutation.overrides)[0]
    assert error.key == mutation.key
    # wave seven names the engine as a kind of the section the stage runs (`… eval.engine kind sglang only`)
    named = re.search(rf"field of the (?:engine|[\w.]*engine kinds?) {owner}\b", error.fix)
    assert named and "where it lives" not in error.fix, error.fix


def test_a_completed_fix_never_sets_its_own_key_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal of the fix at its own key whose fix resets that key is no completion: `set k=[4] k=[1]`
    would validate and undo what was typed; the fix's other alternative comes first instead."""
    from launch.checks import fix_closure
    from launch.config.schema_errors import AS_TYPED

    tried: list[list[str]] = []

    def errors(overrides: list[str], config_dirs: object) -> list[Problem]:
        tried.append(overrides)
        reset = Problem("eval.pass_k", "refused", "override `eval.pass_k=[4]`", "set eval.pass_k=[1]")
        return [reset] if len(tried) == 1 else []

    typed = Problem(
        "eval.pass_k",
        "Input should be a valid list (got 4)",
        "override `eval.pass_k=4`",
        f"set eval.pass_k=[4] ({AS_TYPED}: a list of it alone); "
        "or set eval.pass_k=[1] (its value without it)",
    )
    fixed = fix_closure.completed([typed], ["+experiment=retool", "eval.pass_k=4"], [], errors)
    assert fixed[0].fix.startswith("set eval.pass_k=[1] (its value without it)"), fixed[0].fix
