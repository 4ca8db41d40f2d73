"""What a stage's declared outputs contain now, as one short string per path, for resume.

A finished stage is skipped only while each output it declared (`Stage.verify`) still matches the
digest recorded when it finished. Digests are of content only, never of timestamps:

- a file: `sha256:<hex>` of its bytes (data splits, eval summaries and trajectories, outputs.json);
- a directory (checkpoints, HF exports): `files:<hex>`, a hash of every file's relative path, size
  and sha256, so a truncated shard, a lost file or one changed byte is caught, and a directory rebuilt
  with the same content (new mtimes) still matches: what reads it does not run again.

Hashing a checkpoint is paid once: `FileHashes` remembers each file's sha256 with the (size, mtime,
ctime, inode) it was hashed at, and a later check re-reads only files whose stat differs. ctime and
the inode are in that key because neither can be set back by hand (`touch -d`/`os.utime` set ctime
to now), so an edit that restores size and mtime is hashed again, not trusted.

`None` means the path does not exist. A data file with a data manifest beside it (`manifest.json` of
`python -m t3rl_core.data`, listing each split's file and sha256) must also agree with that
manifest when its stage finishes (`manifest_disagreement`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from launch.files import write_record_json
from launch.run.record_files import moved_below
from t3rl_core import outside_json

# Digest kinds this version writes; a record holding another kind (an mtime-based fingerprint of an
# older t3rl) is only checked to exist, since it cannot be compared with a content digest.
CONTENT_KINDS = ("sha256:", "files:")
_CHUNK = 1024 * 1024


class FileHashes:
    """sha256 of files by absolute path, each kept with the stat it was computed at and reused while
    the file's (size, mtime, ctime, inode) are unchanged."""

    def __init__(self, entries: dict[str, list[int | str]] | None = None) -> None:
        self.entries: dict[str, list[int | str]] = entries or {}
        self.changed = False

    @classmethod
    def load(cls, path: Path) -> FileHashes:
        """The hashes saved at `path`; none when it is missing or unreadable (a cache: the cost of
        losing it is hashing again, never a wrong answer)."""
        try:
            data = outside_json.read_file(path)
        except (OSError, ValueError):
            return cls()
        if not isinstance(data, dict):
            return cls()
        return cls({k: v for k, v in data.items() if isinstance(v, list) and len(v) == 5})

    def save(self, path: Path) -> None:
        """Write the hashes of the files that still exist, if any was added since loading."""
        if self.changed:
            write_record_json(path, {k: v for k, v in self.entries.items() if os.path.exists(k)})
            self.changed = False

    def sha256(self, file: str | Path, st: os.stat_result) -> str:
        key: list[int | str] = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        entry = self.entries.get(str(file))
        if entry is not None and entry[:4] == key:
            return str(entry[4])
        sha = _file_sha256(Path(file))
        self.entries[str(file)] = [*key, sha]
        self.changed = True
        return sha


def digest(path: str | Path, hashes: FileHashes | None = None) -> str | None:
    """The digest of a file or directory; None when it does not exist."""
    p = Path(path)
    hashes = hashes if hashes is not None else FileHashes()
    try:
        st = p.stat()
    except FileNotFoundError:
        return None
    if p.is_dir():
        return "files:" + _tree_digest(p, hashes)
    return "sha256:" + hashes.sha256(p, st)


def digests(paths: Iterable[str], hashes: FileHashes | None = None) -> dict[str, str | None]:
    return {path: digest(path, hashes) for path in paths}


def first_mismatch(
    recorded: Mapping[str, str | None], paths: Iterable[str], hashes: FileHashes | None = None
) -> str | None:
    """One line naming the first declared output that differs from its record; None when all match.

    Paths with no recorded content digest (records written before digests, or with an older
    mtime-based one) are only checked to exist.
    """
    for path in paths:
        was = recorded.get(path, "")
        if was is not None and not was.startswith(CONTENT_KINDS):
            if not os.path.exists(path):
                return f"{path} is missing"
            continue
        now = digest(path, hashes)
        if now is None:
            return f"{path} is missing"
        if was != now:
            if was is None:
                return f"{path} appeared after the stage finished"
            what = "its files or their content differ" if now.startswith("files:") else "content differs"
            return f"{path} changed since the stage finished ({what})"
    return None


def rerooted(recorded: Mapping[str, str | None], was: object, root: Path) -> dict[str, str | None]:
    """A record's digests keyed by where its outputs are now: those below `was` (the run dir the record
    was written in, as state.json names it) moved below `root`. Left as keyed, the outputs of a run dir
    moved or copied elsewhere were looked up by their old paths: no digest found, so a damaged output
    was checked only to exist, or the original's files were checked instead of the copy's."""
    return {moved_below(path, was, str(root)): value for path, value in recorded.items()}


def output_damage(
    run_dir: Path, outputs: Mapping[str, str | None], written_in: object, hashes: FileHashes
) -> str | None:
    """One line naming how a finished stage's outputs in `run_dir` differ from the digests its record
    holds (keyed below `written_in`, the run dir its state.json names), the run dir's own paths relative
    to it; None when all match. The one reader of a finished stage's outputs for `t3rl runs`, `t3rl runs
    show` and a sweep point's outcome (launch.run.point_record); a resume checks the outputs its plan
    declares (launch.run.pipeline.verified_outputs), which its record's are."""
    root = run_dir.resolve()
    recorded = rerooted(outputs, written_in, root)
    damage = first_mismatch(recorded, list(recorded), hashes)
    return damage.replace(f"{root}/", "") if damage is not None else None


def _file_sha256(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            sha.update(chunk)
    return sha.hexdigest()


def _tree_digest(root: Path, hashes: FileHashes) -> str:
    """Every file below `root`, through symlinked directories too (a checkpoint's shards linked from
    other storage are its content: unfollowed, a changed or lost shard there went unseen); a directory
    reached twice (a link cycle, two links to one dir) is read once."""
    sha = hashlib.sha256()
    seen: set[str] = set()
    top = str(root)
    # Paths as strings: pathlib's per-file objects were most of the time of a listing of many runs
    # (`t3rl runs` reads every checkpoint's files' stat).
    for dirpath, dirnames, filenames in os.walk(top, followlinks=True):
        seen.add(os.path.realpath(dirpath))
        dirnames[:] = sorted(d for d in dirnames if os.path.realpath(os.path.join(dirpath, d)) not in seen)
        below = dirpath[len(top) + 1 :] + "/" if dirpath != top else ""
        for name in sorted(filenames):
            file = os.path.join(dirpath, name)
            try:
                st = os.stat(file)
            except FileNotFoundError:
                continue
            sha.update(f"{below}{name}\0{st.st_size}\0{hashes.sha256(file, st)}\0".encode())
    return sha.hexdigest()


def manifest_disagreement(recorded: Mapping[str, str | None]) -> str | None:
    """One line naming a data file whose sha256 differs from the data manifest beside it; else None."""
    for path, value in recorded.items():
        file = Path(path)
        manifest = file.parent / "manifest.json"
        if value is None or not value.startswith("sha256:") or file == manifest or not manifest.is_file():
            continue
        try:
            splits = outside_json.read_file(manifest).get("splits", {})
        except (OSError, ValueError, AttributeError):
            return f"{manifest} is not a readable data manifest"
        listed = {
            entry.get("file"): entry.get("sha256") for entry in splits.values() if isinstance(entry, dict)
        }
        if file.name in listed and listed[file.name] != value.removeprefix("sha256:"):
            return f"{path} does not match the sha256 its data manifest records"
    return None
