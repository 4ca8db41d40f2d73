"""`t3rl runs` reads a finished stage's outputs as a resume, `t3rl runs show` and a sweep point's outcome
do (launch.run.output_digest.output_damage): a run whose outputs changed since a stage finished is
listed `damaged` (its stage marked ≠), the first change named in one line below the table, in `--json`
and by `--status damaged`; an intact run, moved or copied elsewhere, stays succeeded. (It listed every
such run as succeeded before: it read state.json only.)

Each case is a small run dir written here, its outputs digested as t3rl records them; no config is
composed.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from launch.cli.runs import list_runs, load_run, show_run
from launch.cli.runs_filter import RunFilter
from launch.run import output_digest
from launch.run.output_digest import FileHashes, digests
from launch.run.point_record import point_outcome

STAGES = ("prepare_data", "train", "eval")


def _run(runs: Path, name: str, *, skipped: str | None = None) -> Path:
    """A finished run of three stages: data, a checkpoint dir of shards, an eval summary."""
    run = runs / "exp" / name
    hashes = FileHashes()
    records = {}
    for stage in STAGES:
        out = run / "stages" / stage
        out.mkdir(parents=True)
        (out / "outputs.json").write_text(json.dumps({"stage": stage}))
        paths = [out / "outputs.json"]
        if stage == "prepare_data":
            (out / "train.jsonl").write_text('{"q": 1}\n' * 10)
            paths.append(out / "train.jsonl")
        elif stage == "train":
            (out / "checkpoint").mkdir()
            for shard in range(3):
                (out / "checkpoint" / f"shard{shard}.bin").write_bytes(bytes([shard]) * 64)
            paths.append(out / "checkpoint")
        else:
            (out / "summary.json").write_text(json.dumps({"complete": True, "overall": {"accuracy": 0.5}}))
            paths.append(out / "summary.json")
        records[stage] = {
            "status": "skipped" if stage == skipped else "succeeded",
            "fingerprint": "0123456789abcdef",
            "run_id": f"{name}-{stage}",
            "upstream": {},
            "attempts": 1,
            "outputs": digests([str(p) for p in paths], hashes),
        }
    (run / "config.yaml").write_text("stages:\n" + "".join(f"  {s}: {{kind: {s}}}\n" for s in STAGES))
    state = {"run_dir": str(run.resolve()), "stages": records, "pipeline": {"status": "succeeded"}}
    (run / "state.json").write_text(json.dumps(state))
    hashes.save(run / "file_hashes.json")
    return run


def _rewrite(path: Path, data: bytes) -> None:
    path.write_bytes(data)


# Each kind of damage: (what it does to a run dir, the stage it damages, the one line naming it).
DAMAGE: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "data changed": (
        lambda run: _rewrite(run / "stages/prepare_data/train.jsonl", b'{"q": 2}\n'),
        "prepare_data",
        "stages/prepare_data/train.jsonl changed since the stage finished (content differs)",
    ),
    "data deleted": (
        lambda run: (run / "stages/prepare_data/train.jsonl").unlink(),
        "prepare_data",
        "stages/prepare_data/train.jsonl is missing",
    ),
    "a shard lost": (
        lambda run: (run / "stages/train/checkpoint/shard1.bin").unlink(),
        "train",
        "stages/train/checkpoint changed since the stage finished (its files or their content differ)",
    ),
    "a shard changed, same size": (
        lambda run: _rewrite(run / "stages/train/checkpoint/shard2.bin", b"\x07" * 64),
        "train",
        "stages/train/checkpoint changed since the stage finished (its files or their content differ)",
    ),
    "checkpoint deleted": (
        lambda run: shutil.rmtree(run / "stages/train/checkpoint"),
        "train",
        "stages/train/checkpoint is missing",
    ),
    "summary emptied": (
        lambda run: _rewrite(run / "stages/eval/summary.json", b""),
        "eval",
        "stages/eval/summary.json changed since the stage finished (content differs)",
    ),
    "outputs.json deleted": (
        lambda run: (run / "stages/eval/outputs.json").unlink(),
        "eval",
        "stages/eval/outputs.json is missing",
    ),
}


def _listed(runs: Path, *, status: str | None = None, as_json: bool = False) -> tuple[int, str]:
    out = io.StringIO()
    console = Console(file=out, width=400, highlight=False)
    if as_json:  # printed to stdout, as a script reads it
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("sys.stdout", out)
            code = list_runs(runs, console, filters=RunFilter(status=status), as_json=True)
    else:
        code = list_runs(runs, console, filters=RunFilter(status=status))
    return code, out.getvalue()


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_run_is_listed_damaged_with_its_reason(tmp_path: Path, damage: str) -> None:
    runs = tmp_path / "runs"
    _run(runs, "intact")
    run = _run(runs, "hurt")
    how, stage, reason = DAMAGE[damage]
    how(run)
    code, out = _listed(runs)
    assert code == 0, out
    rows = {
        name: next(line for line in out.splitlines() if f" exp/{name} " in line)
        for name in ("intact", "hurt")
    }
    assert "≠ damaged" in rows["hurt"] and f"≠ {stage}" in rows["hurt"], out
    assert "✓ succeeded" in rows["intact"] and "≠" not in rows["intact"], out
    line = f"≠ exp/hurt: stage {stage}: {reason} (`t3rl run --run-dir` reruns it)"
    assert line in out.splitlines(), out
    # --status damaged keeps it alone; --json says it with the same line.
    assert "exp/intact" not in _listed(runs, status="damaged")[1]
    listed = {entry["run"]: entry for entry in json.loads(_listed(runs, as_json=True)[1])}
    assert (listed["exp/hurt"]["status"], listed["exp/hurt"]["damage"]) == (
        "damaged",
        f"stage {stage}: {reason}",
    )
    assert listed["exp/hurt"]["stages"][stage] == "damaged"
    assert (listed["exp/intact"]["status"], listed["exp/intact"]["damage"]) == ("succeeded", None)


@pytest.mark.parametrize("damage", ["data changed", "summary emptied"])
def test_the_listing_show_and_a_sweep_point_name_the_same_damage(tmp_path: Path, damage: str) -> None:
    """One reader: `t3rl runs`, `t3rl runs show` and a sweep point's outcome say the same line."""
    run = _run(tmp_path / "runs", "hurt")
    how, stage, reason = DAMAGE[damage]
    how(run)
    assert load_run(run).damage == f"stage {stage}: {reason}"
    out = io.StringIO()
    assert show_run(run, Console(file=out, width=400, highlight=False)) == 0
    assert f"{reason} (`t3rl run --run-dir` reruns it)" in out.getvalue(), out.getvalue()
    outcome = point_outcome(str(run), None)
    assert (outcome.status, outcome.error) == ("damaged", f"stage {stage}: output damaged: {reason}")


