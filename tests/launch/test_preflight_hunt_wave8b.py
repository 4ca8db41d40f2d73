"""Hunt wave 8, its leftovers: each kind refused at pre-flight from the declaration the later step reads.

- `--only S` / `--from S` of a new run or plan, S reading a stage the selection leaves out: the pipeline's
  `decide` refused it once the run dir was made; the pre-flight refuses it from the same reading
  (`Selection.unmade`, launch/checks/context.py);
- an empty stop string in slime's argv (`--rollout-stop ""`), refused at the first episode only: the argv
  check holds the value to the kind of the runtime's field it becomes (`SLIME_SAMPLING_OPTIONS`,
  t3rl_core/engines/base.py);
- a number typed with its unit for a field whose name carries the unit (`gpu_memory_gib=80GiB`): the fix is
  the number in that unit (launch/config/unit_values.py), not the old value;
- another command's option that a config key is only spelt like (`t3rl validate --run-dir x`, read as
  runs_dir): the command that has it is named, not "did you mean --config-dir?".

See docs/explanation/preflight.md, "Hunt wave eight: keys, groups, launcher".
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from launch.checks.context import Selection
from launch.checks.resolve import resolve
from launch.config.errors import ConfigError, Problem
from launch.config.unit_values import in_field_unit
from launch.plan.build import Plan
from launch.plan.slime_options import argv_issues
from launch.run.pipeline import PipelineError, decide, refused_in_a_new_record
from launch.run.rundir import RunState
from launch.run.steps import refuse_selection_of_a_new_record, resolve_overrides
from t3rl_core.engines.base import SamplingParams
from t3rl_core.hooks.slime import to_sampling
from tests.support.cli_app import invoke
from tests.support.in_tmp import in_tmp
from tests.support.refusals import errors

QUICK = "+experiment=quickstart"

_in_tmp = in_tmp()


@pytest.fixture(scope="module")
def plan() -> Plan:
    """quickstart's plan (prepare_data → prepare_model → eval_reference → eval_tiny → …), built once."""
    from launch.checks.validate import trial_plan

    built, refused = trial_plan(resolve([QUICK]).run)
    assert built is not None, refused
    return built


def _refused(overrides: list[str], selection: Selection) -> list[Problem]:
    """What `t3rl run` refuses of the line with `selection`, before its record is made."""
    try:
        resolved = resolve_overrides(overrides, [], Console(file=io.StringIO()), selection=selection)
        refuse_selection_of_a_new_record(resolved, selection, plans=False)
    except ConfigError as error:
        return [p for p in error.problems if p.severity == "error"]
    return []


# ------------------------------------------------------------- a selection no stage of a new record can feed


@pytest.mark.parametrize("selection", [Selection(only="eval_tiny"), Selection(from_stage="eval_reference")])
def test_a_selection_of_a_new_run_is_refused_as_the_pipeline_refuses_it(
    plan: Plan, selection: Selection
) -> None:
    flag = selection.flag()
    with pytest.raises(PipelineError) as refused:  # what the pipeline says, once the run dir is made
        decide(plan, RunState(), from_stage=selection.from_stage, only=selection.only)
    (problem,) = refused_in_a_new_record(selection, plan, plan.run_dir)
    assert str(refused.value) == f"{problem.message}; {problem.fix}"  # the same reading, the same words
    assert problem.key == flag.split()[0] and problem.fix.startswith(f"drop {flag.split()[0]}")
    # was: valid at pre-flight, refused by the pipeline after the run dir was made
    (found,) = _refused([QUICK], selection)
    assert found.key == flag.split()[0] and "prepare_data" in found.message, found


def test_a_selection_that_can_start_a_new_run_passes(plan: Plan) -> None:
    assert Selection(only="prepare_data").unmade(plan) is None  # reads nothing
    assert Selection(from_stage=plan.names()[0]).unmade(plan) is None  # every stage
    # a stage read whose output is complete already (its marker files exist) is not missing
    reads = plan.stage("eval_tiny").reads_from()
    markers = [n for n in reads if plan.stage(n).complete_when]
    assert markers, reads  # quickstart's prepare_model has them
    unmade = Selection(only="eval_tiny").unmade(plan, exists=lambda _: True)
    assert unmade == ("eval_tiny", [n for n in reads if n not in markers])
    assert _refused([QUICK], Selection(only="prepare_data")) == []


