"""A demanding user's command lines (helper-24's red-team, docs/reference/cli-behaviour.md): a reader that
goes away, an interrupted write, bad inputs of every kind. Each test failed before its fix."""

from __future__ import annotations

import errno
import io
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from launch.checks.resolve import resolve
from launch.cli import score as score_module
from launch.cli.app import app
from launch.cli.eval_setup import prepared, runtime_of
from launch.config.schema import LocalExecutorConfig
from launch.files import exclusive_lock
from launch.plan.build import Plan
from launch.plan.stages import Stage
from launch.run.executors.local import LocalExecutor
from launch.run.pipeline import run_pipeline
from launch.run.rundir import RunDir, RunDirError, RunState
from t3rl_core.data import publish
from t3rl_core.data.check import problems
from t3rl_core.data.publish import staged
from t3rl_core.envs.bfcl import data as bfcl_data
from t3rl_core.envs.bfcl.data import write_jsonl
from t3rl_core.eval import resume
from tests.support.cli_app import invoke
from tests.support.no_slime import cli_workdir


def _t3rl_into_closed_pipe(here: Path, *argv: str) -> subprocess.CompletedProcess[bytes]:
    """`t3rl ARGV | head -0`, deterministically: the reader is gone before the first write."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-c", "from launch.cli import main; main()", *argv],
            cwd=here,
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=300,
        )
    finally:
        os.close(write)


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "+experiment=quickstart"],
        ["--help"],
        ["runs", "--help"],
        ["ls"],
        ["runs"],
        ["show", "+experiment=quickstart"],
    ],
    ids=["plain-plan", "help", "subcommand-help", "ls", "runs", "show"],
)
def test_a_reader_that_went_away_ends_quietly_with_141(here: Path, argv: list[str]) -> None:
    """`t3rl plan … | head -1` ended with 1 (rich's and Click's way), like a failure: now 141 (128 +
    SIGPIPE, what `seq 99 | head -1` ends with under pipefail) and nothing on stderr."""
    done = _t3rl_into_closed_pipe(here, *argv)
    assert (done.returncode, done.stderr.decode()) == (141, "")


# ---------------------------------------------------------------- prepared data: whole or not at all


def _interrupt_after_first_split(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C once the first split file is written (SIGTERM arrives as the same KeyboardInterrupt)."""
    written: list[Path] = []

    def write_then_stop(rows: Any, path: Path, phase: Any = None) -> Path:
        if written:
            raise KeyboardInterrupt
        written.append(write_jsonl(rows, path, phase))
        return path

    monkeypatch.setattr(bfcl_data, "write_jsonl", write_then_stop)


