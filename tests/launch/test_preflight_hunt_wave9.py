"""Hunt wave nine: keys, groups, launcher. Each kind is refused at its key, where it was set, with a first fix
that validates when applied (tests.support.fix_applier), and the valid setting beside it still passes.

- a config group option whose file is empty or a YAML list (`reward=mine`): refused at the group, set in the
  choice, the choice dropped as the fix (launch/checks/hollow_options.py);
- `--only`/`--from` of a sweep that some new point cannot start: refused for each such point, named, before
  the sweep runs (launch/run/sweep_selections.py; was: the pipeline refused each point once it came up);
- a model swap (SFT of a family slime cannot mask) where no candidate fits the hardware as typed: the
  hardware option that holds one, the one chosen first, in place of the key typed (launch/checks/
  swap_hardware.py), a candidate's memory judged too (`model_layouts.holds`); none: no swap proposed;
- a root hardware key typed for a run that trains nothing (quickstart's `hardware.tensor_parallel=2`): a
  warning, the key dropped (launch/checks/rules/untrained_hardware.py; was: accepted without a word);
- a fraction typed as a percentage with its sign (`hardware.sglang_mem_fraction=85%`): the fraction as the fix
  (launch/config/schema_errors._percent_text; was: the key's old value);
- DAPO's upper clip range typed as a percentage (`eps_clip_high=28`): a `Usual` ceiling of 1, scale 100, on
  the field (launch/config/schema.py CLIP_HIGH; was: accepted, the ratio clipped at 29);
- a defaults list entry whose keyword is misspelt (`- overide /model: qwen3_8b`): refused at `defaults`, the
  file and line named, the keyword as the fix (launch/config/defaults_keywords.py; was: Hydra's "Multiple
  values for model" at a key named after the entry, set in "the defaults list", no fix);
- a group removed by a `null` entry of a file's defaults list (`- override /model: null`): refused at the
  group, the file and line named, the entry's removal as the fix (launch/checks/null_entries.py; was:
  blamed on the env file's interpolation of `${model.parsers.think_tags}`);
- a group mounted by a file's entry at a package that is no section (`- /model@model2: qwen3_8b`): refused at
  the package, the file and line named, the entry at the group's own section as the fix
  (launch/checks/mounted_packages.py; was: "in conf/model/qwen3_8b.yaml, rename `model2:`", t3rl's file);
- a job variable named like one its reader reads in other letters (`nccl_debug`, `CUDA_LAUNCH_BLOKING`): a
  warning, the variable renamed (launch/checks/rules/env_names.py; was: accepted, read by nothing);
- a search that minimises a score (`hydra.sweeper.direction=minimize` on `overall.accuracy`): a warning, fix
  `maximize`; an objective that is a setting summary.json echoes (`overall.tasks`): refused, and never
  proposed by the unknown metric's guess (launch/checks/search_direction.py; was: both valid);
- a relative dataset path a config file of one's own wrote, naming a file beside that file, not under the
  directory t3rl starts in: the file beside it named, its absolute path the fix (launch/checks/
  beside_files.py; was: "download it to problems.jsonl");
- a nested key a forced add (`++`) or a plain set typed one level off or too deep
  (`++hardware.gpu.memory_gib`, `++trackng.project.name`): the nearest key path as a whole, taking the value
  (launch/config/nearest_paths.py), a `++`'s containers the override's (launch/config/provenance.py), and no
  guess below a scalar (`misplaced_keys.key_fits`).

See docs/explanation/preflight.md, "Hunt wave nine: keys, groups, launcher".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from launch.checks.context import Selection
from launch.config.errors import Problem
from launch.run.sweep import Point
from launch.run.sweep_selections import new_points_refused
from tests.support.cli_app import invoke
from tests.support.in_tmp import in_tmp
from tests.support.refusals import errors, fixed

S1 = "+experiment=stage1_bfcl"

_in_tmp = in_tmp()


def _refused_once(overrides: list[str], config_dirs: tuple[str, ...] = ()) -> Problem:
    found = errors(overrides, config_dirs)
    assert len(found) == 1, found
    return found[0]


def _fix_validates(overrides: list[str], problem: Problem, config_dirs: tuple[str, ...] = ()) -> None:
    again = fixed(overrides, problem)
    assert errors(again, config_dirs) == [], (problem.fix, again)


# ------------------------------------------------------------- a group option whose file gives no section


@pytest.fixture(scope="module")
def own_dir(_in_tmp: Path) -> str:
    """A config dir of one's own: reward options empty, comments only, a list, a scalar, and a valid one."""
    reward = _in_tmp / "mine" / "reward"
    reward.mkdir(parents=True)
    (reward / "empty.yaml").write_text("")
    (reward / "comments.yaml").write_text("# my reward, to be written\n")
    (reward / "listy.yaml").write_text("- name: binary\n")
    (reward / "word.yaml").write_text("binary\n")
    (reward / "mine.yaml").write_text("name: binary\n")
    return str(_in_tmp / "mine")


