"""First hour, hunted (wave five): one test per kind a newcomer hunt found answered badly
(docs/reference/cli-behaviour.md, "First hour, hunted (wave five)"). Each fails on the code before its
fix; in-process where the kind allows."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from tests.support.retool_prepare_only import rec_config_dir

# Directories the kernel refuses to anyone, root included (the write probe makes one in each).
REFUSED_RUNS, REFUSED_PLANS = "/proc/t3rl-w5-runs", "/proc/t3rl-w5-plans"


def _invoke(*args: str, **env: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "300", **env})
    return result.exit_code, result.output


# ------------------------------------------------- a new record judged by the dir the command writes


def test_a_new_run_and_a_new_plan_are_each_judged_by_the_dir_they_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run writes under paths.runs_dir and a plan under paths.plans_dir: neither is refused over the
    other's dir (was: exit 2 'paths.plans_dir: … cannot be created', fix: another paths.plans_dir, for
    `t3rl run` and `t3rl validate`; likewise paths.runs_dir for `t3rl plan`)."""
    rec_config_dir(tmp_path, monkeypatch)
    monkeypatch.setenv("T3RL_PLANS_DIR", REFUSED_PLANS)
    code, out = _invoke("validate", "+experiment=rec", "--config-dir", "conf")
    assert code == 0, out
    # A run's pre-flight refuses only its --only naming no stage (exit 2, before anything is written).
    code, out = _invoke("run", "+experiment=rec", "--config-dir", "conf", "--only", "nosuch")
    assert code == 2 and "no such stage" in out and "paths.plans_dir" not in out, out
    assert not (tmp_path / "runs").exists()
    code, out = _invoke("plan", "+experiment=rec", "--config-dir", "conf")  # its own dir: judged
    assert code == 2 and f"error paths.plans_dir: {REFUSED_PLANS}" in out, out
    assert "when the plan is written" in " ".join(out.split()), out

    monkeypatch.setenv("T3RL_PLANS_DIR", "plans")
    monkeypatch.setenv("T3RL_RUNS_DIR", REFUSED_RUNS)
    code, out = _invoke("plan", "+experiment=rec", "--config-dir", "conf")
    assert code == 0 and (tmp_path / "plans" / "rec").is_dir(), out
    code, out = _invoke("plan", "-m", "+experiment=rec", "--config-dir", "conf", "seed=1,2")
    assert code == 0, out
    code, out = _invoke("validate", "+experiment=rec", "--config-dir", "conf")  # its own dir: judged
    assert code == 2 and f"error paths.runs_dir: {REFUSED_RUNS}" in out, out


# -------------------------------------------------------- a sweep dir this user cannot write, resumed

# Run as nobody (a private /tmp, HOME=/tmp, in /): a sweep dir of its own made read-only, resumed.
SWEEP_AS_NOBODY = textwrap.dedent(
    """
    import contextlib, io, json, os
    from launch.cli.run_command import run_command

    sweep = "/tmp/runs/rec/sweep-20260101-000000"
    os.makedirs(sweep + "/p00")
    point = {"index": 0, "varying": ["seed=1"], "overrides": ["+experiment=rec", "seed=1"],
             "run_dir": sweep + "/p00", "status": "failed"}
    with open(sweep + "/sweep.json", "w") as f:
        json.dump({"name": "sweep-20260101-000000", "sweep_dir": sweep, "points": [point]}, f)
    os.chmod(sweep, 0o555)
    listing = lambda: sorted((p, os.stat(os.path.join(sweep, p)).st_mtime_ns)
                             for p in [".", *os.listdir(sweep)])
    before, in_tmp = listing(), set(os.listdir("/tmp"))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = run_command([], False, sweep, None, None, [], dry=False)
    print(json.dumps({"code": code, "err": " ".join(err.getvalue().split()), "same": listing() == before,
                      "new_in_tmp": sorted(set(os.listdir("/tmp")) - in_tmp)}))
    """
)