def test_run_refuses_a_new_runs_selection_as_a_config_error(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    result = invoke(["run", QUICK, f"paths.runs_dir={runs}", "--only", "eval_tiny"])
    assert result.exit_code == 2 and "error --only: --only eval_tiny selects stages" in result.output
    assert not runs.exists(), list(runs.rglob("*"))  # was: exit 1, the pipeline's refusal (a run failed)


# ------------------------------------------------------------------------------ an empty stop string


@pytest.mark.parametrize("argv", [["--rollout-stop", ""], ["--rollout-stop", "</x>", ""]])
def test_an_empty_stop_string_is_refused_in_the_argv(argv: list[str]) -> None:
    # was: passed the argv check; refused by to_sampling at the first episode
    (issue,) = argv_issues(argv)
    assert issue.token == "--rollout-stop" and "empty stop string" in issue.message, issue
    with pytest.raises(ValueError, match="empty"):
        to_sampling({"stop": argv[1:]})


def test_a_stop_string_is_taken() -> None:
    assert argv_issues(["--rollout-stop", "</tool_call>", "\n\n"]) == []
    with pytest.raises(ValueError, match="empty stop string"):
        SamplingParams(stop=("",))


def test_an_empty_stop_string_in_a_config_is_refused_at_its_key() -> None:
    key = "model.architecture.extra_args"
    (found,) = errors(["+experiment=stage1_bfcl", f'{key}=[--rollout-stop,""]'])
    assert found.key == key and "empty stop string" in found.message and found.fix == f"set {key}=[]"


# ------------------------------------------------------------------------------ a number with its unit


@pytest.mark.parametrize(
    ("key", "typed", "whole", "read"),
    [
        ("hardware.gpu_memory_gib", "80GiB", False, (80, "gib")),
        ("hardware.gpu_memory_gib", "80 gib", False, (80, "gib")),
        ("hardware.gpu_memory_gib", "0.5TiB", False, (512, "gib")),
        ("hardware.gpu_memory_gib", "1073741824B", False, (1, "gib")),
        ("executor.timeout_s", "2h", True, (7200, "s")),
        ("executor.timeout_s", "1.5s", True, None),  # an integer field: no whole number of seconds
        ("sandbox.memory_mb", "512MB", True, (512, "mb")),
        ("sandbox.memory_mb", "2GB", True, None),  # MB or MiB: the field's to say
        ("hardware.gpu_memory_gib", "80s", False, None),  # another dimension
        ("hardware.gpu_memory_gib", "eighty", False, None),
        ("hardware.tensor_parallel", "4gib", True, None),  # its name carries no unit
    ],
)
def test_a_number_typed_with_its_unit_is_read_in_the_fields_unit(
    key: str, typed: str, whole: bool, read: tuple[int, str] | None
) -> None:
    assert in_field_unit(key, typed, whole=whole) == read


def test_a_number_with_its_unit_is_fixed_to_the_number() -> None:
    (found,) = errors(["+experiment=stage1_bfcl", "hardware.gpu_memory_gib=80GiB"])
    # was: `set hardware.gpu_memory_gib=141 (its value without …)`, the old value
    assert found.fix.startswith("set hardware.gpu_memory_gib=80 "), found.fix


# ------------------------------------------------------------ another command's option, spelt like a key


def test_another_commands_option_spelt_like_a_key_names_the_command() -> None:
    result = invoke(["validate", QUICK, "--run-dir", "x"])  # the CLI declares which command has which
    # was: "did you mean the option --config-dir?" (run_dir read as the key runs_dir)
    assert result.exit_code == 2, result.output
    assert "'--run-dir x' is not an option of this command but of t3rl run" in result.output, result.output
    assert "fix: drop `--run-dir x` here; or t3rl run --run-dir x" in result.output


def test_a_key_named_exactly_stays_the_key() -> None:
    result = invoke(["validate", QUICK, "--seed", "3"])
    assert result.exit_code == 2 and "fix: seed=3" in result.output, result.output
