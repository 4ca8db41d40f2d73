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
"""

from __future__ import annotations

import hashlib
import json
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
        body = json.dumps({"header": _header(), "configs": self.configs, "hashes": self.hashes})
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.file, body + "\n")
        except OSError:
            pass  # a cache dir this user cannot write: read again next time, as before
