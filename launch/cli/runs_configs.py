"""What `t3rl runs` read of the run dirs below one runs dir, kept between listings in t3rl's cache dir.

A listing reads each run dir's config.yaml (for its stages and `--where`) and each finished stage's
outputs (to tell a damaged one). Both were read anew at every listing:

- parsing config.yaml (PyYAML's constructor runs in Python even over libyaml's events) was a third of
  a listing's CPU over many runs. An entry keeps the mapping read, keyed by the sha256 of the file's
  bytes, and is used only while the bytes hash the same and the cache was written by this reader with
  this PyYAML (the header): never stale. A file edited by hand, damaged or replaced is read again, its
  error the reader's own; a mapping JSON would not give back as read (a key that is no text, NaN) is
  never kept.
- a run dir copied, moved or restored from a backup has new inodes, so none of the hashes its record
  keeps (file_hashes.json, by path and stat) applies, and every listing read every output's bytes again.
  A reader writes nothing in a run's record, so the hashes a listing computes are kept here, with the
  stat they were computed at (`FileHashes`' own key: size, mtime, ctime, inode), and used only while
  that stat is the file's.

The cache is `<cache dir>/runs/<sha256 of the runs dir's path>.json` (launch.files.cache_dir: off with
T3RL_NO_CACHE=1). Unreadable, it is rebuilt; unwritable, the listing reads as before.

Its bound, declared here and held at every write (`_prune`): a file holds the run dirs its last listing
read, no others (a run dir removed since is dropped at the next listing); a file whose runs dir no
longer exists is removed (its first key names it); and the files together stay within MAX_BYTES, the
least recently used removed first (a file read is touched; a listing whose file alone would pass the
bound keeps none).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from launch.files import atomic_write_text, cache_dir, caches_on
from launch.run import record_files
from launch.run.output_digest import FileHashes
from launch.run.record_files import read_yaml
from t3rl_core import __version__, outside_json, yaml_text

# The most the cache files of every runs dir listed may hold together (~1.5 KiB a run: ~40,000 runs).
MAX_BYTES = 64 * 2**20
# How a file starts: its runs dir first, so that pruning reads a file's head, not the whole of it.
_HEAD = '{"runs_dir": '


@cache
def _header() -> dict[str, str]:
    """What a parse depends on besides the bytes: the reader (t3rl's version, and the code that reads a
    config.yaml: record_files' checks, t3rl's YAML loader, this module, so that a commit changing what
    is refused there makes every entry stale under one version) and the YAML library. Once per process."""
    sha = hashlib.sha256()
    for module in (record_files, yaml_text, sys.modules[__name__]):
        sha.update(Path(str(module.__file__)).read_bytes())
    return {"reader": f"t3rl {__version__}", "code": sha.hexdigest(), "yaml": yaml.__version__}


class ListingCache:
    """The configs parsed and the output hashes computed for the run dirs below one runs dir."""

    def __init__(self, runs_dir: Path) -> None:
        where = str(runs_dir.resolve())
        self.where = where
        self.file = cache_dir() / "runs" / f"{hashlib.sha256(where.encode()).hexdigest()[:32]}.json"
        self.on = caches_on()
        self.configs: dict[str, list[Any]] = {}
        self.hashes: dict[str, dict[str, list[Any]]] = {}
        self.kept: dict[str, Any] = {"configs": {}, "hashes": {}}
        self._own: dict[str, dict[str, list[Any]]] = {}  # each run's file_hashes.json, as read
        if not self.on:
            return
        try:
            data = outside_json.read_file(self.file)
        except (OSError, ValueError):
            return
        if isinstance(data, dict) and data.get("header") == _header():
            for part in ("configs", "hashes"):
                if isinstance(data.get(part), dict):
                    self.kept[part] = data[part]
            # Used now: the bound removes the least recently used files first (unwritable: as written).
            with contextlib.suppress(OSError):
                os.utime(self.file)

    def read(self, config_file: Path) -> dict[str, Any]:
        """The mapping in `config_file`, as `read_yaml(config_file, dict)` reads it (its errors too)."""
        try:
            data = config_file.read_bytes()
        except OSError:
            return read_yaml(config_file, dict)  # its own message for a file that cannot be read
        sha = hashlib.sha256(data).hexdigest()
        key = str(config_file.parent.resolve())
        entry = self.kept["configs"].get(key)
        if isinstance(entry, list) and len(entry) == 2 and entry[0] == sha and isinstance(entry[1], dict):
            self.configs[key] = entry
            return entry[1]
        config = read_yaml(config_file, dict)
        try:
            same = outside_json.loads(json.dumps(config), str(config_file)) == config
        except (TypeError, ValueError):
            same = False
        if same:
            self.configs[key] = [sha, config]
        return config

    def file_hashes(self, run_dir: Path) -> FileHashes:
        """The run's own file_hashes.json, with the hashes a listing computed for the files it lacks."""
        hashes = FileHashes.load(run_dir / "file_hashes.json")
        self._own[str(run_dir.resolve())] = dict(hashes.entries)
        kept = self.kept["hashes"].get(str(run_dir.resolve()))
        if isinstance(kept, dict):
            for file, entry in kept.items():
                if isinstance(entry, list) and len(entry) == 5:
                    hashes.entries.setdefault(file, entry)
        return hashes

    def keep_hashes(self, run_dir: Path, hashes: FileHashes) -> None:
        """Keep the hashes of `run_dir` its own record does not hold (those of a copy's files)."""
        own = self._own.get(str(run_dir.resolve()), {})
        extra = {k: v for k, v in hashes.entries.items() if own.get(k) != v}
        if extra:
            self.hashes[str(run_dir.resolve())] = extra

    def save(self) -> None:
        """Write the entries of the run dirs this listing read, if any differs from the cache's."""
        if not self.on or (self.configs == self.kept["configs"] and self.hashes == self.kept["hashes"]):
            return
        body = json.dumps(
            {"runs_dir": self.where, "header": _header(), "configs": self.configs, "hashes": self.hashes}
        )
        try:
            if len(body) + 1 > MAX_BYTES:
                self.file.unlink(missing_ok=True)  # past the bound alone: kept nowhere, read each time
            else:
                self.file.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_text(self.file, body + "\n")
            _prune(self.file.parent, keep=self.file)
        except OSError:
            pass  # a cache dir this user cannot write: read again next time, as before


