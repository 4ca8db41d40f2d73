"""A broad leaf hunt (tests/support/leaf_hunt.py): every kind of leaf the shipped experiments hold (each
string kind, choices, whole and real numbers, booleans, lists of text) meets every kind of adversarial value
of its type: empty, blank, a line break, a NUL, a tab, a leading '-', '=' and a space, an invisible
character, 10,000 characters, '~', '..', a trailing '/', relative and absolute paths; 0, -1, a float for
an int, 1e308, a boolean; -inf, nan, -0.0, a subnormal; 1, 0, 2, 'yes' for a boolean; a list item empty,
a flag or with a line break. Each must be refused at its key with where it was set and a first fix that
validates, or accepted with a plan whose argv slime's parser reads as typed and a config that holds the
value as typed. The leaves come from the experiments' validated configs and the schema, so a field of a
new kind is hunted here without a line of its own; `python -m tests.support.leaf_hunt` hunts every field.

The holes it found, each failing before its fix:
- a path (or chat template) longer than any file system takes (10,000 characters): `os.stat` raised
  ENAMETOOLONG out of the pre-flight's probes (model.hf_checkpoint, model.chat.tokenizer,
  model.chat.chat_template, paths.*, ReTool's env.data.source); every path kind now refuses a name over 255
  bytes or a path over 4095 (t3rl_core.fields);
- a value of model.architecture.extra_args that no flag takes (`['']`, a line of text) was blamed on the
  conversion stage (`stages.to_torch_dist`), a key nobody typed; it is blamed on extra_args with the list
  without it as fix (launch/plan/slime_options.py);
- a fixed-length list typed short (`env.data.think_tags=[x]`, a pair): the fix set its missing item
  (`think_tags.1=…`), which Hydra cannot set on a list of one; the undo is the whole list
  (launch/checks/undo.py); typed long, its message called it a sweep (`takes one value`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_app import invoke
from tests.support.in_tmp import in_tmp
from tests.support.leaf_hunt import CLASSES, Case, cases, judge, sample
from tests.support.once_per_run import once_per_run
from tests.support.refusals import errors, fixed

# Relative paths typed ('x', '../x') resolve in one empty dir, where nothing of the checkout is; each
# command line is composed once: a cache only fills.
_in_tmp = in_tmp(T3RL_NO_CACHE="1")


# Drawn once for the run, read back by every other xdist worker as it collects.
SAMPLE = once_per_run("leaf-hunt-sample", sample)


@pytest.mark.parametrize("case", SAMPLE, ids=[str(c)[:120] for c in SAMPLE])
def test_an_adversarial_value_is_refused_at_its_key_or_planned_as_typed(case: Case) -> None:
    verdict = judge(case)
    assert verdict.kept, f"{verdict.outcome}: {verdict.detail}"


def test_the_sample_meets_every_kind_of_leaf_with_every_class_of_value() -> None:
    by_leaf: dict[str, set[str]] = {}
    for case in SAMPLE:
        by_leaf.setdefault(case.leaf, set()).add(CLASSES.get(case.kind, case.kind))
    # the kinds the shipped experiments hold today (a new one joins by itself)
    assert {"path", "model dir", "chat template", "label", "name", "choice", "int", "float", "bool"} <= set(
        by_leaf
    )
    text = {"empty", "control", "leading dash", "equals and space", "invisible", "long", "path shape"}
    assert by_leaf["path"] == by_leaf["label"] == text
    assert by_leaf["float"] == {"non-finite", "negative zero", "huge", "subnormal", "boolean for number"}
    assert by_leaf["int"] == {"zero", "negative", "float for int", "huge", "boolean for number"}
    # and every kind of value is in the sample somewhere (one of a class per kind of leaf, in turn)
    assert {case.kind for case in SAMPLE} == {case.kind for case in cases()}


# ------------------------------------------------------------------------------ holes, each fixed

LONG_NAME, LONG_PATH = "a" * 256, "/".join(["a" * 200] * 21)  # past NAME_MAX; past PATH_MAX


@pytest.mark.parametrize(
    ("experiment", "key"),
    [
        ("bfcl_debug", "model.hf_checkpoint"),  # model dir
        ("bfcl_debug", "model.chat.tokenizer"),  # model reference
        ("bfcl_debug", "model.chat.chat_template"),  # chat template
        ("bfcl_debug", "paths.checkpoints_dir"),  # path
        ("bfcl_debug", "paths.cache_dir"),
        ("retool", "env.data.source"),
        ("retool", "env.data.sft_source"),
    ],
)
@pytest.mark.parametrize("value", [LONG_NAME, LONG_PATH], ids=["name", "path"])
def test_a_path_no_file_system_holds_is_refused_at_its_key(
    tmp_path: Path, experiment: str, key: str, value: str
) -> None:
    """Was: OSError [Errno 36] File name too long out of the probes (a traceback, exit 1)."""
    argv = [f"+experiment={experiment}", f"{key}='{value}'"]
    result = invoke(["plan", *argv, "--out", str(tmp_path / "p")])
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "p").exists()
    problems = [p for p in errors(argv) if p.key == key]
    assert problems and "no file system takes" in problems[0].message, problems
    assert problems[0].source == f"override `{key}='{value}'`"
    assert not [p for p in errors(fixed(argv, problems[0])) if p.key == key]


@pytest.mark.parametrize("extra", [[""], ["a\nb"], ["--use-flash-attn", ""]])
def test_a_value_of_extra_args_no_flag_takes_is_blamed_on_extra_args(extra: list[str]) -> None:
    """Was: refused at `stages.to_torch_dist` (slime argv token 25 ''), a key nobody typed, with prose."""
    text = "[" + ",".join(f"'{token}'" for token in extra) + "]"
    argv = ["+experiment=retool", f"model.architecture.extra_args={text}"]
    problems = errors(argv)
    assert [p.key for p in problems] == ["model.architecture.extra_args"], problems
    assert errors(fixed(argv, problems[0])) == []


@pytest.mark.parametrize(
    ("experiment", "key"), [("bfcl_debug", "env.data.think_tags"), ("bfcl_debug", "model.parsers.think_tags")]
)
@pytest.mark.parametrize("typed", ["[x]", "['-x']", "[x,y,z]"])
def test_a_pair_typed_short_or_long_is_refused_with_the_whole_pair_as_fix(
    experiment: str, key: str, typed: str
) -> None:
    """Was (short): `set env.data.think_tags.1='</thinking>'`, which Hydra cannot set on a list of one;
    (long) 'takes one value; a run per value is a sweep'."""
    argv = [f"+experiment={experiment}", f"{key}={typed}"]
    problems = errors(argv)  # model.parsers' pair is also env.data's (an interpolation): refused at both
    assert problems and problems[0].key == key, problems
    assert "sweep" not in problems[0].message
    assert errors(fixed(argv, problems[0])) == [], problems[0].fix


@pytest.mark.parametrize("typed", ["[x]", "['']", "['a\nb']"])
def test_an_item_of_a_list_empty_as_shipped_is_refused_with_a_list_as_fix(typed: str) -> None:
    """ReTool's env.sandbox.require is []: an item it does not take got 'use one of …' alone, a prose fix
    (its item 0 has no value without the override to go back to)."""
    argv = ["+experiment=retool", f"env.sandbox.require={typed}"]
    problems = errors(argv)
    assert problems and problems[0].key == "env.sandbox.require", problems
    assert errors(fixed(argv, problems[0])) == [], problems[0].fix


@pytest.mark.parametrize(
    ("experiment", "key"),
    [
        ("retool", "env.data.train_split"),  # a split the curriculum names
        ("retool", "env.data.sft_split"),
        ("bfcl_debug", "eval.split"),  # a split the env prepares
        ("bfcl_env_tuning", "stages.stage1_hf.source"),  # a stage
        ("bfcl_debug", "stages.train.rollouts_from"),
    ],
)
@pytest.mark.parametrize("typed", ["'--x'", "'../x'", "'/x'", "'" + "a" * 300 + "'"])
def test_a_name_made_safe_that_names_nothing_is_not_the_first_fix(
    experiment: str, key: str, typed: str
) -> None:
    """Was: `set env.data.train_split=x` first (the name made safe: '--x' trimmed), refused again as a
    split the curriculum does not name; the key's value without the override validates."""
    argv = [f"+experiment={experiment}", f"{key}={typed}"]
    problems = errors(argv)
    assert problems and problems[0].key == key, problems
    assert errors(fixed(argv, problems[0])) == [], problems[0].fix