def test_an_interrupted_data_preparation_leaves_no_directory(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It left `d/` with one split and no manifest, which a later eval (`--data d/…`, or its own
    `<out>/data`) took as prepared."""
    _interrupt_after_first_split(monkeypatch)
    result = invoke(["data", "bfcl", "--out", "d", "env.data.categories=[multi_turn_base]"])
    assert result.exit_code == 130, result.output
    assert sorted(p.name for p in here.iterdir()) == []  # nor a hidden partial dir beside it
    monkeypatch.undo()
    cli_workdir(here, monkeypatch)
    assert invoke(["data", "bfcl", "--out", "d", "env.data.categories=[multi_turn_base]"]).exit_code == 0
    assert problems(here / "d") == []


def test_an_interrupted_preparation_keeps_the_previous_one_whole(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Into a dir already prepared (and holding a file of the user's): the old splits stay, with their
    manifest, and the user's file too."""
    args = ["data", "bfcl", "--out", "d", "env.data.categories=[multi_turn_base]"]
    assert invoke(args).exit_code == 0
    (here / "d" / "notes.txt").write_text("mine\n")
    before = {p.name: p.read_bytes() for p in (here / "d").iterdir()}
    _interrupt_after_first_split(monkeypatch)
    assert invoke([*args, "env.data.seed=7"]).exit_code == 130
    assert {p.name: p.read_bytes() for p in (here / "d").iterdir()} == before
    assert sorted(p.name for p in here.iterdir()) == ["d"]


def test_an_eval_prepares_again_a_split_left_without_its_manifest(here: Path) -> None:
    runtime = runtime_of(resolve(["+experiment=quickstart", "env.data.categories=[multi_turn_base]"]).run)
    data = here / "data"
    data.mkdir()
    (data / "bfcl_test.jsonl").write_text('{"truncated": \n')  # what a stopped preparation left
    path = prepared(runtime, data, "bfcl_test")
    assert problems(data) == [] and path.read_text().count("\n") > 1


# ---------------------------------------------------------------- run and plan records: whole or absent


@pytest.mark.parametrize(
    ("argv", "stop_at"),
    [
        (["plan", "+experiment=quickstart"], "write_stage_command"),
        (["plan", "+experiment=quickstart", "--out", "my plan"], "write_plan_script"),
        (["run", "+experiment=quickstart"], "write_manifest"),
    ],
    ids=["plan-stage-files", "plan-out-record", "run-record"],
)
def test_a_record_stopped_while_written_is_not_left(
    here: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], stop_at: str
) -> None:
    """A plan stopped among its stages' command files, or a run between its config.yaml and its
    manifest, left a dir that `t3rl run --run-dir` took for a run (no manifest saying 'plan') and
    `t3rl plan --out` refused as 'holds a run's record'."""

    def stopped(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(RunDir, stop_at, stopped)
    result = invoke(argv)
    assert result.exit_code == 130, result.output
    assert list(here.iterdir()) == []


def test_a_scoring_stopped_half_way_keeps_the_earlier_one_whole(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It truncated verdicts.jsonl to the lines scored so far beside the earlier summary.json, which
    then described verdicts it no longer matched."""
    lines = [{"id": "a", "response": "<answer>\\boxed{4}</answer>", "answer": "4"}] * 3
    (here / "r.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert invoke(["score", "retool", "r.jsonl", "--no-progress"]).exit_code == 0
    before = {p.name: p.read_bytes() for p in (here / "r.scored").iterdir()}
    scored = 0
    real = score_module._score_line

    def stop_at_the_second(*args: Any) -> dict[str, Any]:
        nonlocal scored
        scored += 1
        if scored == 2:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(score_module, "_score_line", stop_at_the_second)
    assert invoke(["score", "retool", "r.jsonl", "--no-progress"]).exit_code == 130
    after = {p.name: p.read_bytes() for p in (here / "r.scored").iterdir()}
    assert after.pop("verdicts.jsonl.partial").count(b"\n") == 1  # what finished is kept, by its name
    assert after == before


# ---------------------------------------------------------------- arguments refused before any write


def test_an_eval_split_the_env_never_prepares_is_refused_before_writing(here: Path) -> None:
    """`--split bfcl_tset` wrote the eval record, prepared the data, then ended 'unexpectedly' (exit 1,
    'This is a bug') on a FileNotFoundError."""
    result = invoke(["eval", "+experiment=quickstart", "--engine", "reference", "--split", "bfcl_tset"])
    assert result.exit_code == 2 and "did you mean 'bfcl_test'" in result.output, result.output
    assert list(here.iterdir()) == []


def test_a_second_eval_into_the_same_out_leaves_the_first_ones_record(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It rewrote the running eval's config.yaml and manifest, then wrote a failed summary.json into
    it ('in use by another t3rl eval'), which `t3rl runs` showed until the first one finished."""
    monkeypatch.setattr("launch.cli.eval_command._check_tokenizer", lambda *args: None)
    out = here / "e"
    out.mkdir()
    (out / "config.yaml").write_text("the running eval's\n")
    (out / "manifest.json").write_text('{"record": "eval"}\n')
    with exclusive_lock(out / ".lock"):
        result = invoke(["eval", "+experiment=quickstart", "--engine", "reference", "--out", str(out)])
    assert result.exit_code == 1 and "in use" in result.output, result.output
    assert sorted(p.name for p in out.iterdir()) == [".lock", "config.yaml", "manifest.json"]
    assert (out / "config.yaml").read_text() == "the running eval's\n"


def test_a_state_file_of_another_format_names_the_version(tmp_path: Path) -> None:
    """'is not a t3rl state file of version 1' left the user to guess a newer t3rl had written it."""
    with pytest.raises(RunDirError, match="written by another t3rl \\(state format 99"):
        RunState.from_dict({"version": 99, "stages": {}}, tmp_path / "state.json")


# ---------------------------------------------------------------- --help teaches


def _leaves(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    subcommands = getattr(command, "commands", {})
    if not subcommands or getattr(command, "invoke_without_command", False):
        yield path
    for name, sub in sorted(subcommands.items()):
        yield from _leaves(sub, (*path, name))


LEAVES = [path for path in _leaves(typer.main.get_command(app)) if path]


@pytest.mark.parametrize("path", LEAVES, ids=[" ".join(p) for p in LEAVES])
def test_every_commands_help_shows_an_example_of_itself(path: tuple[str, ...]) -> None:
    """`t3rl run --help`, `plan`, `validate`, `ls`, `data bfcl`, `runs`, … listed options only."""
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Example" in result.output and f"t3rl {' '.join(path)} " in result.output, result.output


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "+experiment=quickstart", "--out", ""],
        ["data", "bfcl", "--out", " "],
        ["runs", "show", ""],
        ["runs", "diff", "", "x"],
        ["score", "bfcl", ""],
        ["validate", "+experiment=quickstart", "--config-dir", ""],
    ],
    ids=["plan-out", "data-out", "runs-show", "runs-diff", "score-file", "config-dir"],
)
def test_an_empty_path_is_refused(here: Path, argv: list[str]) -> None:
    """`--out "$UNSET"` was read as `.`: the plan (or the splits) went into the working dir among the
    user's files, and `runs show ""` showed it."""
    result = invoke(argv)
    assert result.exit_code == 2 and "an empty path" in result.output, result.output
    assert list(here.iterdir()) == []


