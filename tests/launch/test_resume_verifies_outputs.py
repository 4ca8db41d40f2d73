"""Resume checks what a finished stage wrote, never a marker alone (issue 8 §2).

Each case injects one fault into a finished run, resumes it, and checks which stages run again and
the one-line reason the decision gives.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from pipeline_helpers import count, run, stage

from launch.plan.build import Plan


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    run_dir, marks = tmp_path / "run", tmp_path / "marks"
    run_dir.mkdir()
    marks.mkdir()
    return run_dir, marks


def data_eval_plan(run_dir: Path, marks: Path, cache: Path | None = None) -> Plan:
    """data → checkpoint (a directory of shards and an index) → eval (a summary), each reading the one
    before, every output declared."""
    data = run_dir / "stages" / "data" / "data" / "train.jsonl"
    ckpt = (cache or run_dir / "stages" / "ckpt") / "model"
    summary = run_dir / "stages" / "eval" / "summary.json"
    write_data = f'mkdir -p {data.parent} && echo \'{{"prompt": "hi"}}\' > {data}'
    write_ckpt = (
        f"mkdir -p {ckpt} && head -c 4096 /dev/zero > {ckpt}/shard-1.bin && "
        f'echo \'{{"weights": ["shard-1.bin"]}}\' > {ckpt}/index.json && touch {ckpt}/.done'
    )
    write_summary = f'echo \'{{"overall": {{"accuracy": 0.5}}}}\' > {summary}'
    complete = (str(ckpt / ".done"),) if cache else ()
    return Plan(
        "test",
        run_dir,
        (
            stage("data", marks, write_data, verify=(str(data),)),
            stage("ckpt", marks, write_ckpt, reads=("data",), verify=(str(ckpt),), complete_when=complete),
            stage("eval", marks, write_summary, reads=("ckpt",), verify=(str(summary),)),
        ),
    )


def resume(plan: Plan, run_dir: Path) -> list[tuple[str, str]]:
    result = run(plan, run_dir)
    assert result.status == "succeeded"
    return [(d.action, d.reason) for d in result.decisions]


def test_an_intact_run_is_skipped_whole_and_records_a_digest_per_output(dirs):
    run_dir, marks = dirs
    plan = data_eval_plan(run_dir, marks)
    resume(plan, run_dir)
    assert [a for a, _ in resume(plan, run_dir)] == ["cached"] * 3
    record = json.loads((run_dir / "state.json").read_text())["stages"]["data"]
    digests = record["outputs"]
    assert set(digests) == {
        str(run_dir / "stages/data/data/train.jsonl"),
        str(run_dir / "stages/data/outputs.json"),
    }
    assert all(value.startswith("sha256:") for value in digests.values())


def test_a_deleted_eval_summary_reruns_the_eval_and_says_why(dirs):
    run_dir, marks = dirs
    plan = data_eval_plan(run_dir, marks)
    resume(plan, run_dir)
    (run_dir / "stages" / "eval" / "summary.json").unlink()
    assert resume(plan, run_dir) == [
        ("cached", "unchanged since it succeeded"),
        ("cached", "unchanged since it succeeded"),
        ("run", "output damaged: stages/eval/summary.json is missing"),
    ]
    assert (run_dir / "stages" / "eval" / "summary.json").exists()
    # The damaged stage dir is kept for a look, not deleted.
    assert (run_dir / "superseded" / "eval.1" / "log.txt").exists()


def test_an_emptied_outputs_json_reruns_that_stage_and_everything_after(dirs):
    run_dir, marks = dirs
    plan = data_eval_plan(run_dir, marks)
    resume(plan, run_dir)
    (run_dir / "stages" / "ckpt" / "outputs.json").write_text("")
    decisions = resume(plan, run_dir)
    assert decisions[1] == (
        "run",
        "output damaged: stages/ckpt/outputs.json changed since the stage finished (content differs)",
    )
    assert decisions[2] == ("run", "upstream ran again: ckpt")
    assert [count(marks, n, "done") for n in ("data", "ckpt", "eval")] == [1, 2, 2]


def test_garbage_in_a_prepared_data_file_reruns_data_and_everything_after(dirs):
    run_dir, marks = dirs
    plan = data_eval_plan(run_dir, marks)
    resume(plan, run_dir)
    data = run_dir / "stages" / "data" / "data" / "train.jsonl"
    stat = data.stat()
    # Same size and mtime: only the content hash can tell.
    data.write_bytes(b"x" * stat.st_size)
    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    decisions = resume(plan, run_dir)
    assert [a for a, _ in decisions] == ["run", "run", "run"]
    assert decisions[0][1] == (
        "output damaged: stages/data/data/train.jsonl changed since the stage finished (content differs)"
    )
    assert json.loads(data.read_text()) == {"prompt": "hi"}


@pytest.mark.parametrize("damage", ["truncated shard", "edited index, same size and mtime", "lost file"])
def test_a_damaged_checkpoint_is_caught_by_its_fingerprint(dirs, damage):
    run_dir, marks = dirs
    plan = data_eval_plan(run_dir, marks)
    resume(plan, run_dir)
    ckpt = run_dir / "stages" / "ckpt" / "model"
    if damage == "truncated shard":
        with (ckpt / "shard-1.bin").open("r+b") as handle:
            handle.truncate(100)
    elif damage == "lost file":
        (ckpt / "index.json").unlink()
    else:
        index = ckpt / "index.json"
        stat = index.stat()
        index.write_text(index.read_text().replace("shard-1", "shard-9"))
        os.utime(index, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    decisions = resume(plan, run_dir)
    assert [a for a, _ in decisions] == ["cached", "run", "run"]
    assert decisions[1][1].startswith("output damaged: stages/ckpt/model changed since the stage finished")


def test_a_damaged_output_in_a_shared_cache_is_rebuilt_not_adopted_by_its_marker(dirs, tmp_path):
    run_dir, marks = dirs
    plan = data_eval_plan(run_dir, marks, cache=tmp_path / "cache")
    resume(plan, run_dir)
    shard = tmp_path / "cache" / "model" / "shard-1.bin"
    shard.write_bytes(b"")
    decisions = resume(plan, run_dir)
    assert [a for a, _ in decisions] == ["cached", "run", "run"]
    assert shard.stat().st_size == 4096


def test_a_stage_that_exits_0_without_its_declared_output_has_failed(dirs):
    run_dir, marks = dirs
    summary = run_dir / "stages" / "eval" / "summary.json"
    plan = Plan("test", run_dir, (stage("eval", marks, "true", verify=(str(summary),)),))
    result = run(plan, run_dir)
    assert result.status == "failed"
    assert result.results["eval"].message == "exited 0 but did not write stages/eval/summary.json"
    record = json.loads((run_dir / "state.json").read_text())["stages"]["eval"]
    assert record["status"] == "failed" and record["returncode"] == 0


def test_a_launcher_killed_mid_stage_leaves_a_record_that_says_so_and_a_preview_touches_nothing(dirs):
    import signal
    import subprocess
    import sys
    import time

    from pipeline_helpers import three_stage_plan

    from launch.cli.runs import load_run
    from launch.run.pipeline import preview
    from launch.run.rundir import RunDir

    run_dir, marks = dirs
    middle = f"echo $$ > {marks}/b.pid\nsleep 30"
    helpers = Path(__file__).with_name("pipeline_helpers.py")
    search_path = os.pathsep.join([str(helpers.parent), os.environ.get("PYTHONPATH", "")])
    child = subprocess.Popen(
        [sys.executable, str(helpers), str(run_dir), str(marks), middle],
        env={**os.environ, "PYTHONPATH": search_path},
    )
    state = run_dir / "state.json"
    deadline = time.monotonic() + 30
    while not state.exists() or not json.loads(state.read_text())["stages"].get("b", {}).get("handle"):
        assert time.monotonic() < deadline and child.poll() is None
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    try:
        record = json.loads(state.read_text())["stages"]["b"]
        assert record["status"] == "running" and record["outputs"] == {}
        # No t3rl process holds the run dir: readers show the stage interrupted.
        assert {s.name: s.status for s in load_run_view(run_dir, load_run)} == {
            "a": "succeeded",
            "b": "interrupted",
            "c": "planned",
        }
        before = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
        result = preview(three_stage_plan(run_dir, marks, middle), RunDir(run_dir))
        assert [(d.action, d.reason) for d in result.decisions] == [
            ("cached", "unchanged since it succeeded"),
            ("resume", "unfinished (running); same command"),
            ("run", "never ran"),
        ]
        assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == before
    finally:
        os.killpg(json.loads(state.read_text())["stages"]["b"]["handle"]["pgid"], signal.SIGKILL)


def load_run_view(run_dir: Path, load_run):
    """The stages of `t3rl runs` for a run dir without a config.yaml (a plan built in the test)."""
    (run_dir / "config.yaml").write_text("stages: {a: {}, b: {}, c: {}}\n")
    try:
        return load_run(run_dir).stages
    finally:
        (run_dir / "config.yaml").unlink()


def test_a_data_file_that_disagrees_with_its_data_manifest_fails_its_stage(dirs):
    run_dir, marks = dirs
    data = run_dir / "stages" / "data" / "data"
    split = data / "train.jsonl"
    manifest = {"splits": {"train": {"file": "train.jsonl", "sha256": "0" * 64}}}
    write = (
        f"mkdir -p {data} && echo '{{}}' > {split} && echo '{json.dumps(manifest)}' > {data}/manifest.json"
    )
    plan = Plan(
        "test", run_dir, (stage("data", marks, write, verify=(str(split), str(data / "manifest.json"))),)
    )
    result = run(plan, run_dir)
    assert result.status == "failed"
    assert result.results["data"].message == (
        "stages/data/data/train.jsonl does not match the sha256 its data manifest records"
    )


def test_a_shared_output_another_run_builds_meanwhile_is_waited_for_and_adopted(dirs, tmp_path):
    import fcntl
    import threading

    run_dir, marks = dirs
    plan = data_eval_plan(run_dir, marks, cache=tmp_path / "cache")
    model = tmp_path / "cache" / "model"
    model.mkdir(parents=True)
    lock = os.open(str(model) + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(lock, fcntl.LOCK_EX)  # another run is building the shared checkpoint
    outcome: list[object] = []
    runner = threading.Thread(target=lambda: outcome.append(run(plan, run_dir)))
    runner.start()
    inode = os.fstat(lock).st_ino
    deadline = time.monotonic() + 120
    while not _blocked_on(inode):  # the run reached the shared stage and waits for the other builder
        assert time.monotonic() < deadline and runner.is_alive()
        time.sleep(0.05)
    (model / "shard-1.bin").write_bytes(b"\0" * 4096)
    (model / "index.json").write_text('{"weights": ["shard-1.bin"]}')
    (model / ".done").touch()
    fcntl.flock(lock, fcntl.LOCK_UN)
    os.close(lock)
    runner.join(120)
    assert outcome and outcome[0].status == "succeeded"
    assert count(marks, "ckpt", "started") == 0  # built once, by the other run; adopted here
    assert count(marks, "eval", "done") == 1


def _blocked_on(inode: int) -> bool:
    """Whether some process waits for an flock on the file with this inode (/proc/locks marks a
    blocked request with `->`)."""
    lines = Path("/proc/locks").read_text().splitlines()
    return any("->" in line and f":{inode} " in line for line in lines)
