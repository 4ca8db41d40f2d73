"""A run dir's record damaged between attempts (a file edited by hand, cut short, rewritten with other
bytes) is named by `t3rl plan|run --run-dir` and `t3rl runs show|diff` with its file and what is wrong,
never read on into a traceback; and the record is written so that anyone who may read the run dir can
read, copy and resume it.

One real run of a data-preparation experiment (a second or two) is recorded once; each case damages
a copy of it.
"""

from __future__ import annotations

import itertools
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch.checks.resolve import resolve
from launch.cli.app import app
from launch.cli.runs import load_run
from launch.run.pipeline import PipelineError, preview
from launch.run.record_files import STAGE_FIELDS, RunDirError
from launch.run.rundir import RunDir
from launch.run.steps import plan_run
from t3rl_core import outside_json
from t3rl_core.atomic_files import atomic_write_text, umask
from tests.support.lock_holder import held_by_another_process
from tests.support.retool_prepare_only import rec_config_dir, tree_snapshot


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "300"}, catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A finished run of `rec` (written under umask 022), with the environment it ran in."""
    root = tmp_path_factory.mktemp("recorded")
    with pytest.MonkeyPatch.context() as patch:
        conf = rec_config_dir(root, patch)
        before = os.umask(0o022)
        try:
            code, out = invoke("run", "+experiment=rec", "--config-dir", str(conf))
        finally:
            os.umask(before)
        assert code == 0, out
        (run_dir,) = (root / "runs" / "rec").iterdir()
        yield run_dir


@pytest.fixture
def run_dir(recorded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the recorded run, to damage (a resume goes back to where the run was started)."""
    monkeypatch.chdir(recorded.parents[2])
    monkeypatch.setenv("T3RL_CACHE_DIR", str(recorded.parents[2] / "cache"))
    copy = tmp_path / "run"
    shutil.copytree(recorded, copy, symlinks=True)
    return copy


# A value of each JSON type; each field of a stage's record gets every one of them.
VALUES = [None, True, 3, "text", [], ["a"], {}, {"a": 1}, {"a": "b"}]


def test_a_stage_record_field_of_any_type_is_read_or_named_never_a_traceback(
    run_dir: Path, recorded: Path
) -> None:
    """Every field of a stage's record in state.json, set to a value of each JSON type: a resume's
    decisions (what `t3rl plan|run --run-dir` compute) and `t3rl runs show` either read it or refuse it
    naming state.json, the stage and the field. (`"outputs": null` ended both in an AttributeError.)"""
    state_file = run_dir / "state.json"
    whole = json.loads(state_file.read_text())
    plan = plan_run(resolve(["+experiment=rec"], [str(recorded.parents[2] / "conf")]), RunDir(run_dir))
    assert [d.action for d in preview(plan, RunDir(run_dir)).decisions] == ["cached"]
    unexpected = []
    for field, value in itertools.product(STAGE_FIELDS, VALUES):
        damaged = json.loads(json.dumps(whole))
        damaged["stages"]["prepare_data"][field] = value
        state_file.write_text(json.dumps(damaged))
        case = f"{field}={json.dumps(value)}"
        try:
            preview(plan, RunDir(run_dir))
            load_run(run_dir)
        except (PipelineError, RunDirError) as refused:
            if not all(word in str(refused) for word in (str(state_file), "prepare_data", field)):
                unexpected.append(f"{case}: {refused}")
        code, out = invoke("runs", "show", str(run_dir))
        if code not in (0, 1) or (code == 1 and f"`{field}`" not in out and "status" not in out):
            unexpected.append(f"{case}: runs show exited {code}: {out[-300:]}")
    assert not unexpected, "\n".join(unexpected)


def test_a_field_of_the_type_t3rl_writes_is_read_and_another_is_refused(run_dir: Path) -> None:
    """Which values the check lets through: each field's own types (null where t3rl writes it), an
    output's digest as text or null; the others are refused."""
    state_file = run_dir / "state.json"
    whole = json.loads(state_file.read_text())
    accepted = {}
    for field, value in itertools.product(STAGE_FIELDS, VALUES):
        damaged = json.loads(json.dumps(whole))
        damaged["stages"]["prepare_data"][field] = value
        state_file.write_text(json.dumps(damaged))
        try:
            RunDir(run_dir).load_state()
        except RunDirError:
            continue
        accepted.setdefault(field, []).append(value)
    assert accepted == {
        "started_at": [None, "text"],
        "finished_at": [None, "text"],
        "returncode": [None, 3],
        "message": ["text"],
        "fingerprint": ["text"],
        "run_id": ["text"],
        "attempts": [3],
        "upstream": [{}, {"a": "b"}],
        "handle": [{}, {"a": 1}, {"a": "b"}],
        "outputs": [{}, {"a": "b"}],
        "code": [None, {}, {"a": 1}, {"a": "b"}],
        "environ": [None, {}, {"a": "b"}],  # variable → its value (text), null: not recorded
    }


