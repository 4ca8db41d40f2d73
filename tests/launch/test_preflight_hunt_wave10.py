"""Hunt wave ten (keys, groups, launcher) and wave nine's leftovers, each refused at its key, where it was
set, with a first fix that validates when applied (tests.support.fix_applier):

- what an env's prepare_data refuses is one declaration (`EnvConfig.prepare_refusals`): BFCL's id cut
  short of the entries bfcl-eval ships is judged by it, as ReTool's test_size is, wherever a prepare_data
  stage runs (was: a second declaration, `preparation_problems`, beside it);
- every alternative a rule's fix offers (`set a=1; or set b=2`) that assigns keys is tried with the rest
  of the line and dropped, with why, when refused in turn (launch/checks/offers_tried.py; was: only an
  offer of another stage kind was; `hardware.gpus_per_node=3` was offered `hardware.tensor_parallel=3`,
  which Qwen3-4B's 32 heads refuse);
- a model swap with several hardware keys typed replaces them all (`… hardware=h100x8 instead of `a` and
  `b``, launch/checks/swap_hardware.py; was: no swap proposed, since a fix replaced one override);
- a value a config file of one's own gives in the wrong shape (`seed: {value: 3}`, a group option's
  `context_length: {tokens: 4096}`) names the file's line where the key is written: provenance keeps the
  layer's package and reads the line from the file's YAML nodes (launch/config/provenance.key_line; was: the
  file only);
- a list typed with an empty element (`[multi_turn_base,]`, Python's and JSON's trailing comma; `[,a]`,
  `[a,,b]`): the stray ',' is dropped (launch/config/override_syntax._stray_separator; was: every element
  quoted, `[multi_turn_base,'']`, an item '' no choice takes, refused when applied);
- a list typed in Python's tuple or set notation (`env.data.categories=(a,b)`, `={a}`, `(a,)`) where the
  config holds a list: the same items in [ ] (launch/config/override_syntax._other_brackets; was: the
  value quoted as one text, `'(a,b)'`, refused when applied);
- a list whose items are separated by spaces (`[multi_turn_base multi_turn_miss_func]`), read as one item
  no choice takes: the list with its words as items, first (launch/config/schema_errors._words_as_items;
  was: `set env.data.categories.0=multi_turn_base`, the key's old first item, dropping what was typed);
- a size typed with a letter alone or Kubernetes' binary suffix (`hardware.gpu_memory_gib=80G`, `80Gi`):
  the number, in the field's unit where that is one of the letter's readings (launch/config/unit_values:
  `_EITHER`, `gi`; was: the key's old value, 141).

See docs/explanation/preflight.md, "Hunt wave ten: keys, groups, launcher".
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from launch.checks.offers_tried import _ASSIGNS
from launch.checks.resolve import resolve
from launch.config.errors import Problem
from launch.config.provenance import key_line
from t3rl_core.config import EnvConfig
from tests.support.refusals import errors, fixed

S1 = "+experiment=stage1_bfcl"


def _fix_validates(overrides: list[str], problem: Problem, config_dirs: tuple[str, ...] = ()) -> None:
    again = fixed(overrides, problem)
    assert errors(again, config_dirs) == [], (problem.fix, again)


# ------------------------------------------------------ what prepare_data refuses: one declaration


def test_bfcls_id_cut_is_a_prepare_refusal() -> None:
    line = [S1, "env.data.num_ids=150"]
    (problem,) = errors(line)
    assert problem.key == "env.data.num_ids", problem
    assert problem.message.startswith("prepare_data of env bfcl_multi_turn would refuse it: "), problem
    assert problem.fix == "set env.data.num_ids=200", problem.fix
    _fix_validates(line, problem)


def test_the_keys_the_cut_reads_are_blamed_by_which_was_set_last() -> None:
    line = [S1, "env.data.num_ids=150", "env.data.categories=[multi_turn_base]"]
    (problem,) = errors(line)
    assert problem.key == "env.data.categories", problem  # typed last: the cut is held to its entries
    _fix_validates(line, problem)


def test_an_env_declares_what_prepare_refuses_in_one_place() -> None:
    assert not hasattr(EnvConfig, "preparation_problems")  # was: a second declaration of the same


# ------------------------------------------------------- every alternative of a rule's fix, tried


def test_an_alternative_refused_in_turn_is_dropped_with_why() -> None:
    (problem,) = errors([S1, "hardware.gpus_per_node=3"])
    assert "tensor_parallel=3" not in problem.fix, problem.fix  # was: `…; or set hardware.tensor_parallel=3`
    assert "`hardware.tensor_parallel=3` is refused in turn at hardware.tensor_parallel" in problem.message


@pytest.mark.parametrize(
    "line",
    [
        [S1, "hardware.gpus_per_node=3"],
        [S1, "hardware.tensor_parallel=3"],
        [S1, "stages.train.curriculum.train_split=bfcl_test"],
        ["+experiment=retool", "model=glm4_9b"],
    ],
)
def test_every_alternative_offered_that_assigns_keys_takes_the_line_past_its_error(line: list[str]) -> None:
    refused = errors(line)
    typed = {(p.key, p.message) for p in refused}
    tried = 0
    for problem in refused:
        for alternative in problem.fix.split("; or "):
            if _ASSIGNS.match(alternative) is None:
                continue  # prose: a sentence, not a line to apply
            again = errors(fixed(line, problem.replace(fix=alternative)))
            tried += 1
            # nothing new, and not this error again: the line's other errors are their own fixes'
            assert {(e.key, e.message) for e in again} <= typed - {(problem.key, problem.message)}, (
                alternative,
                again,
            )
    assert tried, refused


# ------------------------------------------------------------ the line of a file that set the value

MINE = """\
# @package _global_
defaults:
  - stage1_bfcl
  - _self_