def test_a_data_dir_that_cannot_be_made_is_named_as_given(here: Path) -> None:
    """The error named the hidden sibling the splits are written into (`/proc/.x.partial-…`); it is a
    bad --out, refused before any work (launch/cli/out_option.py)."""
    result = invoke(["data", "bfcl", "--out", "/proc/no/x"])
    assert result.exit_code == 2 and "--out: /proc/no/x cannot be created" in result.output, result.output


def test_two_preparations_into_one_new_dir_both_end_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both found the dir absent; the second's rename onto the first's dir failed (Directory not empty)."""
    monkeypatch.setattr(publish, "_empty_or_absent", lambda out: True)  # as both saw it
    out = tmp_path / "d"
    with staged(out, "manifest.json") as (first, publish_first):
        (first / "a.jsonl").write_text("1\n")
        (first / "manifest.json").write_text("{}\n")
        with staged(out, "manifest.json") as (second, publish_second):
            (second / "a.jsonl").write_text("2\n")
            (second / "manifest.json").write_text("{}\n")
            publish_first()
            publish_second()
    assert (out / "a.jsonl").read_text() == "2\n" and sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_an_eval_stopped_says_what_is_kept_and_how_to_resume(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It printed only 'stopped: …': that the finished episodes were kept, and --resume, went unsaid."""
    monkeypatch.setattr("launch.cli.eval_command._check_tokenizer", lambda *args: None)
    monkeypatch.setattr(
        "launch.cli.eval_setup.prepared", lambda runtime, data, split: data / f"{split}.jsonl"
    )

    def stopped_after_two(runtime: Any, config: Any, data: Path, out: Path, **kwargs: Any) -> None:
        (out / "trajectories.jsonl").write_text('{"task_id": "a"}\n{"task_id": "b"}\n')
        raise KeyboardInterrupt

    monkeypatch.setattr("t3rl_core.eval.evaluate.evaluate", stopped_after_two)
    result = invoke(["eval", "+experiment=quickstart", "--engine", "reference", "--out", "my eval"])
    assert result.exit_code == 130, result.output
    assert "2 finished episode(s) kept" in result.output and "--out 'my eval' --resume" in result.output


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["runs", "show", "nosuch"], "nosuch is not a t3rl run dir: it does not exist"),
        (["runs", "show", "a file"], "a file is not a t3rl run dir: it is a file"),
        (["runs", "diff", "[dir]", "nosuch"], "[dir] is not a t3rl run dir"),
        (["runs", "diff", "sweep", "nosuch"], "sweep is not a t3rl run dir: it is a sweep"),
    ],
    ids=["missing", "a-file", "bracketed-name", "a-sweep"],
)
def test_a_path_that_is_no_run_dir_says_what_it_is(here: Path, argv: list[str], says: str) -> None:
    """Each was 'is not a t3rl run dir (no config.yaml)', and a name in brackets lost them (rich markup)."""
    (here / "a file").write_text("x\n")
    (here / "[dir]").mkdir()
    (here / "sweep").mkdir()
    (here / "sweep" / "sweep.json").write_text('{"name": "sweep-x", "points": []}\n')
    result = invoke(argv)
    assert result.exit_code == 1 and says in result.output, result.output