@pytest.mark.parametrize("option", ["empty", "comments", "listy", "word"])
def test_a_hollow_group_option_is_refused_at_the_group_with_the_choice_dropped(
    own_dir: str, option: str
) -> None:
    line = [S1, f"reward={option}"]
    problem = _refused_once(line, (own_dir,))
    # was: at reward with "see the field's comment" (empty), or at the file's path with "write it as
    # `key: value` lines" (a list), neither naming the choice nor a fix that validates
    assert problem.key == "reward" and problem.source == f"override `reward={option}`", problem
    assert f"reward/{option}.yaml" in problem.message
    assert problem.fix.startswith(f"drop `reward={option}`"), problem.fix
    _fix_validates(line, problem, (own_dir,))


def test_a_group_option_of_ones_own_with_its_keys_stays_valid(own_dir: str) -> None:
    assert errors([S1, "reward=mine"], (own_dir,)) == []


# ------------------------------------------------------------- a nested key typed off: the nearest key path


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("++hardware.gpu.memory_gib=141", "hardware.gpu_memory_gib=141"),  # was: hardware's keys listed
        ("+hardware.gpus.per_node=8", "hardware.gpus_per_node=8"),
        ("++trackng.project.name=x", "tracking.project=x"),  # was: +tracking={project: {name: x}}, refused
        ("trackng.project.name=x", "tracking.project=x"),  # was: the top level's keys listed
        ("++stages.train.curiculum.optimizer.lr.value=2e-06", "stages.train.curriculum.optimizer.lr=2e-06"),
    ],
)
def test_a_nested_key_typed_off_gets_the_nearest_key_path(typed: str, meant: str) -> None:
    line = [S1, typed]
    problem = _refused_once(line)
    assert problem.source == f"override `{typed}`"
    assert problem.fix.endswith(meant), problem.fix
    _fix_validates(line, problem)


def test_a_forced_add_of_a_section_the_model_lacks_is_the_overrides_not_the_model_files() -> None:
    line = [S1, "++model.arch.num_layers=36"]
    problem = _refused_once(line)
    # was: "in conf/model/qwen3_4b_instruct_2507.yaml, delete `arch:` under model": the file has none
    assert "conf/model" not in problem.fix and "model.architecture.num_layers=36" in problem.fix, problem.fix
    _fix_validates(line, problem)


def test_a_path_near_no_key_is_dropped() -> None:
    line = [S1, "++some.unknown.nested=1"]
    problem = _refused_once(line)
    assert problem.fix.startswith("drop `++some.unknown.nested=1`"), problem.fix
    _fix_validates(line, problem)


# ------------------------------------------------------- a sweep's selection some new point cannot start


def test_a_sweeps_selection_no_new_point_can_start_is_refused_before_any_runs(_in_tmp: Path) -> None:
    runs = _in_tmp / "sweep_runs"
    result = invoke(
        ["run", "-m", "+experiment=quickstart", f"paths.runs_dir={runs}", "seed=1,2", "--only", "eval_tiny"]
    )
    # was: the sweep dir made, each point refused by the pipeline in turn (exit 1)
    assert result.exit_code == 2, result.output
    assert "point 0 (seed=1): --only eval_tiny selects stages" in result.output, result.output
    assert "point 1 (seed=2): --only eval_tiny" in result.output
    assert not runs.exists(), list(runs.rglob("*"))


def test_only_the_new_points_of_an_extended_sweep_are_judged() -> None:
    from launch.checks.resolve import resolve
    from launch.checks.validate import trial_plan

    plan, refused = trial_plan(resolve(["+experiment=quickstart"]).run)
    assert plan is not None, refused
    points = [(Point(i, (), (f"seed={i}",)), plan) for i in range(3)]
    only = Selection(only="eval_tiny")
    # points 0 and 1 ran before (a sweep extended): their records decide; point 2 is new
    (problem,) = new_points_refused(points, only, {2})
    assert problem.key == "--only" and problem.message.startswith("point 2 (seed=2): --only eval_tiny")
    assert new_points_refused(points, Selection(only="prepare_data"), {0, 1, 2}) == []  # reads nothing


# ------------------------------------------------------- a model swap no layout of the hardware typed holds

RETOOL_GLM = ["+experiment=retool", "model=glm4_9b"]


