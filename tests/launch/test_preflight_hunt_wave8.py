"""Hunt wave 8: config keys, groups, the launcher and the job. Kinds no earlier hunt closed, each closed by
a declaration:

- a reference to an item of a list beside it that names none (`NamesItem`: `eval.published.target` is one of
  the results' labels), two files setting the two (`+published=retool` under stage1_bfcl's own target);
- `${oc.select:KEY}` naming no key (rules/selections.py): OmegaConf gives null without a word;
- `RAY_ADDRESS` exported here, read by `executor.address`'s kind when the key is unset (rules/ray_address.py);
- an option typed under another group, answered with the groups that have it: each tried with the rest of
  the line first (launch/checks/other_groups_tried.py: `sandbox=local` under BFCL is not offered);
- a SLURM time's forms declared once (`SLURM_TIME_FORMS`: the kind's description and every refusal), days
  as a fourth clock field read (`25:00:00:00` → `25-00:00:00`), and a guessed key whose text kind refuses
  the text typed named with what it takes (launch/config/guess_domains.py: `executor.time=…`);
- a model swap a fix proposes that the layout typed does not divide: the model with the layout it needs, two
  groups at once (launch/checks/model_layouts.py);
- an experiment file that chooses a group's option and writes another option's name into its section
  (launch/checks/rules/renamed_in_files.py), as `model.name=…` typed is refused;
- a group an experiment of one's own lists without `override` before the base experiment that chooses it
  (launch/config/listed_twice.py): Hydra's "appears more than once" had no key, file or fix;
- a key a file writes in letters that only look like ASCII (`sееd:` with Cyrillic е): the nearest name is the
  one those letters draw first (launch.config.errors.did_you_mean);
- an override in look-alike letters whose ASCII reading the key takes in one more step (a group option in
  another case, an existing key typed with '+'): both steps as one fix (launch/checks/fix_closure.py);
- an option of another t3rl command typed to this one (`t3rl validate --only train`): named with the
  commands that have it (launch.config.command_line.COMMANDS_WITH, set by the CLI).

See docs/explanation/preflight.md, "Hunt wave eight: keys, groups, launcher".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from launch.checks.resolve import resolve
from launch.config.errors import Problem
from launch.config.guess_domains import text_kind
from t3rl_core.fields import SLURM_TIME_FORMS, SlurmDuration
from tests.support.cli_app import invoke
from tests.support.in_tmp import in_tmp
from tests.support.refusals import errors, fixed

S1 = "+experiment=stage1_bfcl"
SLURM = [S1, "executor=slurm"]

_in_tmp = in_tmp()  # relative paths of the configs resolve in one empty dir


def _refused_at(overrides: list[str], key: str) -> Problem:
    (found,) = [e for e in errors(overrides) if e.key == key]
    return found


# ------------------------------------------------------------------ a reference to an item that names none


def test_a_published_option_chosen_under_an_experiments_own_target() -> None:
    line = [S1, "+published=retool"]
    found = _refused_at(line, "eval.published.target")
    # was: at eval.published, the whole section quoted back, fix `eval.published=null` (the choice dropped)
    assert (
        "conf/experiment/stage1_bfcl.yaml" in found.message and "conf/published/retool.yaml" in found.message
    )
    assert found.source.endswith("override `+published=retool`)")
    assert found.fix.startswith("set eval.published.target=null") and "drop `+published=retool`" in found.fix
    assert errors(fixed(line, found)) == []


def test_a_target_typed_that_names_no_result_gets_the_nearest_label() -> None:
    line = [S1, "eval.published.target=T3RL stage1"]
    found = _refused_at(line, "eval.published.target")
    assert found.source == "override `eval.published.target=T3RL stage1`"
    assert "'T3RL stage 1'" in found.fix.partition(";")[0]
    assert errors(fixed(line, found)) == []


@pytest.mark.parametrize(
    "line",
    [
        [S1, "+published=retool", "eval.published.target=null"],
        [S1, "eval.published.target='T3RL stage 1'"],
    ],
)
def test_a_reference_that_names_an_item_is_valid(line: list[str]) -> None:
    assert errors(line) == []


# ------------------------------------------------------------------ a selection that names no key


@pytest.mark.parametrize(
    ("typed", "fix"),
    [
        # was: valid, top-p null (unset); the nearest eval key, top_k, is no top-p (-1): not offered
        ("eval.top_p=${oc.select:eval.topp}", "drop `eval.top_p=${oc.select:eval.topp}`"),
        # was: valid, no group named
        ("tracking.group=${oc.select:trackin.project}", "set tracking.group=${oc.select:tracking.project}"),
    ],
)
def test_a_selection_of_no_key_is_refused(typed: str, fix: str) -> None:
    found = _refused_at([S1, typed], typed.partition("=")[0])
    assert found.fix.startswith(fix), found.fix
    assert errors(fixed([S1, typed], found)) == []


def test_a_selection_with_a_default_warns_only_beside_a_key_spelt_alike() -> None:
    spelt = resolve([S1, "tracking.group=${oc.select:tracking.projct,null}"]).warnings
    assert any(w.key == "tracking.group" and "tracking.project" in w.fix for w in spelt)
    other = resolve([S1, "tracking.group=${oc.select:nothing.here,mine}"]).warnings
    assert not any("oc.select" in w.message for w in other)  # a default meant for configs without it
    assert errors([S1, "tracking.group=${oc.select:tracking.project}"]) == []


# ------------------------------------------------------------------ RAY_ADDRESS exported here


@pytest.mark.parametrize(
    ("exported", "meant"),
    [
        ("auto", "http://127.0.0.1:8265"),  # was: valid, submitted to a dashboard at a host named auto
        ("10.0.0.1:6379", "http://10.0.0.1:8265"),  # ray.init's GCS address: no Job API there
    ],
)
def test_an_exported_ray_address_is_read_by_the_keys_kind(
    monkeypatch: pytest.MonkeyPatch, exported: str, meant: str
) -> None:
    monkeypatch.setenv("RAY_ADDRESS", exported)
    line = [S1, "executor=ray"]
    found = _refused_at(line, "executor.address")
    assert found.source.startswith("$RAY_ADDRESS") and repr(exported) in found.message
    assert found.fix.startswith(f"set executor.address={meant}")
    assert errors(fixed(line, found)) == []


@pytest.mark.parametrize("exported", ["10.0.0.1:8265", "http://head:8265", "ray://head:10001"])
def test_an_exported_dashboard_is_valid(monkeypatch: pytest.MonkeyPatch, exported: str) -> None:
    monkeypatch.setenv("RAY_ADDRESS", exported)
    assert errors([S1, "executor=ray"]) == []


# ------------------------------------------------------------------ an option of other groups, each tried


def test_an_option_of_other_groups_offers_only_the_groups_the_line_takes() -> None:
    line = [S1, "tracking=local"]
    found = _refused_at(line, "tracking")
    # was: "executor=local or sandbox=local instead of …": BFCL's env has no sandbox, refused when applied
    assert found.fix.startswith("executor=local instead of `tracking=local`"), found.fix
    assert "sandbox=local is refused in turn at env.sandbox" in found.fix
    assert errors(fixed(line, found)) == []


def test_an_option_of_other_groups_the_line_takes_both() -> None:
    found = _refused_at(["+experiment=retool", "tracking=local"], "tracking")
    assert found.fix.startswith("executor=local or sandbox=local instead of"), found.fix  # ReTool has one


# ------------------------------------------------------------------ a SLURM time's forms, declared once


def test_a_slurm_times_forms_are_the_kinds_description() -> None:
    kind = text_kind(SlurmDuration)
    assert kind is not None
    with pytest.raises(ValidationError) as refused:
        TypeAdapter(SlurmDuration).validate_python("1:2:3:4:5")
    # was: the kind said "minutes, HH:MM:SS or D-HH:MM:SS", its refusal another list
    assert kind.description in str(refused.value) and "D-HH:MM" in kind.description


@pytest.mark.parametrize(
    ("typed", "fix"),
    [
        # was: the section's keys (the guess time_limit refuses the value, and nothing said what it takes)
        ("executor.time=25:00:00:00", "executor.time_limit='25-00:00:00'"),
        ("+executor.time=25:00:00:00", "executor.time_limit='25-00:00:00'"),
        ("executor.time=2h", "executor.time_limit='02:00:00'"),
        # a name spelt alike, not an abbreviation: the direct composition's refusal and the schema's
        ("executor.timelimit=25:00:00:00", "executor.time_limit='25-00:00:00'"),
        ("+executor.timelimit=25:00:00:00", "executor.time_limit='25-00:00:00'"),
        # was: the value without the override, the forms unsaid past the message
        ("executor.time_limit=25:00:00:00", "executor.time_limit=25-00:00:00"),
    ],
)
def test_a_slurm_time_typed_in_another_form_is_read(typed: str, fix: str) -> None:
    line = [*SLURM, typed]
    found = _refused_at(line, typed.lstrip("+").partition("=")[0])
    assert fix in found.fix.partition(";")[0], found.fix
    assert errors(fixed(line, found)) == []


def test_a_guessed_key_refusing_the_text_names_its_forms() -> None:
    found = _refused_at([*SLURM, "executor.time=forever"], "executor.time")
    assert "executor.time_limit" in found.fix and SLURM_TIME_FORMS in found.fix, found.fix


# ------------------------------------------------------------------ a model swapped in with its layout

RETOOL_ON_EIGHT_NODES = ["+experiment=retool", "executor=slurm", "hardware.nodes=8"]


@pytest.mark.parametrize(
    ("layout", "with_it"),
    [
        # was: `set model=qwen2_5_3b_instruct`, refused when applied (36 layers over 8 pipeline stages)
        ("hardware.pipeline_parallel=8", "hardware.pipeline_parallel=2"),
        # 36 layers over 4 stages are blocks of 9, which the profile's recompute chunk of 2 does not divide
        ("hardware.pipeline_parallel=4", "hardware.recompute.num_layers=1"),
    ],
)
def test_a_model_swap_a_fix_proposes_comes_with_the_layout_it_needs(layout: str, with_it: str) -> None:
    line = [*RETOOL_ON_EIGHT_NODES, layout, "model=llama3_1_8b_instruct"]  # SFT of a family slime cannot mask
    found = _refused_at(line, "model.family")
    assert found.fix.startswith(f"set model=qwen2_5_3b_instruct {with_it} ("), found.fix
    assert errors(fixed(line, found)) == []


# ------------------------------------------------------------------ a section renamed by a file


def _experiment(tmp_path: Path, name: str, model: str) -> list[Problem]:
    (tmp_path / "experiment").mkdir(exist_ok=True)
    (tmp_path / "experiment" / f"{name}.yaml").write_text(
        "# @package _global_\ndefaults:\n  - stage1_bfcl\n  - override /model: qwen3_8b\n  - _self_\n"
        f"model:\n  name: {model}\n"
    )
    return errors([f"+experiment={name}"], (str(tmp_path),))


def test_a_file_renaming_the_section_its_option_brought_is_refused(tmp_path: Path) -> None:
    (found,) = _experiment(tmp_path, "renamed", "glm4_9b")
    # was: valid, a Qwen3-8B run recorded as glm4_9b
    assert found.key == "model.name" and "qwen3_8b's" in found.message, found.message
    assert "`- override /model: glm4_9b`" in found.fix and "renamed.yaml" in found.source


def test_a_file_naming_the_section_its_own_way_is_valid(tmp_path: Path) -> None:
    assert _experiment(tmp_path, "own_name", "my_qwen") == []  # no other option's name
    assert _experiment(tmp_path, "same_name", "qwen3_8b") == []


# ------------------------------------------------------------------ a group listed before its base's choice


def _defaults(tmp_path: Path, name: str, *entries: str) -> list[Problem]:
    (tmp_path / "experiment").mkdir(exist_ok=True)
    listed = "".join(f"  - {e}\n" for e in entries)
    (tmp_path / "experiment" / f"{name}.yaml").write_text(f"# @package _global_\ndefaults:\n{listed}")
    return errors([f"+experiment={name}"], (str(tmp_path),))


def test_a_group_listed_before_the_base_that_chooses_it(tmp_path: Path) -> None:
    (found,) = _defaults(tmp_path, "twice", "/model: qwen3_8b", "stage1_bfcl", "_self_")
    # was: key '', source "the defaults list", no fix
    assert found.source.endswith("experiment/twice.yaml") and found.key == "defaults"
    assert "write `- override /model: qwen3_8b` for `- /model: qwen3_8b`" in found.fix
    # the line the fix writes, after the base, validates
    assert _defaults(tmp_path, "meant", "stage1_bfcl", "override /model: qwen3_8b", "_self_") == []


# ------------------------------------------------------------------ a file's key in look-alike letters


def test_a_files_key_in_look_alike_letters_is_renamed(tmp_path: Path) -> None:
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "odd.yaml").write_text(
        "# @package _global_\ndefaults:\n  - stage1_bfcl\n  - _self_\nsееd: 7\n"
    )
    (found,) = errors(["+experiment=odd"], (str(tmp_path),))
    # was: the section's keys listed (difflib reads each Cyrillic е as a letter unlike any)
    assert "to `seed:`" in found.fix, found.fix


# ------------------------------------------------------------------ a look-alike reading one step short


@pytest.mark.parametrize(
    ("typed", "fix"),
    [
        # was: `set hardware=H100x8`, refused when applied (the group's option is h100x8)
        ("hardware=Н100x8", "set hardware=h100x8 instead of `hardware=Н100x8`"),
        # was: `set +seed=3`, refused when applied (seed exists: no '+'), and the typed line left in place
        ("+sееd=3", "set seed=3 instead of `+sееd=3`"),
    ],
)
def test_a_look_alike_reading_is_completed_to_what_the_key_takes(typed: str, fix: str) -> None:
    (found,) = errors([S1, typed])
    assert found.fix.startswith(fix), found.fix
    assert errors(fixed([S1, typed], found)) == []


# ------------------------------------------------------------------ an option of another command


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        # was: "write it as an override without dashes" (`only=train`, no key of any config)
        (
            ["validate", "--only", "train"],
            "'--only train' is not an option of this command but of t3rl run and",
        ),
        (["run", "--k", "4"], "'--k 4' is not an option of this command but of t3rl eval"),
    ],
)
def test_an_option_of_another_command_names_the_command(argv: list[str], says: str) -> None:
    result = invoke([*argv, S1, "executor=dry"])
    assert result.exit_code == 2 and says in result.output, result.output
    assert f"fix: drop `{' '.join(argv[1:])}` here" in result.output


def test_a_flag_naming_a_config_key_stays_that_key() -> None:
    result = invoke(["run", "--tp", "4", S1, "executor=dry"])  # eval's option, and a key's name
    assert "fix: eval.server.tp=4" in result.output, result.output