# ---------------------------------------------------------------- text in brackets is text


def test_an_override_or_path_in_brackets_is_printed_as_given(here: Path) -> None:
    """rich read `[multi_turn_base]` as markup: `run it:` printed `'eval.categories='`, a command that
    runs another config, and a plan dir `[b]/p` was shown as `/p`."""
    override = "eval.categories=[multi_turn_base]"
    result = invoke(["plan", "+experiment=quickstart", override, "--out", "[b]/p"])
    assert result.exit_code == 0, result.output
    assert f"run it:  t3rl run +experiment=quickstart '{override}'" in result.output
    assert f"planned: {here / '[b]' / 'p'}" in result.output
    result = invoke(["rollouts", "show", "[b]"])
    assert result.exit_code == 2 and "[b] holds no .pt rollout files" in result.output, result.output
    result = invoke(["data", "bfcl", "--out", "[d]", "env.data.categories=[multi_turn_base]"])
    assert result.exit_code == 0 and "bfcl_multi_turn → [d]" in result.output, result.output


def test_a_resume_whose_recorded_overrides_no_longer_compose_says_where_they_come_from(
    here: Path,
) -> None:
    """The error blamed 'override `eval.new_key=3`', which the user never typed: it was in the record a
    t3rl of another version wrote."""
    assert invoke(["plan", "+experiment=quickstart", "--out", "r"]).exit_code == 0
    (here / "r" / "overrides.yaml").write_text("- +experiment=quickstart\n- eval.new_key=3\n")
    (here / "r" / "manifest.json").write_text(json.dumps({"record": "run", "t3rl_version": "9.9.9"}))
    result = invoke(["plan", "--run-dir", "r"])
    assert result.exit_code == 2, result.output
    assert f"recorded in {here / 'r' / 'overrides.yaml'} by t3rl 9.9.9" in result.output
    assert "'~KEY'" in result.output
    assert invoke(["plan", "--run-dir", "r", "~eval.new_key"]).exit_code == 0  # the drop it proposes


def test_score_data_that_is_empty_is_refused(here: Path) -> None:
    """`--data empty.jsonl` scored every line without its row and exited 0."""
    (here / "t.jsonl").write_text('{"id": "multi_turn_base_1", "decoded": []}\n')
    (here / "empty.jsonl").write_text("\n")
    result = invoke(["score", "bfcl", "t.jsonl", "--data", "empty.jsonl", "--no-progress"])
    assert result.exit_code == 2 and "holds no row" in result.output, result.output
    assert sorted(p.name for p in here.iterdir()) == ["empty.jsonl", "t.jsonl"]


def test_a_plan_is_never_written_among_other_files(here: Path) -> None:
    """`t3rl plan --out .` (or `~`) wrote config.yaml, plan.sh, runtime/, stages/ among the user's files."""
    (here / "notes.txt").write_text("mine\n")
    result = invoke(["plan", "+experiment=quickstart", "--out", "."])
    assert result.exit_code == 1 and "holds other files (notes.txt)" in result.output, result.output
    assert sorted(p.name for p in here.iterdir()) == ["notes.txt"]
    (here / "empty").mkdir()
    assert invoke(["plan", "+experiment=quickstart", "--out", "empty"]).exit_code == 0
    assert invoke(["plan", "+experiment=quickstart", "--out", "empty"]).exit_code == 0  # over its own plan


