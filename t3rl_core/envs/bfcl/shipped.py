"""The entries bfcl-eval ships per category, read from its data files without importing it (its import
loads the whole evaluation package): pre-flight checks the id cut against them."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from pathlib import Path

from t3rl_core import outside_json

# A data file's name: BFCL_v<version>_<category>.json (one JSON entry per line).
_FILE = re.compile(r"^BFCL_v(\d+)_(.+)\.json$")
# An entry's id, `"id": "<category>_<number>"`, matched where `"id":` stands (found by str.find): a
# pattern per category scanning each file's last 64 KB took ~6 M instructions of a cold validate.
_ID_KEY = '"id":'
_ID = re.compile(r'"id":\s*"([^"]*?)_(\d+)"')


def entry_id_bound(categories: list[str]) -> tuple[int, str] | None:
    """(the largest numeric entry id + 1, its category) over `categories`, or None when bfcl-eval or a
    category's file is not found here."""
    data = _data_dir()
    if data is None:
        return None
    found: tuple[int, str] | None = None
    for category in categories:
        path = _latest(data, category)
        if path is None:
            return None
        ids = _tail_ids(str(path), category, *_stamp(path))
        if ids:
            bound = max(ids) + 1
            found = max(found or (0, ""), (bound, category))
    return found


def entry_ids(text: str, category: str) -> list[int]:
    """The numbers of the entry ids of `category` in `text` (`"id": "<category>_<number>"`)."""
    ids = []
    at = text.find(_ID_KEY)
    while at >= 0:
        found = _ID.match(text, at)
        if found is not None and found[1] == category:
            ids.append(int(found[2]))
            # past the match, as a scan of the whole text goes on: its closing quote is not the next key's
            at = text.find(_ID_KEY, found.end())
        else:
            at = text.find(_ID_KEY, at + 1)
    return ids


def turns_per_entry(categories: list[str]) -> list[int] | None:
    """The user turns of every entry bfcl-eval ships in `categories` (each needs a model call), counted
    in its ground-truth files (one list of calls per turn; a fifth of the size of the entries), or None
    when bfcl-eval or a category's file is not found here."""
    data = _data_dir()
    if data is None:
        return None
    turns: list[int] = []
    for category in categories:
        path = _latest(data / "possible_answer", category)
        if path is None:
            return None
        turns += _turns(str(path), *_stamp(path))
    return turns


def turns_bound(categories: list[str]) -> int | None:
    """At least the most user turns of any entry bfcl-eval ships in `categories`, read without parsing
    its ground truth (`turns_per_entry`'s JSON parse: ~21 M instructions of a cold plan): each turn is a
    list of calls, so it opens a bracket, and a line's brackets less the outer list's bound its turns
    (a bracket inside a call's text only raises the bound). None when a file is not found here."""
    data = _data_dir()
    if data is None:
        return None
    bound = 0
    for category in categories:
        path = _latest(data / "possible_answer", category)
        if path is None:
            return None
        bound = max(bound, _brackets_bound(str(path), *_stamp(path)))
    return bound


def _data_dir() -> Path | None:
    """bfcl-eval's data folder, found without importing the package; None when it is not installed."""
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(spec.submodule_search_locations[0]) / "data"


def _stamp(path: Path) -> tuple[int, int, int]:
    """What a read of the file is kept under: its inode, change time and size (a file replaced or
    edited is read again). Pre-flight asks on every validation, and the tests validate thousands of
    command lines in one process: the bracket count read 2-2.5 ms of ~13 a validation."""
    found = path.stat()
    return found.st_ino, found.st_mtime_ns, found.st_size


@functools.lru_cache(maxsize=64)
def _brackets_bound(path: str, inode: int, mtime_ns: int, size: int) -> int:
    """The most brackets of a line less one (`turns_bound`)."""
    with open(path, encoding="utf-8") as handle:
        return max((line.count("[") - 1 for line in handle), default=0)


@functools.lru_cache(maxsize=64)
def _tail_ids(path: str, category: str, inode: int, mtime_ns: int, size: int) -> tuple[int, ...]:
    """The entry ids of `category` in the file's last lines (`entry_id_bound`)."""
    return tuple(entry_ids(_tail(Path(path)), category))


@functools.lru_cache(maxsize=16)
def _turns(path: str, inode: int, mtime_ns: int, size: int) -> tuple[int, ...]:
    with open(path, encoding="utf-8") as handle:
        return tuple(len(outside_json.loads(line, path)["ground_truth"]) for line in handle if line.strip())


def _tail(path: Path, lines: int = 4) -> str:
    """The file's last lines (its entries run in id order, the largest last): a few KB, not the file."""
    with path.open("rb") as handle:
        size = handle.seek(0, 2)
        step = 1 << 16
        while True:
            handle.seek(max(0, size - step))
            text = handle.read().decode("utf-8", errors="replace")
            if text.count("\n") > lines or step >= size:
                return text
            step *= 4


def _latest(data: Path, category: str) -> Path | None:
    """The category's file of the newest BFCL version in `data` (the one bfcl-eval reads)."""
    # The folder listed and its names matched by _FILE (a glob per category compiled its own pattern).
    try:
        names = os.listdir(data)
    except OSError:
        return None
    versions = [(int(m[1]), name) for name in names if (m := _FILE.match(name)) and m[2] == category]
    return data / max(versions)[1] if versions else None