def test_a_trim_that_validates_stays_the_first_fix() -> None:
    """A URL without the path its client appends is still proposed first: it validates."""
    argv = ["+experiment=quickstart", "eval.engine.url=http://127.0.0.1:30000/generate"]
    (problem,) = errors(argv)
    assert problem.fix.startswith("set eval.engine.url=http://127.0.0.1:30000; or "), problem.fix


@pytest.mark.parametrize("value", [str(10**12), "201"])
def test_an_id_cut_past_the_shipped_entries_is_refused_without_bfcl_eval(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """Round twelve's check reads the installed bfcl-eval's ids; where it is not installed (a laptop that
    only plans), env.data.num_ids=10**12 validated. The field declares the entries a category ships."""
    from t3rl_core.envs.bfcl import shipped

    monkeypatch.setattr(shipped, "_data_dir", lambda: None)
    assert shipped.entry_id_bound(["multi_turn_base"]) is None
    argv = ["+experiment=stage1_bfcl", f"env.data.num_ids={value}"]
    problems = errors(argv)
    assert problems and problems[0].key == "env.data.num_ids", problems
    assert errors(fixed(argv, problems[0])) == [], problems[0].fix


@pytest.mark.parametrize("typed", ["false", "0"])
def test_kl_loss_turned_off_over_a_file_coefficient_is_blamed_on_the_switch(typed: str) -> None:
    """ReTool's RL stage sets kl_loss_coef 0.001: `use_kl_loss=false` typed over it was refused at
    kl_loss_coef, set in the curriculum's file, a key nobody changed."""
    key = "stages.rl.curriculum.algorithm.use_kl_loss"
    argv = ["+experiment=retool", f"{key}={typed}"]
    problems = errors(argv)
    assert [p.key for p in problems] == [key], problems
    assert errors(fixed(argv, problems[0])) == [], problems[0].fix


@pytest.mark.parametrize(
    ("experiment", "key"),
    [
        ("retool", "stages.rl.curriculum.n_samples_per_prompt"),
        ("bfcl_debug", "stages.rollouts.curriculum.n_samples_per_prompt"),
    ],
)
def test_two_refusals_of_one_override_each_have_a_fix_that_clears_both(experiment: str, key: str) -> None:
    """`n_samples_per_prompt=1` under GRPO is refused twice or more at its key (a batch it no longer divides;
    groups of one): the first's fix (global_batch_size=128) left the second, whose own fix (8) left the
    first. The key's value without the override clears both."""
    argv = [f"+experiment={experiment}", f"{key}=1"]
    problems = errors(argv)
    assert len(problems) >= 2 and {p.key for p in problems} == {key}, problems
    for problem in problems:
        assert errors(fixed(argv, problem)) == [], problem.fix


@pytest.mark.parametrize(
    "override",
    [
        "model.architecture.num_attention_heads=1",  # no split into the file's 2 query groups
        "model.architecture.num_attention_heads=3",
        "model.architecture.num_query_groups=1",  # no split over the layout's TP 2
        "model.architecture.num_query_groups=1.0",
    ],
)
def test_an_architecture_count_typed_over_the_file_is_blamed_on_itself(override: str) -> None:
    """Was: the quickstart's heads=1 refused at num_query_groups and groups=1 at hardware.tensor_parallel,
    keys set in files nobody changed; blamed on the one set last, with a count that fits as fix."""
    argv = ["+experiment=quickstart", override]
    problems = errors(argv)
    assert [p.key for p in problems] == [override.partition("=")[0]], problems
    assert errors(fixed(argv, problems[0])) == [], problems[0].fix


def test_the_hunts_reading_of_a_plan_finds_what_it_looks_for() -> None:
    """The judge is no formality: a planned value read as a flag, a number lost as 'nan' or 'None', an
    empty flag value and a value the shell splits are each found (planted in argv and shell lines)."""
    from tests.support.leaf_hunt import _token_problems, plan_problems

    dash = Case("x", "leading dash", "k", "str", "-x", "'-x'")
    assert _token_problems(["--hf-checkpoint", "-x"], dash)
    assert _token_problems(["--hf-checkpoint=-x"], dash) == []  # one token: argparse reads it as the value
    assert _token_problems(["--lr", "nan"], dash) and _token_problems(["--seed", "None"], dash)
    empty = Case("x", "empty", "k", "str", "", "''")
    assert _token_problems(["--save", ""], empty)
    spaced = Case("x", "equals and space", "k", "str", "a=b c", "'a=b c'")

    class Stage:
        name, slime_job, env = "s", None, {}
        commands = ("run --out a=b c",)

    class Plan:
        stages = (Stage,)

    assert plan_problems(spaced, Plan) and plan_problems(dash, Plan) == []
