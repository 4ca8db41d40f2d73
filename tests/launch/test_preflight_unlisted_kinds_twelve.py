"""A twelfth round of kinds of mistakes no issue listed, each refused at the key that was changed, with a
first fix that validates, by a declaration rather than by a case of its own:

- an item named twice in a list where a repeat means nothing (a sandbox's hidden paths and allowed
  variables, a chat family's tokens, sbatch options, container mounts): every list field of the schema is
  declared a set (t3rl_core.fields.Distinct, refused by launch/checks/rules/distinct.py) or says why an
  item may repeat (t3rl_core.fields.Repeats: a command line, a script, one entry per layer);
- a model size no GPU of the layout holds, set after the layout (`model.architecture.vocab_size=10**12`): the
  memory rule blamed the layout (hardware.tensor_parallel); the ledger's blame now weighs the sizes it
  counts with the layout's keys, and a size changed last gets its model option's value as the fix;
- an id cut past every entry bfcl-eval ships (`env.data.num_ids=10**12`, or 240): the ids past the last entry
  are tasks of no category, the splits hold fewer tasks than split_sizes counts, and prepare_data lists every
  id in memory; BFCL's preparation_problems now refuses it with the shipped bound (round one had declared
  a cut of 240 valid);
- a user or group id no POSIX system has (`env.sandbox.cell_uid=2**32`): every id field declares the POSIX
  id domain (t3rl_core.fields.PosixId), and a walk over the schema finds any id field that does not.

Each case is judged as the mutation harness judges it (tests/support/preflight_mutations.py).
"""

from __future__ import annotations

import re
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pytest

from launch.config.errors import Problem
from t3rl_core.fields import Distinct, Domain, LocalPath, Repeats
from t3rl_core.strict import StrictModel
from tests.support.in_tmp import in_tmp
from tests.support.preflight_mutations import Mutation, judge
from tests.support.refusals import errors as _errors
from tests.support.refusals import fixed as _fixed
from tests.support.schema_leaves import config_models, import_all, leaves

_in_tmp = in_tmp()  # relative paths of the configs resolve in one empty dir


# ------------------------------------------------------------------------------------------ POSIX ids

_ID_FIELD = re.compile(r"(^|_)(uid|gid)$")


def test_every_id_field_declares_the_posix_id_domain() -> None:
    import_all()
    ids = [leaf for model in config_models() for leaf in leaves(model) if _ID_FIELD.search(leaf.field)]
    assert ids, "the walk found no uid or gid field"
    undeclared = [
        leaf.name
        for leaf in ids
        if not any(isinstance(m, Domain) and m.name == "POSIX id" for m in leaf.metadata)
    ]
    assert undeclared == []


ID_CASES = [
    Mutation("retool", "huge", f"env.sandbox.cell_{which}", str(value))
    for which in ("uid", "gid")
    for value in (2**32, 2**32 - 1, 10**12)  # past uid_t; (uid_t) -1, "unchanged"; round eleven's huge
]


@pytest.mark.parametrize("mutation", ID_CASES, ids=[str(m) for m in ID_CASES])
def test_an_id_no_posix_system_has_is_refused_at_its_key(mutation: Mutation) -> None:
    verdict = judge(mutation)  # was accepted
    assert verdict.outcome == "refused, fix validates", verdict.detail


def test_the_largest_posix_id_is_accepted() -> None:
    verdict = judge(Mutation("retool", "huge", "env.sandbox.cell_uid", str(2**32 - 2)))
    assert verdict.outcome == "accepted", verdict.detail


# ------------------------------------------------------------------------------ lists: sets or sequences


