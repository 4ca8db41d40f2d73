"""What a stage's declared outputs look like now, as one short string per path, for resume.

A finished stage is skipped only while each output it declared (`Stage.verify`) still matches the
digest recorded when it finished:

- a file up to `HASHED_FILE_LIMIT` bytes: the sha256 of its content (data splits, eval summaries and
  trajectories, the stage's own outputs.json);
- a larger file, or a directory (checkpoints, HF exports): a cheap fingerprint: every file's relative
  path, size and mtime, plus the content of its small index files (`*.json`, `*.txt`: config.json,
  model.safetensors.index.json, latest_checkpointed_iteration.txt), so a truncated shard, a lost file or
  an edited index is caught without reading gigabytes of weights.

`None` means the path does not exist. A data file with a data manifest beside it (`manifest.json` of
`python -m t3rl_core.data`, listing each split's file and sha256) must also agree with that
manifest when its stage finishes (`manifest_disagreement`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

HASHED_FILE_LIMIT = 512 * 1024 * 1024
INDEX_SUFFIXES = (".json", ".txt")
INDEX_FILE_LIMIT = 1024 * 1024
_CHUNK = 1024 * 1024


def digest(path: str | Path) -> str | None:
    """The digest of a file or directory; None when it does not exist."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        return None
    if p.is_dir():
        return "tree:" + _tree_digest(p)
    if st.st_size <= HASHED_FILE_LIMIT:
        return "sha256:" + _file_sha256(p)
    return f"stat:{st.st_size}:{st.st_mtime_ns}"


def digests(paths: Iterable[str]) -> dict[str, str | None]:
    return {path: digest(path) for path in paths}


def first_mismatch(recorded: Mapping[str, str | None], paths: Iterable[str]) -> str | None:
    """One line naming the first declared output that differs from its record; None when all match.

    Paths with no recorded digest (records written before digests existed) are only checked to exist.
    """
    for path in paths:
        now = digest(path)
        if now is None:
            return f"{path} is missing"
        if path in recorded and recorded[path] != now:
            if recorded[path] is None:
                return f"{path} appeared after the stage finished"
            what = "its files, sizes or index files differ" if now.startswith("tree:") else "content differs"
            return f"{path} changed since the stage finished ({what})"
    return None


def _file_sha256(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            sha.update(chunk)
    return sha.hexdigest()


def _tree_digest(root: Path) -> str:
    sha = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            file = Path(dirpath) / name
            try:
                st = file.stat()
            except FileNotFoundError:
                continue
            rel = file.relative_to(root).as_posix()
            sha.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
            if name.endswith(INDEX_SUFFIXES) and st.st_size <= INDEX_FILE_LIMIT:
                sha.update(_file_sha256(file).encode())
    return sha.hexdigest()


def manifest_disagreement(recorded: Mapping[str, str | None]) -> str | None:
    """One line naming a data file whose sha256 differs from the data manifest beside it; else None."""
    for path, value in recorded.items():
        file = Path(path)
        manifest = file.parent / "manifest.json"
        if value is None or not value.startswith("sha256:") or file == manifest or not manifest.is_file():
            continue
        try:
            splits = json.loads(manifest.read_text()).get("splits", {})
        except (OSError, ValueError, AttributeError):
            return f"{manifest} is not a readable data manifest"
        listed = {
            entry.get("file"): entry.get("sha256") for entry in splits.values() if isinstance(entry, dict)
        }
        if file.name in listed and listed[file.name] != value.removeprefix("sha256:"):
            return f"{path} does not match the sha256 its data manifest records"
    return None
