"""Fingerprints of the values a run record masks, so `t3rl runs diff` can tell two masked credentials
apart without either being written anywhere.

config.yaml shows every credential as `***`: two runs that differ only in one look identical there.
Each run dir also gets `secret_fingerprints.json`: per masked key, an HMAC-SHA256 of the value under a
key kept in t3rl's cache dir (created once, readable by its owner only). An HMAC under a key the reader
of the run dir does not have reveals nothing of the value (unlike a plain hash of a short password);
fingerprints are comparable between runs recorded with the same key (the same user's cache dir, shared
on a cluster), and the file names the key's id so other pairs are reported as not comparable.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from launch.config.compose_cache import cache_dir
from launch.run.config_diff import flatten
from launch.run.record_files import RunDirError, read_json

FILE = "secret_fingerprints.json"
_KEY_FILE = "secret-fingerprint.key"


def fingerprints(raw: Mapping[str, Any], masked: Mapping[str, Any]) -> dict[str, Any]:
    """{"key": key id, "values": {dotted key: fingerprint}} for every leaf `masked` shows otherwise than
    `raw` holds it; empty values when nothing is masked (no key is made then)."""
    flat_raw, flat_masked = flatten(dict(raw)), flatten(dict(masked))
    changed = sorted(key for key, value in flat_raw.items() if flat_masked.get(key) != value)
    if not changed:
        return {"key": None, "values": {}}
    secret = _key()
    values = {
        key: hmac.new(secret, json.dumps(flat_raw[key]).encode(), hashlib.sha256).hexdigest()[:32]
        for key in changed
    }
    return {"key": hashlib.sha256(secret).hexdigest()[:12], "values": values}


def read(run_dir: Path) -> dict[str, Any] | None:
    """A run dir's fingerprints; None for a record written before they were kept. One that is not what
    t3rl writes (a key id or null, and text fingerprints by key), edited by hand or damaged, is a
    `RunDirError` naming it: read on, one without its `key` raised KeyError out of `t3rl runs diff`."""
    path = run_dir / FILE
    if not path.exists() and not path.is_symlink():
        return None
    data = read_json(path, dict)
    key, values = data.get("key", _ABSENT), data.get("values")
    if not (
        (key is None or isinstance(key, str))
        and isinstance(values, dict)
        and all(isinstance(value, str) for value in values.values())
    ):
        raise RunDirError(
            f"{path} is corrupt (not the key id and fingerprints t3rl writes): every `t3rl run` of the dir "
            "writes it anew; until then its masked values are not compared"
        )
    return data


_ABSENT = object()


def _key() -> bytes:
    """This user's fingerprint key, made on first use (mode 0600, written atomically)."""
    path = cache_dir() / _KEY_FILE
    try:
        return bytes.fromhex(path.read_text().strip())
    except (OSError, ValueError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_hex(32))
    try:
        os.link(tmp, path)  # the first of two racing writers wins; the other reads its key
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return bytes.fromhex(path.read_text().strip())