def test_an_eval_never_writes_over_a_run_or_among_other_files(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`t3rl eval --out <run dir>` rewrote the run's config and manifest (`record: eval`), after which
    `t3rl run --run-dir` refused the run as an eval's record; `--out .` wrote among the user's files."""
    monkeypatch.setattr("launch.cli.eval_command._check_tokenizer", lambda *args: None)
    assert invoke(["plan", "+experiment=quickstart", "--out", "p"]).exit_code == 0
    before = {p: p.read_bytes() for p in (here / "p").rglob("*") if p.is_file()}
    (here / "notes.txt").write_text("mine\n")
    for out, says in (("p", "holds a plan's record"), (".", "holds other files")):
        result = invoke(["eval", "+experiment=quickstart", "--engine", "reference", "--out", out])
        assert result.exit_code == 2 and says in result.output, result.output
    assert {p: p.read_bytes() for p in (here / "p").rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in here.iterdir()) == ["notes.txt", "p"]


def test_score_never_writes_into_a_record(here: Path) -> None:
    """`--out <an eval's record>` replaced the eval's summary.json with the scoring's."""
    (here / "t.jsonl").write_text('{"id": "a", "response": "<answer>4</answer>", "answer": "4"}\n')
    record = here / "eval-record"
    record.mkdir()
    (record / "config.yaml").write_text("eval: {}\n")
    (record / "summary.json").write_text('{"complete": true}\n')
    result = invoke(["score", "retool", "t.jsonl", "--out", str(record), "--no-progress"])
    assert result.exit_code == 2 and "holds a run's or an eval's record" in result.output, result.output
    assert sorted(p.name for p in record.iterdir()) == ["config.yaml", "summary.json"]


def test_data_never_writes_into_a_record(here: Path) -> None:
    """`t3rl data bfcl --out <plan dir>` replaced the plan's manifest.json with the data's."""
    assert invoke(["plan", "+experiment=quickstart", "--out", "p"]).exit_code == 0
    manifest = (here / "p" / "manifest.json").read_bytes()
    result = invoke(["data", "bfcl", "--out", "p"])
    assert result.exit_code == 2 and "holds a run's, plan's or eval's record" in result.output, result.output
    assert (here / "p" / "manifest.json").read_bytes() == manifest


def test_a_config_dir_that_is_a_file_says_so(here: Path) -> None:
    """It said 'does not exist' of a file that is there."""
    (here / "mine.yaml").write_text("a: 1\n")
    result = invoke(["validate", "+experiment=quickstart", "--config-dir", "mine.yaml"])
    assert result.exit_code == 2 and "mine.yaml is a file" in result.output, result.output


# ---------------------------------------------------------------- an eval's record: nothing lost


def test_a_resume_that_fails_while_it_rewrites_the_record_loses_no_episode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resume rewrote trajectories.jsonl in place: a write that failed part-way (a full disk) after
    truncating it lost every finished episode of the interrupted eval."""
    trajectories = tmp_path / "trajectories.jsonl"
    with trajectories.open("w") as sink, (tmp_path / resume.INDEX_FILE).open("w") as index:
        for task in ("a", "b"):
            resume.write(sink, index, (task, 0, 0), json.dumps({"task_id": task, "sample": 0}) + "\n", "j", 1)
    kept = trajectories.read_bytes()

    real_open = io.open

    class FullDisk:
        """A file opened for writing (so truncated) whose writes fail: the disk is full."""

        def __init__(self, handle: Any) -> None:
            self.handle = handle

        def __enter__(self) -> FullDisk:
            return self

        def __exit__(self, *args: Any) -> None:
            self.handle.close()

        def write(self, text: str) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    def full_disk_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(file, mode, *args, **kwargs)
        return FullDisk(handle) if "w" in mode else handle

    monkeypatch.setattr(io, "open", full_disk_open)
    with pytest.raises(OSError):
        resume.load(tmp_path, trajectories, {("a", 0, 0): "j", ("b", 0, 0): "j"})
    assert trajectories.read_bytes() == kept


def test_resume_without_out_is_refused(here: Path) -> None:
    """`t3rl eval --resume` without --out made a new record: there was nothing to resume, silently."""
    result = invoke(["eval", "+experiment=quickstart", "--engine", "reference", "--resume"])
    assert result.exit_code == 2 and "--out DIR" in result.output, result.output
    assert list(here.iterdir()) == []


def test_a_recorded_path_that_is_not_utf8_is_refused(here: Path) -> None:
    """`t3rl plan --out $'p\\xff'` ended 'unexpectedly' (UnicodeEncodeError writing plan.sh)."""
    result = invoke(["plan", "+experiment=quickstart", "--out", "p\udcff"])
    assert result.exit_code == 2 and "not UTF-8 text" in result.output, result.output
    assert list(here.iterdir()) == []
    assert invoke(["plan", "+experiment=quickstart", "--out", "plän"]).exit_code == 0  # UTF-8 is fine


def test_a_working_dir_that_is_not_utf8_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From a dir named in another encoding, `t3rl plan` ended 'unexpectedly' (UnicodeEncodeError)."""
    here = cli_workdir(tmp_path / "w\udcff", monkeypatch)
    result = invoke(["plan", "+experiment=quickstart"])
    assert result.exit_code == 1 and "is not UTF-8 text" in result.output and "w\\udcff" in result.output
    assert list(here.iterdir()) == []


def test_a_second_scoring_into_the_same_dir_is_refused(here: Path) -> None:
    """Two scorings into one dir wrote one verdicts.jsonl.partial, each truncating the other's."""
    (here / "t.jsonl").write_text('{"id": "a", "response": "<answer>4</answer>", "answer": "4"}\n')
    (here / "t.scored").mkdir()
    with exclusive_lock(here / "t.scored"):
        result = invoke(["score", "retool", "t.jsonl", "--no-progress"])
    assert result.exit_code == 1 and "in use by another t3rl score" in result.output, result.output
    assert list((here / "t.scored").iterdir()) == []


# ---------------------------------------------------------------- rollouts show


def _rollouts(path: Path, responses: list[str]) -> Path:
    import torch  # lazy: torch only for the tests that write slime's rollout files

    samples = [
        {"tokens": [1, 2, 3, 4], "response_length": 2, "loss_mask": [1, 1], "reward": 1.0, "prompt": "hi",
         "response": response, "status": "completed"}
        for response in responses
    ]  # fmt: skip
    torch.save({"rollout_id": 0, "samples": samples}, path)
    return path


def test_rollouts_show_prints_the_models_text_as_it_is(here: Path) -> None:
    """A response holding `[think]` or `[/INST]` lost it: rich took it for markup (or failed on `[/INST]`)."""
    _rollouts(here / "rollout_data_0.pt", ["[think]plan[/think] ok [/INST]"])
    result = invoke(["rollouts", "show", "rollout_data_0.pt", "--width", "80"])
    assert result.exit_code == 0 and "[think]plan[/think] ok [/INST]" in result.output, result.output


def test_rollouts_show_full_of_a_sample_no_file_has_is_refused(here: Path) -> None:
    """`--full 999` of a file of 2 samples printed nothing about it, exit 0."""
    _rollouts(here / "rollout_data_0.pt", ["a", "b"])
    result = invoke(["rollouts", "show", "rollout_data_0.pt", "--full", "999"])
    assert result.exit_code == 2 and "--full 999: no such sample" in result.output, result.output


def test_a_planned_sweep_stopped_mid_record_leaves_no_point_that_reads_as_a_run(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A point's config.yaml was written before its manifest: stopped between them (the manifest waits on
    `git status`), the point read as a run, and `t3rl run --run-dir` would have run the plan's stages."""

    def stopped(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(RunDir, "write_manifest", stopped)
    result = invoke(["plan", "-m", "+experiment=quickstart", "env.data.seed=1,2"])
    assert result.exit_code == 130, result.output
    assert [p for p in here.rglob("config.yaml") if not RunDir(p.parent).is_plan()] == []


def test_runs_dir_that_is_a_run_dir_points_at_runs_show(here: Path) -> None:
    """`t3rl runs --runs-dir <a run dir>` listed 0 runs, as if there were none."""
    assert invoke(["plan", "+experiment=quickstart", "--out", "p"]).exit_code == 0
    result = invoke(["runs", "--runs-dir", "p"])
    assert result.exit_code == 2 and "`t3rl runs show p` shows it" in result.output, result.output


def test_the_temporary_dir_of_a_killed_preparation_is_removed_by_the_next(tmp_path: Path) -> None:
    """A preparation killed with SIGKILL left its hidden `.d.partial-…` dir beside `d` for good."""
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    prefix = f".d.partial-{socket.gethostname()}-"
    abandoned = tmp_path / f"{prefix}{int(dead.stdout)}-x1"
    running = tmp_path / f"{prefix}{os.getpid()}-x2"  # a preparation still under way
    for staging in (abandoned, running):
        staging.mkdir()
    with staged(tmp_path / "d", "manifest.json") as (staging, publish_it):
        (staging / "manifest.json").write_text("{}\n")
        publish_it()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([running.name, "d"])


def test_score_shows_progress_lines_when_nothing_is_redrawn(here: Path) -> None:
    """In a log or CI, rich's bar draws nothing: a long scoring (tau2, verifiers) showed no progress."""
    line = json.dumps({"id": "a", "response": "<answer>\\boxed{4}</answer>", "answer": "4"})
    (here / "t.jsonl").write_text(f"{line}\n{line}\n{line}\n")
    result = invoke(["score", "retool", "t.jsonl"])
    assert result.exit_code == 0 and "score progress: 3/3 lines scored" in result.output, result.output


def test_a_planned_sweep_stopped_early_is_never_run(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`t3rl run --run-dir <planned sweep>` was told a plan only by a point's manifest: stopped before any
    point was written, it tried to run the points ('p00 has no overrides.yaml')."""

    def stopped(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(RunDir, "write_manifest", stopped)
        assert invoke(["plan", "-m", "+experiment=quickstart", "env.data.seed=1,2"]).exit_code == 130
    (sweep,) = here.glob("plans/quickstart/sweep-*")
    result = invoke(["run", "--run-dir", str(sweep)])
    assert result.exit_code == 1 and "was planned by `t3rl plan -m`, not run" in result.output, result.output


# ---------------------------------------------------------------- t3rl run | head


class _ClosedPipe(io.StringIO):
    """stdout whose reader went away: every write fails as it would with EPIPE."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def test_a_stage_whose_output_has_no_reader_still_ends(tmp_path: Path) -> None:
    """The thread echoing a stage's output died on EPIPE; the stage then blocked on its full pipe and
    `t3rl run … | head` waited forever. It now goes on: the output still reaches the stage's log."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    script = "for i in $(seq 1 3000); do echo line $i of a stage that says a lot; done"
    plan = Plan("t", run_dir, (Stage("s", "prepare_data", (script,)),))
    executor = LocalExecutor(LocalExecutorConfig(stop_grace_s=1.0), out=_ClosedPipe())
    finished: list[Any] = []
    worker = threading.Thread(target=lambda: finished.append(run_pipeline(plan, RunDir(run_dir), executor)))
    worker.start()
    worker.join(timeout=120)
    assert finished and finished[0].status == "succeeded", "the stage never ended"
    assert "line 3000 of a stage" in (run_dir / "stages" / "s" / "log.txt").read_text()


def test_a_run_whose_output_has_no_reader_records_the_stage_stopped(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`t3rl run … | head -1` left the stage it was starting `running` in state.json, with no process."""

    def reader_gone(*args: Any) -> None:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    monkeypatch.setattr("launch.run.reporter.RichReporter.stage_started", reader_gone)
    invoke(["run", "+experiment=quickstart"])
    (state,) = here.glob("runs/quickstart/*/state.json")
    stages = json.loads(state.read_text())["stages"]
    assert stages["prepare_data"]["status"] == "stopped", stages
    assert "reader of t3rl's output went away" in stages["prepare_data"]["message"]


def test_an_eval_prepares_again_a_split_its_manifest_does_not_list(here: Path) -> None:
    """A split file left by another preparation beside an intact manifest was taken as prepared."""
    runtime = runtime_of(resolve(["+experiment=quickstart", "env.data.categories=[multi_turn_base]"]).run)
    data = here / "data"
    prepared(runtime, data, "bfcl_test")
    manifest = json.loads((data / "manifest.json").read_text())
    del manifest["splits"]["bfcl_val"]  # as if another preparation had written bfcl_val.jsonl
    (data / "manifest.json").write_text(json.dumps(manifest))
    (data / "bfcl_val.jsonl").write_text('{"stale": true}\n')
    prepared(runtime, data, "bfcl_val")
    assert "stale" not in (data / "bfcl_val.jsonl").read_text() and problems(data) == []