@pytest.mark.parametrize(
    "typed",
    [
        "hardware.gpus_per_node=7",  # no batch of 64 splits over 7 ranks, whatever the model
        "hardware.gpu_memory_gib=4",  # the layout takes a candidate, no GPU of it holds one
    ],
)
def test_a_model_swap_no_layout_holds_comes_with_the_hardware_that_does(typed: str) -> None:
    line = [*RETOOL_GLM, typed]
    (problem,) = [p for p in errors(line) if p.key == "model.family"]
    # was: `set model=qwen2_5_3b_instruct` alone, refused when applied
    assert problem.fix.startswith(f"set model=qwen2_5_3b_instruct hardware=h100x8 instead of `{typed}`"), (
        problem
    )
    _fix_validates(line, problem)


def test_a_model_swap_the_layout_holds_is_proposed_alone() -> None:
    (problem,) = [p for p in errors(RETOOL_GLM) if p.key == "model.family"]
    assert problem.fix.startswith("set model=qwen2_5_3b_instruct (a model"), problem.fix
    _fix_validates(RETOOL_GLM, problem)


# -------------------------------------------------- a training layout typed for a run that trains nothing


def _warnings(line: list[str]) -> list[Problem]:
    from launch.checks.resolve import resolve

    return list(resolve(line).warnings)


@pytest.mark.parametrize("typed", ["hardware.tensor_parallel=2", "+hardware.env_vars.NCCL_DEBUG=INFO"])
def test_a_hardware_key_of_a_run_that_trains_nothing_is_warned_about(typed: str) -> None:
    line = ["+experiment=quickstart", typed]
    key = typed.lstrip("+").split("=")[0]
    (warning,) = [w for w in _warnings(line) if w.key == key]
    assert "no stage of this run trains" in warning.message and warning.fix == f"drop `{typed}`", warning
    again = fixed(line, warning)
    assert again == ["+experiment=quickstart"] and not [w for w in _warnings(again) if w.key == key]


def test_a_hardware_key_of_a_run_that_trains_is_not_warned_about_so() -> None:
    found = _warnings([S1, "hardware.tensor_parallel=2"])
    assert not [w for w in found if "no stage of this run trains" in w.message], found


# ------------------------------------------------------------------------------- percentages for fractions

CURRICULUM = "stages.train.curriculum"


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("hardware.sglang_mem_fraction=85%", "hardware.sglang_mem_fraction=0.85"),
        (f"{CURRICULUM}.rollout_top_p=95 %", f"{CURRICULUM}.rollout_top_p=0.95"),
        (f"{CURRICULUM}.optimizer.lr_warmup_fraction=5%", f"{CURRICULUM}.optimizer.lr_warmup_fraction=0.05"),
    ],
)
def test_a_fraction_typed_with_a_percent_sign_is_fixed_to_the_fraction(typed: str, meant: str) -> None:
    line = [S1, typed]
    problem = _refused_once(line)
    assert problem.fix.startswith(f"set {meant} "), problem.fix  # was: the key's old value
    _fix_validates(line, problem)


def test_a_percent_sign_on_a_field_that_is_no_fraction_gets_no_fraction() -> None:
    problem = _refused_once([S1, "seed=5%"])
    assert "0.05" not in problem.fix, problem.fix


def test_an_upper_clip_range_typed_as_a_percentage_is_warned_about() -> None:
    key = f"{CURRICULUM}.algorithm.eps_clip_high"
    line = [S1, f"{key}=28"]
    (warning,) = [w for w in _warnings(line) if w.key == key]
    assert "typo for 0.28" in warning.message and warning.fix.startswith(f"set {key}=0.28"), warning
    assert not [w for w in _warnings(fixed(line, warning)) if w.key == key]
    assert not [w for w in _warnings([S1, f"{key}=0.5"]) if w.key == key]  # a wider range, as meant


# ------------------------------------------------------------- a defaults list keyword misspelt


@pytest.mark.parametrize(
    ("entry", "key", "fix", "written"),
    [
        # was: Hydra's "Multiple values for model", at a key named after the entry, no file, no fix
        (
            "overide /model: qwen3_8b",
            "defaults",
            "write `override` for `overide`",
            "override /model: qwen3_8b",
        ),
        # was: blamed on env.data.think_tags, whose file interpolates ${model.parsers.think_tags}
        ("override /model: null", "model", "delete `- override /model: null`", None),
        # was: "in conf/model/qwen3_8b.yaml, rename `model2:` to `model:`", t3rl's own file
        (
            "/model@model2: qwen3_8b",
            "model2",
            "write `- override /model: qwen3_8b` for `- /model@model2: qwen3_8b`",
            "override /model: qwen3_8b",
        ),
    ],
    ids=["misspelt keyword", "null entry", "mounted at no section"],
)
def test_a_defaults_list_entry_of_ones_own_is_refused_at_its_line(
    _in_tmp: Path, entry: str, key: str, fix: str, written: str | None
) -> None:
    mine = _in_tmp / key
    experiment = mine / "experiment" / "mine.yaml"
    experiment.parent.mkdir(parents=True)
    text = "# @package _global_\ndefaults:\n  - stage1_bfcl\n  - {}\n  - _self_\n"
    experiment.write_text(text.format(entry))
    line = ["+experiment=mine"]
    problem = _refused_once(line, (str(mine),))
    assert problem.key == key and Path(problem.source).resolve() == experiment, problem
    assert problem.fix.startswith(f"in {problem.source}:4, {fix}"), problem.fix
    # the fix, applied to the file as the user would
    experiment.write_text(text.format(written) if written else text.replace("  - {}\n", ""))
    assert errors(line, (str(mine),)) == []