NOT_UTF8 = b"- +experiment=rec\n- \xff\xfe\n"
TOO_DEEP = b"[" * 5000 + b"]" * 5000 + b"\n"


@pytest.mark.parametrize("damage", [NOT_UTF8, TOO_DEEP], ids=["not-utf8", "too-deep"])
@pytest.mark.parametrize("name", ["overrides.yaml", "overrides.history.yaml"])
def test_damaged_overrides_stop_a_resume_naming_the_file_and_leave_the_record(
    run_dir: Path, name: str, damage: bytes
) -> None:
    """overrides.yaml or its history not UTF-8 or nested thousands of levels deep: `t3rl plan|run
    --run-dir` end with one line naming the file (a UnicodeDecodeError or a RecursionError before),
    and nothing of the record is written."""
    (run_dir / name).write_bytes(damage)
    before = tree_snapshot(run_dir)
    for command in ("plan", "run"):
        code, out = invoke(command, "--run-dir", str(run_dir))
        if name == "overrides.history.yaml" and command == "plan":
            assert code == 0, out  # a preview does not read the history
            continue
        assert code == 1, out
        assert f"error: {run_dir / name} is corrupt (" in " ".join(out.split()), out
    assert tree_snapshot(run_dir) == before


def test_damaged_overrides_are_named_by_runs_diff(run_dir: Path, recorded: Path) -> None:
    (run_dir / "overrides.yaml").write_bytes(TOO_DEEP)
    code, out = invoke("runs", "diff", str(recorded), str(run_dir))
    assert code == 1, out
    assert f"{run_dir / 'overrides.yaml'} is corrupt (nested more than" in " ".join(out.split()), out


@pytest.mark.parametrize("damage", [NOT_UTF8, TOO_DEEP, b"a: [1\n"], ids=["not-utf8", "too-deep", "not-yaml"])
def test_a_damaged_config_yaml_is_named_kept_under_superseded_and_recorded_anew(
    run_dir: Path, damage: bytes
) -> None:
    """The run's config.yaml damaged: the preview names it and what is wrong (a RecursionError for one
    nested too deep before), the resume keeps it under superseded/ and records the config it runs."""
    config = run_dir / "config.yaml"
    whole = config.read_bytes()
    config.write_bytes(damage)
    code, out = invoke("plan", "--run-dir", str(run_dir))
    assert code == 0, out
    assert f"{config} is corrupt (" in " ".join(out.split()), out
    code, out = invoke("run", "--run-dir", str(run_dir))
    assert code == 0, out
    assert (run_dir / "superseded" / "config.1.yaml").read_bytes() == damage
    assert config.read_bytes() == whole


def test_the_record_is_written_with_the_umask_s_modes(recorded: Path) -> None:
    """Every file of a run's record is readable by whoever may read the run dir (umask 022: 0644, the
    scripts 0755), as its logs are: the files t3rl wrote through a temporary file were 0600."""
    modes = {
        str(path.relative_to(recorded)): stat.S_IMODE(path.lstat().st_mode)
        for path in recorded.rglob("*")
        if path.is_file() and not path.is_symlink()
    }
    assert {"state.json", "config.yaml", "manifest.json", "stages/prepare_data/status.json"} <= set(modes)
    scripts = {name for name in modes if name.endswith(".sh")}
    assert {name: mode for name, mode in modes.items() if mode != (0o755 if name in scripts else 0o644)} == {}


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077, 0o002])
def test_an_atomic_write_keeps_a_file_s_mode_and_gives_a_new_one_the_umask_s(
    tmp_path: Path, mask: int
) -> None:
    before = os.umask(mask)
    try:
        assert umask() == mask
        new, kept = tmp_path / "new.json", tmp_path / "kept.json"
        atomic_write_text(new, "{}", durable=True)
        kept.write_text("old")
        kept.chmod(0o640)
        atomic_write_text(kept, "{}")
    finally:
        os.umask(before)
    assert stat.S_IMODE(new.stat().st_mode) == 0o666 & ~mask
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640
    assert kept.read_text() == "{}"


def test_the_depth_limit_is_outside_json_s(run_dir: Path) -> None:
    """A record as deep as JSON from outside may nest is read; one level more is refused."""
    limit = outside_json.MAX_DEPTH
    history = run_dir / "overrides.history.yaml"
    history.write_text("[" * limit + "]" * limit + "\n")
    assert RunDir(run_dir).read_history()
    history.write_text("[" * (limit + 1) + "]" * (limit + 1) + "\n")
    with pytest.raises(RunDirError, match=f"nested more than {limit} levels deep"):
        RunDir(run_dir).read_history()


def test_a_resume_of_a_run_dir_in_use_is_refused_before_it_shows_config_changes(run_dir: Path) -> None:
    """A second `t3rl run --run-dir` with an override, while another launcher holds the dir: refused at
    once with the holder's pid; it said first that the changed config was kept under superseded/ (the
    refusal came once the config was composed), which it never did."""
    with held_by_another_process(run_dir / ".lock") as holder:
        before = tree_snapshot(run_dir)
        code, out = invoke("run", "--run-dir", str(run_dir), "env.data.test_size=3")
        assert tree_snapshot(run_dir) == before
    assert code == 1, out
    assert f"is in use by another t3rl process (pid {holder})" in " ".join(out.split()), out
    assert "superseded" not in out and "config changes" not in out, out
    # Once it is free, the same command resumes with the override.
    code, out = invoke("run", "--run-dir", str(run_dir), "env.data.test_size=3")
    assert code == 0, out
    assert "env.data.test_size: 4 → 3" in out, out