def _runs_dir_of(file: Path) -> str | None:
    """The runs dir a cache file was written for, read from its head; None when it does not say."""
    try:
        with file.open(encoding="utf-8") as stream:
            # A path is at most 4,096 bytes, each at most 6 characters escaped in JSON.
            head = stream.read(len(_HEAD) + 6 * 4096 + 2)
        if not head.startswith(_HEAD):
            return None
        where, _ = json.JSONDecoder().raw_decode(head, len(_HEAD))
    except (OSError, ValueError):
        return None
    return where if isinstance(where, str) else None


def _prune(directory: Path, keep: Path) -> None:
    """Hold the cache's bound: remove each file whose runs dir is gone, then the least recently used
    files until the rest fit MAX_BYTES (`keep`, the one just written, is never removed)."""
    files: list[tuple[float, int, Path]] = []
    for file in directory.glob("*.json"):
        try:
            stat = file.stat()
        except OSError:
            continue  # removed by another listing meanwhile
        where = None if file == keep else _runs_dir_of(file)
        if where is not None and not os.path.isdir(where):
            file.unlink(missing_ok=True)
            continue
        files.append((stat.st_mtime, stat.st_size, file))
    total = sum(size for _, size, _ in files)
    for _, size, file in sorted(files, key=lambda entry: (entry[0], str(entry[2]))):
        if total <= MAX_BYTES:
            break
        if file != keep:
            file.unlink(missing_ok=True)
            total -= size