seed:
  value: 3
"""


def test_a_mapping_a_file_gives_a_scalar_names_the_files_line(tmp_path: Path) -> None:
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "mine.yaml").write_text(MINE)
    line = ["+experiment=mine"]
    (problem,) = errors(line, (str(tmp_path),))
    assert problem.key == "seed", problem
    # was: `…/mine.yaml (chosen by …)`, the file only
    assert problem.source == f"{tmp_path}/experiment/mine.yaml:6 (chosen by override `+experiment=mine`)"
    again = fixed(line, problem)
    assert errors(again, (str(tmp_path),)) == [], (problem.fix, again)


def test_a_group_options_line_is_read_below_its_package(tmp_path: Path) -> None:
    shipped = Path("conf/model/qwen3_4b_instruct_2507.yaml").read_text(encoding="utf-8")
    (tmp_path / "model").mkdir()
    written = shipped.replace("context_length: 262144", "context_length:\n  tokens: 4096")
    (tmp_path / "model" / "mine.yaml").write_text(written)
    (problem,) = errors([S1, "model=mine"], (str(tmp_path),))
    at = next(n for n, text in enumerate(written.splitlines(), 1) if text.startswith("context_length:"))
    assert problem.key == "model.context_length", problem
    assert problem.source.startswith(f"{tmp_path}/model/mine.yaml:{at} "), problem.source


def test_every_key_of_a_shipped_file_is_found_on_its_own_line() -> None:
    files = sorted(str(p) for p in Path("conf").rglob("*.yaml"))
    found = 0
    for file in files:
        lines = Path(file).read_text(encoding="utf-8").splitlines()
        stack: list[tuple[object, str]] = [(yaml.safe_load("\n".join(lines)), "")]
        while stack:
            node, path = stack.pop()
            for key, value in node.items() if isinstance(node, dict) else ():
                dotted = f"{path}.{key}" if path else str(key)
                if dotted == "defaults":
                    continue
                at = key_line(file, dotted)
                # a flow mapping (`{retail: 0.8, …}`) writes its keys on its parent's line
                assert at is not None and f"{key}:" in lines[at - 1], (file, dotted, at)
                found += 1
                stack.append((value, dotted))
    assert found > 1000, found


# --------------------------------------------------- a model swap superseding several hardware keys


@pytest.mark.parametrize(
    ("typed", "kept"),
    [
        (["hardware.gpus_per_node=7", "hardware.gpu_memory_gib=4"], []),
        (["hardware.gpu_memory_gib=4", "hardware.gpus_per_node=7"], ["+hardware.env_vars.NCCL_DEBUG=INFO"]),
    ],
)
def test_a_swap_replaces_every_hardware_key_the_option_writes(typed: list[str], kept: list[str]) -> None:
    line = ["+experiment=retool", "model=glm4_9b", *typed, *kept]
    (problem,) = [p for p in errors(line) if p.key == "model.family"]
    instead = " and ".join(f"`{t}`" for t in sorted(typed))  # a job variable added is no key h100x8 writes
    swap = "set model=qwen2_5_3b_instruct hardware=h100x8"
    assert problem.fix.startswith(f"{swap} instead of {instead} ("), problem.fix
    again = fixed(line, problem)  # was: no swap proposed (the fix named no model)
    assert set(kept) <= set(again) and errors(again) == [], again


# ------------------------------------------------------------ a list's stray comma


@pytest.mark.parametrize(
    ("key", "items", "beside"),
    [
        ("env.data.categories", ["multi_turn_base", "multi_turn_miss_func"], []),
        ("executor.extra_sbatch", ["--qos=high", "--exclude=n1"], ["executor=slurm"]),  # quoted as well
    ],
)
@pytest.mark.parametrize("stray", ["{0},{1},", ",{0},{1}", "{0},,{1}", "{0},{1}, "])
def test_a_lists_empty_element_is_a_stray_comma(
    key: str, items: list[str], beside: list[str], stray: str
) -> None:
    typed = f"{key}=[{stray.format(*items)}]"
    line = [S1, *beside, typed]
    (problem,) = errors(line)
    assert problem.key == key and "a stray ',' dropped" in problem.fix, problem  # was: an item '' quoted
    assert "''" not in problem.fix, problem.fix
    _fix_validates(line, problem)


# ---------------------------------------------------------- a list in a tuple's or a set's brackets


def _scalar_lists(node: object, path: str = "") -> list[tuple[str, list[object]]]:
    """Every list of scalars of a composed config, by dotted key."""
    if isinstance(node, dict):
        return [found for k, v in node.items() for found in _scalar_lists(v, f"{path}.{k}" if path else k)]
    if isinstance(node, list) and node and all(isinstance(x, str | int) for x in node):
        return [(path, node)]
    return []


@pytest.mark.parametrize("brackets", ["({})", "{{{}}}", "({},)"])
def test_every_list_typed_in_other_brackets_gets_the_list(brackets: str) -> None:
    lists = _scalar_lists(resolve([S1]).config)
    assert len(lists) >= 4, lists  # think tags, augmentation kinds, categories, pass@k
    for key, items in lists:
        typed = f"{key}={brackets.format(','.join(str(i) for i in items))}"  # `(a,)`: Python's tuple comma
        (problem,) = errors([S1, typed])
        assert problem.key == key and "a list is written in [ ]" in problem.fix, problem  # was: quoted
        _fix_validates([S1, typed], problem)


@pytest.mark.parametrize(
    "typed",
    [
        "[multi_turn_base multi_turn_miss_func]",
        "[multi_turn_base,multi_turn_miss_func multi_turn_miss_param]",
        "[multi_turn_base  multi_turn_long_context]",
    ],
)
def test_a_lists_items_separated_by_spaces_are_its_items(typed: str) -> None:
    line = [S1, f"env.data.categories={typed}"]
    (problem,) = errors(line)
    words = typed.strip("[]").replace(",", " ").split()
    assert problem.fix.startswith(f"set env.data.categories=[{','.join(words)}] ("), problem.fix
    _fix_validates(line, problem)  # was: the old first item (`env.data.categories.0=multi_turn_base`)


@pytest.mark.parametrize(
    ("typed", "meant"), [("80G", "80"), ("80g", "80"), ("80Gi", "80"), ("81920Mi", "80")]
)
def test_a_size_in_a_letter_or_a_binary_suffix_is_the_fields_number(typed: str, meant: str) -> None:
    line = [S1, f"hardware.gpu_memory_gib={typed}"]
    (problem,) = errors(line)
    assert problem.fix.startswith(f"set hardware.gpu_memory_gib={meant} ("), problem.fix  # was: 141, the old
    _fix_validates(line, problem)


@pytest.mark.parametrize("typed", ["0.5T", "80K"])  # 1000s or 1024s: converted to neither
def test_a_letter_of_another_size_is_not_converted(typed: str) -> None:
    (problem,) = errors([S1, f"hardware.gpu_memory_gib={typed}"])
    assert "as its name says" not in problem.fix, problem.fix