def test_a_sweep_dir_this_user_cannot_write_is_refused_with_the_copy_to_resume() -> None:
    """Refused before any point is composed, with the copy that resumes (a sweep's points are found
    below its dir as it is now). Was: every point composed, then `.lock: Permission denied (… choose a
    writable directory (paths.runs_dir=…))`, a key a resume never reads."""
    from tests.sandbox.test_sandbox_non_root import as_nobody  # skips where this host cannot

    done = as_nobody(SWEEP_AS_NOBODY, 120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    sweep, copy = "/tmp/runs/rec/sweep-20260101-000000", "/tmp/t3rl-runs/rec/sweep-20260101-000000"
    err = report["err"]
    assert report["code"] == 1, report  # run's 1: the run dir cannot be used
    assert f"{sweep} is not writable by this user: a resume writes into the sweep dir itself" in err
    assert f"mkdir -p /tmp/t3rl-runs/rec && cp -a {sweep} {copy} && t3rl run --run-dir {copy}" in err
    assert "paths.runs_dir=" not in report["err"], report
    assert report["same"] and report["new_in_tmp"] == [], report


# ----------------------------------------------------- a sweep point's own names, on its resume


def test_a_resumed_sweep_point_is_not_warned_about_the_names_its_sweep_added(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A point's record holds the tracking names its sweep added; its resume (alone, or the sweep's)
    reads them as the sweep's, as the sweep did. Was: each resume warned `tracking.group is set, but
    tracking.kind is none`, fix `~tracking.group`, twice per point, of names nobody typed."""
    rec_config_dir(tmp_path, monkeypatch)
    code, out = _invoke("run", "-m", "+experiment=rec", "--config-dir", "conf", "seed=1")
    assert code == 0 and "warning tracking" not in out, out
    (sweep,) = (tmp_path / "runs" / "rec").iterdir()
    code, out = _invoke("plan", "--run-dir", str(sweep / "p00"))  # a preview of the point alone
    assert code == 0 and "tracking.kind is none" not in out, out
    code, out = _invoke("plan", "--run-dir", str(sweep / "p00"), "tracking.run_name=mine")  # typed: warned
    assert code == 0 and "warning tracking.run_name" in out, out


# ------------------------------------- a key one level off: named where typed, moved where written

OFF_BY_A_LEVEL = """\
# @package _global_
defaults:
  - quickstart
  - _self_
name: mine
stages:
  eval_tiny:
    limit_per_category: 3
"""


def test_a_stage_key_typed_beside_its_eval_section_is_named_as_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`stages.eval_tiny.limit_per_category` (the stage's `eval:` level left out), typed or written in
    one's own file. Was: reported as `stages.eval_tiny.eval.limit_per_category`, 'under
    stages.eval_tiny.eval' (pydantic's union tag `eval` read as the stage's eval key, which quickstart
    sets), blamed on conf/experiment/quickstart.yaml, fix `eval.limit_per_category=3` (the root eval,
    which eval_tiny overrides); for the file, an override that left the key there, refused again."""
    from launch.checks.resolve import resolve
    from launch.config.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    typed = ["+experiment=quickstart", "+stages.eval_tiny.limit_per_category=3"]
    with pytest.raises(ConfigError) as refused:
        resolve(typed)
    (problem,) = refused.value.problems
    assert problem.key == "stages.eval_tiny.limit_per_category", problem
    assert problem.source == "override `+stages.eval_tiny.limit_per_category=3`", problem
    fix = problem.fix.removeprefix("set it where it lives: ").split(" (also at")[0]
    assert fix == "stages.eval_tiny.eval.limit_per_category=3", problem
    assert resolve([typed[0], fix]).run.stages["eval_tiny"].eval["limit_per_category"] == 3

    experiment = tmp_path / "mine" / "experiment" / "mine.yaml"
    experiment.parent.mkdir(parents=True)
    experiment.write_text(OFF_BY_A_LEVEL)
    with pytest.raises(ConfigError) as refused:
        resolve(["+experiment=mine"], [str(tmp_path / "mine")])
    (problem,) = refused.value.problems
    assert problem.key == "stages.eval_tiny.limit_per_category", problem
    assert problem.fix.startswith(
        "set it where it lives: in mine/experiment/mine.yaml, delete `limit_per_category:` under "
        "stages.eval_tiny and set stages.eval_tiny.eval.limit_per_category: 3 instead"
    ), problem
    # The edit as told: the key deleted where it was, set at the place named.
    experiment.write_text(
        OFF_BY_A_LEVEL.replace("    limit_per_category: 3", "    eval:\n      limit_per_category: 3")
    )
    assert (
        resolve(["+experiment=mine"], [str(tmp_path / "mine")])
        .run.stages["eval_tiny"]
        .eval["limit_per_category"]
        == 3
    )


# ------------------------------------------------------- --from/--only on a new run


def test_from_on_a_new_run_names_the_run_it_was_meant_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`t3rl run +experiment=quickstart --from eval_tiny`, typed to run eval_tiny again. Was: 'needs the
    outputs of prepare_data, which has not succeeded in this run dir; run without --from/--only', of a
    run dir the command had just made (and removed)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("T3RL_RUNS_DIR", "T3RL_PLANS_DIR"):
        monkeypatch.delenv(name, raising=False)
    code, out = _invoke("plan", "+experiment=quickstart", "--only", "eval_tiny")
    said = " ".join(out.split())
    assert (
        code == 2  # a config error since wave eight's leftovers (was 1, the pipeline's refusal)
        and "--only eval_tiny selects stages of a run dir that ran before, and this one is new" in said
    )
    assert "drop --only (a new run starts at its first stage)" in said, out
    assert not (tmp_path / "plans" / "quickstart").exists() or not any(
        (tmp_path / "plans" / "quickstart").iterdir()
    )

    earlier = tmp_path / "runs" / "quickstart" / "20260101-000000"  # a run's record, as t3rl lists one
    earlier.mkdir(parents=True)
    (earlier / "manifest.json").write_text('{"record": "run"}')
    (earlier / "config.yaml").write_text("name: quickstart\n")
    code, out = _invoke("run", "+experiment=quickstart", "--from", "eval_tiny")
    said = " ".join(out.split())
    assert code == 2, out
    assert f"for the latest run of this experiment: t3rl run --run-dir {earlier} --from eval_tiny" in said, (
        out
    )
    assert sorted(p.name for p in earlier.parent.iterdir()) == [earlier.name]  # the new run dir removed


# --------------------------------------------- a value Hydra's grammar reads only quoted


@pytest.mark.parametrize("value", ["naïve", "a&b"])
def test_a_value_the_override_grammar_reads_only_quoted_gets_it_quoted(value: str) -> None:
    """`tracking.project=naïve` (an accent, `&`). Was: `token recognition error at: 'ï'` and the generic
    'write overrides as key=value …'. A dash pasted from a page (`T3RL–stage1`) only looks like ASCII's:
    its fix is the ASCII value (test_preflight_unlisted_kinds_nine), not the pasted dash quoted."""
    import shlex

    from launch.checks.resolve import resolve
    from launch.config.errors import ConfigError

    typed = f"tracking.project={value}"
    with pytest.raises(ConfigError) as refused:
        resolve(["+experiment=quickstart", typed])
    (problem,) = refused.value.problems
    assert problem.key == "tracking.project" and "reads only quoted" in problem.message, problem
    (fixed,) = shlex.split(problem.fix)  # one shell word, as the shell hands it over
    assert resolve(["+experiment=quickstart", fixed]).run.tracking.project == value


# ------------------------------------------------- one override pasted twice


def test_an_override_given_twice_alike_says_so() -> None:
    """`seed=3 … seed=3` (a line pasted after an edited one). Was: '`seed=3` is replaced by `seed=3`',
    fix 'drop `seed=3` (or `seed=3`, if the first was meant)'."""
    from launch.checks.resolve import resolve

    (warning,) = [
        w for w in resolve(["+experiment=quickstart", "seed=3", "seed=3"]).warnings if w.key == "seed"
    ]
    assert "to the same value (`seed=3`, then `seed=3`): the second changes nothing" in warning.message
    assert warning.fix == "drop the second `seed=3`", warning
    assert not [w for w in resolve(["+experiment=quickstart", "seed=3"]).warnings if w.key == "seed"]


# ------------------------------------------------- an option given by its file's name


@pytest.mark.parametrize("typed", ["+experiment=quickstart.yaml", "+experiment=quickstart.yml"])
def test_an_option_given_by_its_file_name_is_refused_with_its_name(typed: str) -> None:
    """Was: `.yaml` composed and recorded as typed (`--explain` said `chosen by: experiment/
    quickstart.yaml.yaml`; a resume or `runs --where` saw another override); `.yml` printed Hydra's
    deprecation warning from its site-packages file, then 'unknown option'."""
    from launch.checks.resolve import resolve
    from launch.config.errors import ConfigError

    with pytest.raises(ConfigError) as refused:
        resolve([typed])
    (problem,) = refused.value.problems
    assert problem.key == "experiment" and "is a file's name" in problem.message, problem
    assert problem.fix == "+experiment=quickstart", problem
    assert resolve([problem.fix]).run.name == "quickstart"


# ------------------------------------------------- a key that only holds a YAML anchor

ANCHORED = """\
# @package _global_
defaults:
  - quickstart
  - _self_
name: anch
x_common: &common
  limit_per_category: 2
stages:
  eval_reference:
    eval:
      <<: *common
  eval_tiny:
    eval:
      <<: *common
"""
# The edit the fix describes: the anchor on the first use, the alias in the other, the holder deleted.
ANCHORED_AS_TOLD = """\
# @package _global_
defaults:
  - quickstart
  - _self_
name: anch
stages:
  eval_reference:
    eval: &common
      limit_per_category: 2
  eval_tiny:
    eval:
      <<: *common
"""


def test_a_key_that_only_holds_a_yaml_anchor_is_answered_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was: 'set it where it lives: eval.limit_per_category=2' (now: delete `x_common:` and set …), which
    leaves every `*common` alias undefined: YAML refuses the file."""
    from launch.checks.resolve import resolve
    from launch.config.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    experiment = tmp_path / "mine" / "experiment" / "anch.yaml"
    experiment.parent.mkdir(parents=True)
    experiment.write_text(ANCHORED)
    with pytest.raises(ConfigError) as refused:
        resolve(["+experiment=anch"], ["mine"])
    (problem,) = refused.value.problems
    assert problem.key == "x_common", problem
    assert problem.fix.startswith(
        "in mine/experiment/anch.yaml, `x_common:` only holds the YAML anchor &common"
    )
    assert "put &common on the first place that uses it" in problem.fix and "<<: *common" in problem.fix
    experiment.write_text(ANCHORED_AS_TOLD)
    stages = resolve(["+experiment=anch"], ["mine"]).run.stages
    assert stages["eval_tiny"].eval["limit_per_category"] == 2  # the alias carried the anchored values


# ------------------------------------------------- a relative --config-dir typed in a subdirectory


def test_a_relative_config_dir_typed_in_a_subdirectory_names_the_one_above(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cd docs && t3rl validate --config-dir my_conf …` (my_conf in the checkout). Was: 'config
    directory …/docs/my_conf does not exist', fix 'pass an existing directory of config groups'."""
    import os

    from launch.checks.resolve import resolve
    from launch.config.errors import ConfigError

    rec_config_dir(tmp_path, monkeypatch)  # tmp_path/conf/experiment/rec.yaml
    (tmp_path / "docs").mkdir()
    monkeypatch.chdir(tmp_path / "docs")
    with pytest.raises(ConfigError) as refused:
        resolve(["+experiment=rec"], [os.path.abspath("conf")])  # as the commands hand it over
    (problem,) = refused.value.problems
    meant = tmp_path / "conf"
    assert problem.fix.startswith(f"did you mean --config-dir {meant}? (a relative path starts"), problem
    assert f"or cd {tmp_path} first" in problem.fix, problem
    assert resolve(["+experiment=rec"], [str(meant)]).run.name == "rec"
    (tmp_path / "notes" / "data").mkdir(parents=True)  # YAML two levels down, in no group's folder
    (tmp_path / "notes" / "data" / "x.yaml").write_text("a: 1\n")
    with pytest.raises(ConfigError) as refused:  # a directory above that holds no config is not named
        resolve(["+experiment=rec"], [os.path.abspath("notes")])
    assert "did you mean" not in refused.value.problems[0].fix


# ------------------------------------------------- null for an entry one names


def test_null_for_a_stage_is_answered_with_its_deletion() -> None:
    """`stages.eval_tiny=null`, meant to drop the stage. Was: 'drop `stages.eval_tiny=null`
    (stages.eval_tiny is a section: set its keys …)', no word of `~stages.eval_tiny`."""
    from launch.checks.resolve import resolve
    from launch.config.errors import ConfigError

    with pytest.raises(ConfigError) as refused:
        resolve(["+experiment=quickstart", "stages.eval_tiny=null"])
    (problem,) = refused.value.problems
    assert problem.fix.startswith("~stages.eval_tiny (deletes stages' entry eval_tiny); or drop"), problem
    assert "eval_tiny" not in resolve(["+experiment=quickstart", "~stages.eval_tiny"]).run.stages
    with pytest.raises(ConfigError) as refused:  # a section of the schema is no entry to delete
        resolve(["+experiment=quickstart", "env.data=null"])
    assert not refused.value.problems[0].fix.startswith("~"), refused.value.problems


# ------------------------------------------------- a section's name alone after an override


def test_a_sections_name_alone_is_not_read_as_the_rest_of_a_value() -> None:
    """`t3rl show +experiment=quickstart model` (to see the model section). Was: 'the shell split
    `+experiment=quickstart model` at the space', fix `"+experiment='quickstart model'"`, an experiment
    that cannot exist (an option is a name)."""
    import shlex

    from launch.checks.resolve import resolve
    from launch.config.errors import ConfigError

    with pytest.raises(ConfigError) as refused:
        resolve(["+experiment=quickstart", "model"])
    (problem,) = refused.value.problems
    assert problem.key == "model" and "quickstart model" not in problem.fix, problem
    shown = problem.fix.partition("or, to see it: ")[2]
    assert shown == "t3rl show +experiment=quickstart --explain model", problem
    code, out = _invoke(*shlex.split(shown)[1:])
    assert code == 0 and "model.name = tiny_qwen3" in out, out


# ------------------------------------------------- an override given to t3rl ls


def test_ls_of_an_override_names_its_group() -> None:
    """`t3rl ls model=qwen3_8b`, `t3rl ls +experiment=quickstart`. Was: 'no config group', fix every
    group listed (no did-you-mean: the whole text compared with the group names)."""
    code, out = _invoke("ls", "+experiment=quickstart")
    said = " ".join(out.split())
    assert code == 2 and "fix: did you mean `t3rl ls experiment`?" in said, out
    assert "`t3rl show +experiment=quickstart` shows the config that one composes" in said, out
    code, out = _invoke("ls", "experiment")
    assert code == 0 and "quickstart" in out, out


def test_ls_of_a_group_and_one_option_shows_that_option_and_how_to_see_its_config() -> None:
    """`t3rl ls experiment quickstart` (the group, then the option, as `t3rl ls` lists them). Was: Click's
    'Got unexpected extra argument(s) (quickstart)'."""
    import shlex

    code, out = _invoke("ls", "experiment", "quickstart")
    said = " ".join(out.split())
    assert code == 0 and "conf/experiment/quickstart.yaml" in said, out
    assert "stage1_bfcl" not in said, out  # that option alone
    shown = said.split("the config it composes: ")[1].split(";")[0]
    assert shown == "t3rl show +experiment=quickstart", said
    code, out = _invoke(*shlex.split(shown)[1:])
    assert code == 0 and "tiny_qwen3" in out, out
    code, out = _invoke("ls", "model", "qwen3_8b")
    assert code == 0 and "t3rl show model=qwen3_8b" in " ".join(out.split()), out


def test_ls_of_a_misspelt_option_names_the_one_meant() -> None:
    code, out = _invoke("ls", "experiment", "quikstart")
    said = " ".join(out.split())
    assert code == 2 and "no option 'quikstart' in config group 'experiment'" in said, out
    assert "fix: did you mean `t3rl ls experiment quickstart`?" in said, out


# ------------------------------------------------- a config file at the top of one's config dir


def test_a_config_file_at_the_top_of_a_config_dir_is_said_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy of conf/config.yaml edited in one's config dir (`seed: 7`), an experiment saved beside the
    group folders. Was: valid, seed 42, not a word (`--explain seed` named t3rl's own file)."""
    from launch.checks.resolve import resolve

    rec_config_dir(tmp_path, monkeypatch)
    (tmp_path / "conf" / "config.yaml").write_text("defaults:\n  - _self_\nseed: 7\n")
    resolved = resolve(["+experiment=rec"], ["conf"])
    (warning,) = [w for w in resolved.warnings if w.key == "--config-dir"]
    assert warning.message.startswith("conf/config.yaml is never read"), warning
    assert warning.fix == (
        "put the keys you changed in conf/local/default.yaml (the primary config reads it at the top) "
        "and delete conf/config.yaml"
    ), warning
    (tmp_path / "conf" / "local").mkdir()  # the fix, applied
    (tmp_path / "conf" / "local" / "default.yaml").write_text("seed: 7\n")
    (tmp_path / "conf" / "config.yaml").unlink()
    resolved = resolve(["+experiment=rec"], ["conf"])
    assert resolved.run.seed == 7 and not [w for w in resolved.warnings if w.key == "--config-dir"]


# ------------------------------------------------- -m with nothing swept


def test_a_sweep_with_nothing_swept_says_it_is_one_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`t3rl validate -m +experiment=rec` (-m by habit). Was: '1 sweep points', a point with an empty
    label, not a word of why."""
    import io

    from rich.console import Console

    from launch.run.sweep import Point, PointCheck, print_points_table

    rec_config_dir(tmp_path, monkeypatch)
    code, out = _invoke("validate", "-m", "+experiment=rec", "--config-dir", "conf")
    assert code == 0 and "note: no override sweeps (key=a,b), so this sweep has one point" in out, out
    swept = [PointCheck(Point(i, ("+experiment=rec", f"seed={i}"), (f"seed={i}",))) for i in (1, 2)]
    printed = io.StringIO()
    print_points_table(swept, Console(file=printed, width=200))
    assert "note: no override sweeps" not in printed.getvalue(), printed.getvalue()