def test_a_skipped_stage_s_damage_counts_too(tmp_path: Path) -> None:
    run = _run(tmp_path / "runs", "hurt", skipped="eval")
    assert load_run(run).status == "succeeded"
    DAMAGE["summary emptied"][0](run)
    assert (load_run(run).status, [s.status for s in load_run(run).stages][-1]) == ("damaged", "damaged")


def test_an_intact_run_moved_elsewhere_stays_succeeded(tmp_path: Path) -> None:
    """Its record's digests are keyed below the dir it was written in; read where it is now, a copy
    is intact (and its damage found there, not in the original's files)."""
    run = _run(tmp_path / "runs", "moved")
    copy = tmp_path / "elsewhere" / "exp" / "moved"
    shutil.copytree(run, copy)
    shutil.rmtree(run)
    assert load_run(copy).status == "succeeded"
    DAMAGE["a shard lost"][0](copy)
    assert load_run(copy).damage == f"stage train: {DAMAGE['a shard lost'][2]}"


def test_a_running_or_failed_run_keeps_its_status(tmp_path: Path) -> None:
    """Damage is a finished run's status: a run that failed says so, its damaged stage still marked."""
    run = _run(tmp_path / "runs", "failed")
    state = json.loads((run / "state.json").read_text())
    state["stages"]["eval"].update(status="failed", message="exit 1")
    state["pipeline"]["status"] = "failed"
    (run / "state.json").write_text(json.dumps(state))
    DAMAGE["data changed"][0](run)
    view = load_run(run)
    assert (view.status, view.stages[0].status, view.stages[-1].damage) == ("failed", "damaged", None)


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files whose bytes a check reads (to hash them), in the order read."""
    read: list[str] = []
    real = output_digest._file_sha256
    monkeypatch.setattr(output_digest, "_file_sha256", lambda path: read.append(path.name) or real(path))
    return read


def test_an_unchanged_output_is_only_stat_ed(tmp_path: Path, hashed: list[str]) -> None:
    """A listing of many runs reads no output's bytes while its stat is the one it was hashed at."""
    for name in ("a", "b"):
        _run(tmp_path / "runs", name)
    hashed.clear()  # as each stage recorded its outputs
    assert _listed(tmp_path / "runs")[0] == 0
    assert hashed == []


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_copied_run_s_outputs_are_read_in_full_and_nothing_is_written(
    tmp_path: Path, hashed: list[str]
) -> None:
    """Copied elsewhere (new inodes: the hashes it keeps cannot vouch for the copy's files), a run's
    outputs are read in full by a listing, which writes nothing (a reader: the record hunt's contract);
    a resume keeps their hashes."""
    run = _run(tmp_path / "runs", "a")
    shutil.copytree(run, tmp_path / "copy" / "exp" / "a")
    before = _tree(tmp_path / "copy")
    hashed.clear()  # as the stages recorded their outputs
    assert "✓ succeeded" in _listed(tmp_path / "copy")[1]
    files = ["outputs.json", "train.jsonl", "outputs.json", "shard0.bin", "shard1.bin", "shard2.bin"]
    assert hashed == [*files, "outputs.json", "summary.json"]
    assert _tree(tmp_path / "copy") == before


def test_a_copied_point_s_outcome_writes_nothing(tmp_path: Path, hashed: list[str]) -> None:
    """The same for a sweep point's outcome (a sweep's resume, `t3rl runs show <sweep dir>`)."""
    run = _run(tmp_path / "runs", "a")
    copy = tmp_path / "copy" / "exp" / "a"
    shutil.copytree(run, copy)
    before = _tree(copy)
    hashed.clear()  # as the stages recorded their outputs
    assert point_outcome(str(copy), None).status == "succeeded"
    assert len(hashed) == 8
    assert _tree(copy) == before
