"""Benchmark identity, by kind: what two evals must share to be compared.

- A tokenizer named by a hub id is its content, as for a local directory: t3rl loads it with local
  files only, from the Hugging Face cache's snapshot `main` points at, so two machines (or one, before
  and after a `huggingface-cli download` of a newer revision) that cached two revisions of a repository
  tokenize and template otherwise. The identity gave both the repository's name, and `runs diff`
  compared them as one benchmark.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import huggingface_hub.constants
import pytest

from t3rl_core.eval.identity import TOKENIZER_FILES, differences, tokenizer_digest

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