def _lists(tp: Any, meta: tuple[Any, ...], where: str) -> Iterator[tuple[str, Any, tuple[Any, ...]]]:
    """(place, list type, what it declares) of every list inside a field's type (items of lists, values of
    dicts, arms of unions); a fixed-length tuple is a record of positions, not a list."""
    origin = get_origin(tp)
    if origin is Annotated:
        inner, *more = get_args(tp)
        yield from _lists(inner, (*meta, *more), where)
    elif origin in (Union, types.UnionType):
        for arm in get_args(tp):
            yield from _lists(arm, (), where)
    elif origin in (list, set, frozenset) or (origin is tuple and get_args(tp)[-1:] == (...,)):
        yield where, tp, meta
        yield from _lists(get_args(tp)[0], (), f"{where}[]")
    elif origin is dict:
        yield from _lists(get_args(tp)[1], (), f"{where}{{:}}")


def _choices(tp: Any) -> bool:
    """A list of string choices: pre-flight refuses a choice named twice (launch/checks/rules/kinds.py)."""
    (item,) = get_args(tp)
    while get_origin(item) is Annotated:
        item = get_args(item)[0]
    return get_origin(item) is Literal and all(isinstance(c, str) for c in get_args(item))


def test_every_list_field_is_a_set_or_says_why_an_item_may_repeat() -> None:
    import_all()
    found, undeclared = 0, []
    for model in config_models():
        for name, field in model.model_fields.items():
            for where, tp, meta in _lists(field.annotation, tuple(field.metadata), ""):
                found += 1
                if not (any(isinstance(m, Distinct | Repeats) for m in meta) or _choices(tp)):
                    undeclared.append(f"{model.__module__}.{model.__qualname__}.{name}{where}")
    assert found > 20, "the walk found too few list fields"
    assert undeclared == [], "declare each Distinct (a set) or Repeats(why)"


def test_the_list_walk_finds_an_undeclared_list() -> None:
    class Probe(StrictModel):
        paths: list[LocalPath]
        nested: dict[str, list[int] | None]

    places = [
        where for name, f in Probe.model_fields.items() for where, _, _ in _lists(f.annotation, (), name)
    ]
    assert places == ["paths", "nested{:}"]


SLURM = "executor=slurm"
REPEAT_CASES = [
    # the sandbox's lists (were accepted: a path hidden twice, a variable copied twice)
    Mutation("retool", "repeat", "env.sandbox.private_dirs", "[/tmp,/run,/var/run,/var/tmp,/dev/shm,/run]"),
    Mutation("retool", "repeat", "env.sandbox.hidden_paths", "['~/.ssh','~/.aws','~/.ssh']"),
    Mutation("retool", "repeat", "env.sandbox.readable_paths", "[/opt,/opt]"),
    Mutation("retool", "repeat", "env.sandbox.env_allowlist", "[PATH,LANG,PATH]"),
    Mutation("retool", "repeat", "env.sandbox.preload", "[json,json]"),
]


@pytest.mark.parametrize("mutation", REPEAT_CASES, ids=[str(m) for m in REPEAT_CASES])
def test_an_item_repeated_in_a_set_is_refused_at_its_key(mutation: Mutation) -> None:
    verdict = judge(mutation)
    assert verdict.outcome == "refused, fix validates", verdict.detail


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("executor.extra_sbatch", "['--qos=high','--qos=high']"),
        ("executor.container_mounts", "['/data:/data','/data:/data']"),
    ],
)
def test_an_item_repeated_in_a_slurm_set_is_refused(key: str, value: str) -> None:
    args = ["+experiment=stage1_bfcl", SLURM, f"{key}={value}"]
    (error,) = [e for e in _errors(args) if e.key == key]  # was accepted
    assert "more than once" in error.message
    assert [e for e in _errors(_fixed(args, error)) if e.key == key] == []


def test_a_script_or_an_argv_may_repeat_an_item() -> None:
    args = ["+experiment=stage1_bfcl", SLURM, "executor.setup=['module load cuda','module load cuda']"]
    assert [e for e in _errors(args) if e.key == "executor.setup"] == []
    args = [
        "+experiment=stage1_bfcl",
        "eval.server.extra_args=['--max-running-requests','8','--cuda-graph-max-bs-decode','8']",
    ]
    assert [e for e in _errors(args) if e.key == "eval.server.extra_args"] == []