def test_a_file_size_limit_while_the_record_is_written_names_the_file_and_the_limit(
    run_dir: Path, recorded: Path
) -> None:
    """A resume under a file-size limit (`ulimit -f`, set in the child process) smaller than one record
    file: one line naming the file and the limit to raise (it said to choose another directory, which
    the limit follows), no temporary file left, state.json whole; without the limit the same command
    resumes with the override."""
    limit = 8192  # the record's smaller files fit; provenance.json (one line per key) does not
    assert (run_dir / "provenance.json").stat().st_size > limit > (run_dir / "state.json").stat().st_size
    ran = {
        name: rec["run_id"]
        for name, rec in json.loads((run_dir / "state.json").read_text())["stages"].items()
    }
    t3rl = str(Path(sys.executable).with_name("t3rl"))
    command = [t3rl, "run", "--run-dir", str(run_dir), "env.data.test_size=3"]

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(command, capture_output=True, text=True, preexec_fn=limited, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    line = " ".join(done.stderr.split())
    assert f"error: {run_dir / 'provenance.json'}: File too large" in line, line
    assert f"at most {limit:,} bytes (`ulimit -f`): raise the limit" in line, line
    assert f"t3rl run --run-dir {run_dir}` resumes the run" in line, line
    assert not list(run_dir.rglob(".*.tmp"))
    state = json.loads((run_dir / "state.json").read_text())
    assert {name: rec["run_id"] for name, rec in state["stages"].items()} == ran
    assert state["stages"]["prepare_data"]["status"] == "succeeded"
    assert state["pipeline"]["status"] == "failed"

    done = subprocess.run(command[:4], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    state = json.loads((run_dir / "state.json").read_text())
    assert state["stages"]["prepare_data"]["run_id"] != ran["prepare_data"], done.stdout
    assert "test_size: 3" in (run_dir / "config.yaml").read_text()


def test_a_record_from_before_config_dirs_were_recorded_says_how_to_give_its_dir(
    run_dir: Path, recorded: Path
) -> None:
    """A manifest of an older t3rl names no config dirs: its experiment, from the user's own config dir,
    is unknown on resume; the note says to give the dir with --config-dir, and with it the run resumes
    with nothing run again."""
    manifest = json.loads((run_dir / "manifest.json").read_text())
    del manifest["config_dirs"]
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    code, out = invoke("run", "--run-dir", str(run_dir))
    assert code == 2, out
    assert f"give it again with `t3rl run --run-dir {run_dir} --config-dir DIR`" in " ".join(out.split()), out
    conf = str(recorded.parents[2] / "conf")
    code, out = invoke("run", "--run-dir", str(run_dir), "--config-dir", conf)
    assert code == 0, out
    assert "cached (unchanged since it succeeded)" in out, out


def test_a_previous_config_kept_under_superseded_is_whole_or_absent(run_dir: Path) -> None:
    """The copy of the previous config.yaml a resume keeps under superseded/ is cut short by a file-size
    limit (as by a full disk): no half copy is left under its name (shutil.copy2 left one, kept as the
    run's previous config), and the resume without the limit keeps it whole."""
    config = run_dir / "config.yaml"
    edited = config.read_bytes() + b"# " + b"x" * 65536 + b"\n"  # edited by hand: a comment, no key
    config.write_bytes(edited)
    limit = 32768  # every other file of the record fits
    command = [str(Path(sys.executable).with_name("t3rl")), "run", "--run-dir", str(run_dir)]

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(command, capture_output=True, text=True, preexec_fn=limited, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    kept = run_dir / "superseded" / "config.1.yaml"
    assert f"error: {kept}: File too large" in " ".join(done.stderr.split()), done.stderr
    assert not kept.exists() and not list(run_dir.rglob(".*.tmp"))
    assert config.read_bytes() == edited

    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert kept.read_bytes() == edited
    assert (run_dir / "superseded" / "overrides.1.yaml").is_file()


def test_the_temporary_copy_a_killed_launcher_left_under_superseded_is_removed(run_dir: Path) -> None:
    """A launcher killed while it copied the previous config under superseded/ leaves its temporary
    file; the next launcher of the dir removes it, as it removes those beside the record's files."""
    (run_dir / "superseded").mkdir()
    left = [run_dir / "superseded" / f".{name}.1.yaml.k1ll3d.tmp" for name in ("config", "overrides")]
    for tmp in left:
        tmp.write_text("half a cop")
    code, out = invoke("run", "--run-dir", str(run_dir))
    assert code == 0, out
    assert not [tmp for tmp in left if tmp.exists()]
