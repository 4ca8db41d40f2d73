"""Benchmark identity, by kind: what two evals must share to be compared.

- A tokenizer named by a hub id is its content, as for a local directory: t3rl loads it with local
  files only, from the Hugging Face cache's snapshot `main` points at, so two machines (or one, before
  and after a `huggingface-cli download` of a newer revision) that cached two revisions of a repository
  tokenize and template otherwise. The identity gave both the repository's name, and `runs diff`
  compared them as one benchmark.
- A sweep point whose eval summary records no identity (missing, unreadable, or older) is not ranked
  beside points that record one, as `t3rl runs` does not rank it: sweep.md ranked it (as the best, when
  its metric was highest) and sweep.png plotted it beside the others.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import huggingface_hub.constants
import pytest

from launch.run.sweep_compare import marks
from launch.run.sweep_plot import point_scores
from t3rl_core.eval.identity import TOKENIZER_FILES, differences, tokenizer_digest
from tests.eval.test_identity_guard import IDENTITY, _sweep

REPO_ID = "acme/tool-model"


def _cache(root: Path, revision: str, files: dict[str, str]) -> Path:
    """A Hugging Face cache holding one snapshot of REPO_ID, `main` pointing at it."""
    repo = root / "models--acme--tool-model"
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    snapshot = repo / "snapshots" / revision
    snapshot.mkdir(parents=True)
    for name, text in files.items():
        (snapshot / name).write_text(text)
    return snapshot


FILES = {"tokenizer.json": '{"model": "v1"}', "tokenizer_config.json": '{"chat_template": "A"}'}


def test_a_hub_tokenizer_is_its_cached_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert tokenizer_digest(REPO_ID) == REPO_ID  # nothing cached: its name
    snapshot = _cache(tmp_path / "hub", "a" * 40, FILES)
    first = tokenizer_digest(REPO_ID)
    local = tmp_path / "download"
    local.mkdir()
    for name, text in FILES.items():
        (local / name).write_text(text)
    assert first == tokenizer_digest(str(local)) != REPO_ID  # the same files, cached or downloaded
    assert first == tokenizer_digest(str(snapshot))
    # A newer revision with another chat template in its tokenizer_config.json: `main` moves to it.
    _cache(tmp_path / "hub", "b" * 40, {**FILES, "tokenizer_config.json": '{"chat_template": "B"}'})
    second = tokenizer_digest(REPO_ID)
    assert second not in (first, REPO_ID)
    parts = differences({"protocol": {"tokenizer_sha256": first}}, {"protocol": {"tokenizer_sha256": second}})
    assert [part.split(":")[0] for part in parts] == ["protocol"] and "tokenizer_sha256" in parts[0]


def test_a_local_directory_digest_is_unchanged(tmp_path: Path) -> None:
    """Summaries recorded before compare equal: a directory's digest is its files' as it was."""
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    digest = hashlib.sha256()
    for name in TOKENIZER_FILES:
        if name in FILES:
            digest.update(name.encode() + b"\0" + FILES[name].encode() + b"\0")
    assert tokenizer_digest(str(tmp_path)) == digest.hexdigest()
    assert tokenizer_digest(None) is None and tokenizer_digest(str(tmp_path / "absent")) is None
    assert tokenizer_digest("not a hub id!") == "not a hub id!"


@pytest.mark.parametrize("damage", ["no identity", "unreadable", "missing"])
def test_a_sweep_point_of_unknown_benchmark_is_not_ranked(tmp_path: Path, damage: str) -> None:
    sweep = _sweep(
        tmp_path, [(0.50, IDENTITY), (0.45, IDENTITY), (0.95, IDENTITY if damage != "no identity" else None)]
    )
    summary = Path(sweep.points[2].run_dir) / "stages" / "eval" / "summary.json"
    if damage == "unreadable":
        summary.write_text("{not json")
    elif damage == "missing":
        summary.unlink()
    found = marks(sweep)
    assert found[0].startswith("best [") and found[1].startswith("overlaps best [")
    assert found[2].startswith("not ranked, benchmark unknown"), found[2]
    assert [score.index for score in point_scores(sweep)] == [0, 1]  # sweep.png leaves it out
    alone = _sweep(tmp_path / "alone", [(0.5, None), (0.4, None)])  # nothing recorded anywhere: ranked
    assert marks(alone)[0].startswith("best")