def test_a_servers_gpu_named_twice_gets_the_ledgers_fix_of_tp_gpus() -> None:
    args = [
        "+experiment=tau2_pipeline",
        "hardware.gpus_per_node=4",
        "+services.usr.model_path=Qwen/Qwen3-4B",
        "+services.usr.gpus=[4,4]",
        "+services.usr.tp=2",
        "+services.usr.port=30123",
    ]
    (error,) = [e for e in _errors(args) if e.key == "services.usr.gpus"]
    assert _errors(_fixed(args, error)) == []


# ------------------------------------------------------------------------- a model size no GPU holds

SIZE_CASES = [
    Mutation(experiment, "huge", "model.architecture.vocab_size", value)
    for experiment in ("stage1_bfcl", "toolrl_grpo")
    for value in (str(10**12), str(2 * 10**9))
]


@pytest.mark.parametrize("mutation", SIZE_CASES, ids=[str(m) for m in SIZE_CASES])
def test_a_model_size_no_gpu_holds_is_blamed_on_the_size(mutation: Mutation) -> None:
    verdict = judge(mutation)  # was refused elsewhere: at hardware.tensor_parallel
    assert verdict.outcome == "refused, fix validates", verdict.detail


def test_a_layout_changed_after_the_model_is_still_blamed_on_the_layout() -> None:
    args = ["+experiment=stage1_bfcl", "hardware.tensor_parallel=1", "hardware.gpu_memory_gib=20"]
    keys = [e.key for e in _errors(args)]
    assert keys and not any(k.startswith("model.architecture.") for k in keys)


# ---------------------------------------------------------------------- an id cut past the shipped ids

NUM_IDS = "env.data.num_ids"
CUT_CASES = [
    Mutation(experiment, "huge", NUM_IDS, value)
    for experiment in ("stage1_bfcl", "bfcl_debug")
    for value in (str(10**12), "240", "201")
]


@pytest.mark.parametrize("mutation", CUT_CASES, ids=[str(m) for m in CUT_CASES])
def test_an_id_cut_past_every_shipped_entry_is_refused(mutation: Mutation) -> None:
    verdict = judge(mutation)  # was accepted
    assert verdict.outcome == "refused, fix validates", verdict.detail


def test_the_cut_of_the_shipped_entries_is_accepted() -> None:
    from t3rl_core.envs.bfcl.shipped import entry_id_bound

    found = entry_id_bound(["multi_turn_base"])
    if found is None:
        pytest.skip("bfcl-eval's data files are not installed here")
    args = ["+experiment=stage1_bfcl", f"{NUM_IDS}={found[0]}"]
    assert [e for e in _errors(args) if e.key == NUM_IDS] == []


# ------------------------------------------------------------------ a source tree the plan runs from


def test_a_missing_slime_checkout_under_the_local_executor_is_named_at_its_key(tmp_path: Path) -> None:
    slime = tmp_path / "no-slime"
    args = ["+experiment=stage1_bfcl", "executor=local", f"paths.slime_root={slime}"]
    (warning,) = [p for p in problems(args) if p.key == "paths.slime_root"]  # was silent
    assert warning.severity == "warning" and str(slime) in warning.message
    (slime / "tools").mkdir(parents=True)
    for script in ("train.py", "tools/convert_hf_to_torch_dist.py", "tools/convert_torch_dist_to_hf.py"):
        (slime / script).write_text("")
    assert [p for p in problems(args) if p.key == "paths.slime_root"] == []
    # stages that run elsewhere read their checkout there
    assert [p for p in problems([*args[:1], "executor=dry", args[2]]) if p.key == "paths.slime_root"] == []


def problems(overrides: list[str]) -> list[Problem]:
    """Errors and warnings of the command line."""
    from launch.checks.resolve import resolve
    from launch.config.errors import ConfigError

    try:
        return list(resolve(overrides).warnings)
    except ConfigError as error:
        return [*error.problems, *error.warnings]