# ------------------------------------------------------------- a job variable in other letters


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("+hardware.env_vars.nccl_debug='INFO'", "+hardware.env_vars.NCCL_DEBUG=INFO"),
        ("+hardware.env_vars.CUDA_LAUNCH_BLOKING='1'", "+hardware.env_vars.CUDA_LAUNCH_BLOCKING='1'"),
    ],
)
def test_a_job_variable_in_other_letters_is_renamed(typed: str, meant: str) -> None:
    line = [S1, typed]
    key = typed.lstrip("+").split("=")[0]
    (warning,) = [w for w in _warnings(line) if w.key == key]
    assert warning.fix == f"set {meant} instead of `{typed}`", warning.fix
    again = fixed(line, warning)
    assert again == [S1, meant] and not [w for w in _warnings(again) if "env_vars" in w.key]


@pytest.mark.parametrize("typed", ["NCCL_DEBUG_SUBSYS='INIT'", "MY_VAR='x'", "http_proxy='http://p:3128'"])
def test_a_job_variable_of_its_own_name_is_not_renamed(typed: str) -> None:
    assert not [w for w in _warnings([S1, f"+hardware.env_vars.{typed}"]) if "env_vars" in w.key]


# ------------------------------------------------------------- a search aimed the wrong way

SEARCH = ["validate", "-m", S1, "hparams_search=bfcl_lr_kl_reward"]


def test_a_search_minimising_a_score_is_warned_about() -> None:
    result = invoke([*SEARCH, "hydra.sweeper.direction=minimize"])
    assert result.exit_code == 0, result.output  # was: valid without a word
    assert "warning hydra.sweeper.direction: the search minimizes overall.accuracy" in result.output
    assert "fix: set hydra.sweeper.direction=maximize" in result.output


def test_a_search_of_a_setting_summary_json_echoes_is_refused() -> None:
    result = invoke([*SEARCH, "objective.metric=overall.tasks"])
    assert result.exit_code == 2, result.output  # was: valid, every trial scored alike
    assert (
        "error objective.metric: objective.metric is overall.tasks, a number the config fixes"
        in result.output
    )
    assert "fix: set objective.metric=overall.accuracy" in result.output
    # the guess for a metric summary.json lacks is a score, never such a setting (was: overall.tasks)
    assert (
        "fix: set objective.metric=overall.progress"
        in invoke([*SEARCH, "objective.metric=overall.samples"]).output
    )


def test_a_cost_minimised_is_the_users_to_say() -> None:
    from launch.checks.search_direction import objective_direction_problems
    from launch.config.schema import ObjectiveConfig

    cost = ObjectiveConfig(stage="eval", metric="wall_time_s")
    assert objective_direction_problems(cost, {"direction": "minimize"}, str) == []
    score = ObjectiveConfig(stage="eval", metric="overall.pass@4")
    assert objective_direction_problems(score, {"direction": "maximize"}, str) == []


# ------------------------------------------------------------- a relative path meant beside its config file


def test_a_dataset_beside_the_experiment_file_that_names_it_is_offered(_in_tmp: Path) -> None:
    import json

    mine = _in_tmp / "beside"
    (mine / "experiment").mkdir(parents=True)
    experiment = (
        "# @package _global_\ndefaults:\n  - retool\n  - _self_\nenv:\n  data:\n    source: problems.jsonl\n"
    )
    (mine / "experiment" / "mine.yaml").write_text(experiment)
    rows = "".join(json.dumps({"prompt": f"{i} + 1?", "target": str(i + 1)}) + "\n" for i in range(300))
    data = mine / "experiment" / "problems.jsonl"
    data.write_text(rows)
    line = ["+experiment=mine"]  # started in _in_tmp, where problems.jsonl is not
    (warning,) = [w for w in resolve_warnings(line, mine) if w.key == "env.data.source"]
    assert warning.fix == f"set env.data.source={data}", warning.fix  # was: "download it to problems.jsonl"
    again = fixed(line, warning)
    assert not [w for w in resolve_warnings(again, mine) if w.key == "env.data.source"]


def resolve_warnings(line: list[str], config_dir: Path) -> list[Problem]:
    from launch.checks.resolve import resolve

    return list(resolve(line, (str(config_dir),)).warnings)
