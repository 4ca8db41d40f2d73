"""Output digests are of content, not timestamps, and hash a big output once.

A directory rebuilt with the same bytes matches its record (what reads it stays cached); one byte
changed, size and mtime kept, does not; a file whose stat is unchanged is not read again.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from pipeline_helpers import count, run, stage

from launch.plan.build import Plan
from launch.run import output_digest
from launch.run.output_digest import FileHashes, digest, first_mismatch


def make_checkpoint(root: Path) -> Path:
    """A small checkpoint-like directory: two shards and an index, in a subdirectory."""
    (root / "iter_0000002").mkdir(parents=True)
    (root / "iter_0000002" / "shard-1.bin").write_bytes(bytes(range(256)) * 64)
    (root / "iter_0000002" / "shard-2.bin").write_bytes(b"\x07" * 8192)
    (root / "latest_checkpointed_iteration.txt").write_text("2")
    return root


def shift_mtimes(root: Path, seconds: int) -> None:
    for file in root.rglob("*"):
        st = file.stat()
        os.utime(file, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * 10**9))


def test_a_directory_rebuilt_with_the_same_bytes_and_new_mtimes_has_the_same_digest(tmp_path: Path) -> None:
    ckpt = make_checkpoint(tmp_path / "ckpt")
    before = digest(ckpt)
    assert before is not None and before.startswith("files:")
    shutil.rmtree(ckpt)
    make_checkpoint(ckpt)
    shift_mtimes(ckpt, 3600)
    assert digest(ckpt) == before


@pytest.mark.parametrize("where", ["shard-1.bin", "shard-2.bin"])
def test_one_changed_byte_with_size_and_mtime_kept_is_caught_even_after_a_cached_hash(
    tmp_path: Path, where: str
) -> None:
    ckpt = make_checkpoint(tmp_path / "ckpt")
    hashes = FileHashes()
    recorded = {str(ckpt): digest(ckpt, hashes)}
    shard = ckpt / "iter_0000002" / where
    st = shard.stat()
    with shard.open("r+b") as handle:
        handle.seek(100)
        old = handle.read(1)
        handle.seek(100)
        handle.write(bytes([old[0] ^ 1]))
    os.utime(shard, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert shard.stat().st_size == st.st_size and shard.stat().st_mtime_ns == st.st_mtime_ns
    assert first_mismatch(recorded, [str(ckpt)], hashes) == (
        f"{ckpt} changed since the stage finished (its files or their content differ)"
    )


def test_a_file_whose_stat_is_unchanged_is_not_read_again(tmp_path: Path, monkeypatch) -> None:
    ckpt = make_checkpoint(tmp_path / "ckpt")
    read: list[str] = []
    real = output_digest._file_sha256
    monkeypatch.setattr(output_digest, "_file_sha256", lambda p: read.append(p.name) or real(p))
    hashes = FileHashes()
    recorded = {str(ckpt): digest(ckpt, hashes)}
    assert len(read) == 3
    saved = tmp_path / "file_hashes.json"
    hashes.save(saved)
    read.clear()
    assert first_mismatch(recorded, [str(ckpt)], FileHashes.load(saved)) is None
    assert read == []
    (ckpt / "latest_checkpointed_iteration.txt").write_text("3")
    assert first_mismatch(recorded, [str(ckpt)], FileHashes.load(saved)) is not None
    assert read == ["latest_checkpointed_iteration.txt"]


def test_saved_hashes_drop_files_that_no_longer_exist_and_a_corrupt_file_is_an_empty_cache(
    tmp_path: Path,
) -> None:
    ckpt = make_checkpoint(tmp_path / "ckpt")
    hashes = FileHashes()
    digest(ckpt, hashes)
    (ckpt / "iter_0000002" / "shard-2.bin").unlink()
    saved = tmp_path / "file_hashes.json"
    hashes.save(saved)
    assert sorted(Path(k).name for k in json.loads(saved.read_text())) == [
        "latest_checkpointed_iteration.txt",
        "shard-1.bin",
    ]
    saved.write_text("{not json")
    assert FileHashes.load(saved).entries == {}


def test_a_record_of_an_older_mtime_based_digest_is_only_checked_to_exist(tmp_path: Path) -> None:
    ckpt = make_checkpoint(tmp_path / "ckpt")
    assert first_mismatch({str(ckpt): "tree:0123abcd"}, [str(ckpt)]) is None
    shutil.rmtree(ckpt)
    assert first_mismatch({str(ckpt): "tree:0123abcd"}, [str(ckpt)]) == f"{ckpt} is missing"


def cache_plan(run_dir: Path, marks: Path, ckpt: Path) -> Plan:
    """data → a checkpoint in a shared cache (adopted while complete) → eval."""
    data = run_dir / "stages" / "data" / "train.jsonl"
    summary = run_dir / "stages" / "eval" / "summary.json"
    build = (
        f"mkdir -p {ckpt} && printf 'weights' > {ckpt}/shard.bin && echo 1 > {ckpt}/latest.txt"
        f" && touch {ckpt}/.done"
    )
    return Plan(
        "test",
        run_dir,
        (
            stage("data", marks, f"mkdir -p {data.parent} && echo '{{}}' > {data}", verify=(str(data),)),
            stage(
                "ckpt", marks, build, reads=("data",), verify=(str(ckpt),), complete_when=(f"{ckpt}/.done",)
            ),
            stage("eval", marks, f"echo '{{}}' > {summary}", reads=("ckpt",), verify=(str(summary),)),
        ),
    )


def test_a_shared_checkpoint_rebuilt_identically_elsewhere_reruns_nothing(tmp_path: Path) -> None:
    run_dir, marks, ckpt = tmp_path / "run", tmp_path / "marks", tmp_path / "cache" / "model"
    run_dir.mkdir()
    marks.mkdir()
    plan = cache_plan(run_dir, marks, ckpt)
    assert run(plan, run_dir).status == "succeeded"
    assert (run_dir / "file_hashes.json").exists()
    # Another run (or a user) rebuilds the shared checkpoint: the same bytes, new files, new mtimes.
    shutil.rmtree(ckpt)
    ckpt.mkdir(parents=True)
    (ckpt / "shard.bin").write_text("weights")
    (ckpt / "latest.txt").write_text("1\n")
    (ckpt / ".done").touch()
    shift_mtimes(ckpt, 3600)
    result = run(plan, run_dir)
    assert [(d.action, d.reason) for d in result.decisions] == [
        ("cached", "unchanged since it succeeded")
    ] * 3
    assert [count(marks, n, "done") for n in ("data", "ckpt", "eval")] == [1, 1, 1]
    # One changed byte, same size: the checkpoint is rebuilt and the eval that reads it reruns.
    (ckpt / "shard.bin").write_text("weightS")
    result = run(plan, run_dir)
    assert [d.action for d in result.decisions] == ["cached", "run", "run"]
    assert result.decisions[1].reason == (
        f"output damaged: {ckpt} changed since the stage finished (its files or their content differ)"
    )
