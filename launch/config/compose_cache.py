"""A disk cache of composed configs, so that a repeated command line does not import or run Hydra.

Composition (defaults list, merge, overrides, interpolations) is the slowest step of every CLI start
and a pure function of: the overrides and config dirs (made absolute), where the working directory
lies against each directory of the search path (the file names provenance shows: relative to it when
below it), the config files on the search path, the code and versions of t3rl, Hydra, OmegaConf and
PyYAML, the environment variables `${oc.env:…}` reads, and — for a command line that composes Hydra's
own node (a search: `hparams_search=…`, `hydra.sweeper.…`) — the code of Hydra's plugins
(`hydra_plugins.*`: the Optuna sweeper's config is a dataclass there). An entry is stored under a hash
of the command line and that place of the working directory, together with a digest of everything
else (taken before composing, so a file edited meanwhile makes the entry stale, never wrong) and a
sha256 of the value of each variable `oc.env` read; a lookup recomputes the digest and rehashes those
variables, and any difference is a miss that rewrites the entry. A line the direct composition reads
(`launch.config.direct`) is stored the second time it is composed, a line Hydra composes at once
(`Entry.first_sight`).

What is cached is the resolved plain config, its provenance and Hydra's own node — never validation,
which runs on every call. Never cached: errors, compositions that emitted a warning or called a resolver
other than OmegaConf's pure `oc.*` ones and `oc.env` (a resolver registered by other code may read
anything), a search path extended by `hydra.searchpath` (an override, or the primary config's: its
directories are not digested), data that a JSON round trip would change, and
any composition holding a secret (`launch.config.secrets.holds_secret`: a secret-looking key's value,
a URL password, a secret flag's value, a secret environment variable's value) or the value one of its
references points at (`holds_referenced_value`: a run named after a Secret field's value).

Location: $T3RL_CACHE_DIR, else $XDG_CACHE_HOME/t3rl, else ~/.cache/t3rl (entries under `compose/`).
T3RL_NO_CACHE=1 (any value but 0) turns the cache off.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path, PurePath
from typing import Any

from launch.config.direct.compose import DeferredHydra
from launch.config.plain import Plain, Reads
from launch.config.provenance import Origin, Provenance, Shadow
from launch.config.search_path import PACKAGE, package_dir, roots
from launch.config.secrets import holds_referenced_value, holds_secret
from launch.files import atomic_write_text, cache_dir, caches_on
from t3rl_core import outside_json
from t3rl_core.installed import package_versions
from t3rl_core.records import Record

FORMAT = 3
# Beyond this many entries the least recently written ones are removed (one per command line).
MAX_ENTRIES = 256
VERSIONED = ("t3rl", "hydra-core", "omegaconf", "antlr4-python3-runtime", "PyYAML")
# The modules whose code decides what composition returns.
CODE = (
    "config/compose.py",
    "config/composed.py",
    "config/provenance.py",
    "config/layers.py",
    "config/resolved.py",
    "config/compose_cache.py",
    "config/env_references.py",
    "config/optional_groups.py",
    "config/search_path.py",
    "config/direct/compose.py",
    "config/direct/config_files.py",
    "config/direct/defaults.py",
    "config/direct/interpolation.py",
    "config/direct/nodes.py",
    "config/direct/overrides.py",
)
# Overrides of this key add directories to the search path, outside the digest.
UNCACHED_KEYS = ("hydra.searchpath",)
# Overrides of these keys compose Hydra's own node, from its plugins' code too.
HYDRA_NODE_KEYS = ("hydra", "hparams_search")
PLUGINS = "hydra_plugins"


def cached_compose(
    overrides: Sequence[str], config_dirs: Sequence[str], compose: Callable[[Reads], Plain]
) -> Plain:
    """`compose(reads)`'s result for this command line: from the cache when its inputs are unchanged,
    else computed (recording in `reads` what it read besides the files) and stored when it is safe
    to reuse."""
    reads = Reads()
    entry = Entry.of(overrides, config_dirs)
    if entry is None:
        return compose(reads)
    hit = entry.load()
    if hit is not None:
        return hit if hit.hydra is not None else hit._replace(hydra=DeferredHydra(overrides, config_dirs))
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            plain = compose(reads)
    finally:
        # Shown as they would have been; a composition that warns is not cached (a hit would hide it).
        for w in caught:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)
    # (A deferred node is never one that sets the search path: the direct composition refuses that.)
    if caught or reads.impure or (_composed_node(plain) or {}).get("searchpath"):
        return plain
    if not reads.by_hydra and entry.first_sight():
        return plain
    body = _body(plain)
    # A config holding a credential is never written to disk (a hit could not mask it back anyway);
    # the scan, the dearest step, runs only on what would be written.
    if body is not None and not _holds_secret(plain, overrides):
        entry.store(body, reads.env)
    return plain


def _holds_secret(plain: Plain, overrides: Sequence[str]) -> bool:
    provenance = [[o.source, o.raw] for _, o in plain.provenance.items()]
    around = [list(overrides), _composed_node(plain) or {}, provenance]
    return holds_secret([*around, plain.data]) or holds_referenced_value(plain.data, around)


def _composed_node(plain: Plain) -> dict[str, Any] | None:
    """Hydra's own node as composed; None while it is deferred (reading it would compose it)."""
    return plain.hydra if isinstance(plain.hydra, dict) else None


def _body(plain: Plain) -> str | None:
    """What an entry stores of `plain`; None when it would not read back identical (then the cache is
    skipped). A deferred Hydra node is stored as null and deferred again when read back (storing it
    would compose it)."""
    payload = {
        "data": plain.data,
        "provenance": {
            k: [o.source, o.chosen_by, o.raw, o.order, o.deleted, o.package]
            for k, o in plain.provenance.items()
        },
        "shadowed": {k: [s.source, s.raw, s.by] for k, s in plain.provenance.shadowed.items()},
        "hydra": _composed_node(plain),
    }
    try:
        body = json.dumps(payload, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return body if _identical(json.loads(body), payload) else None


def _env_digest(value: str | None) -> str | None:
    """What an entry keeps of a variable `oc.env` read: enough to notice a change, not the value."""
    return None if value is None else hashlib.sha256(value.encode()).hexdigest()


class Entry(Record):
    """The cache file of one command line, and the digest of its current inputs."""

    path: Path
    digest: str

    @classmethod
    def of(cls, overrides: Sequence[str], config_dirs: Sequence[str]) -> Entry | None:
        """None when the cache is off or this command line must not be cached."""
        if not caches_on() or any(_key_of(o).startswith(UNCACHED_KEYS) for o in overrides):
            return None
        dirs = [os.path.abspath(os.path.expanduser(d)) for d in config_dirs]
        found = roots(dirs)
        if found is None:
            return None
        plugins = any(_key_of(o).startswith(HYDRA_NODE_KEYS) for o in overrides)
        try:
            digest = _inputs_digest(found, plugins)
        except OSError:
            return None
        line = json.dumps([list(overrides), dirs, _shown_from(os.getcwd(), dirs)])
        name = hashlib.sha256(line.encode()).hexdigest()[:32]
        return cls(cache_dir() / "compose" / f"{name}.json", digest)

    def load(self) -> Plain | None:
        """The stored composition if its inputs are unchanged; None if absent, stale or unreadable."""
        try:
            header_line, _, body = self.path.read_text().partition("\n")
            # Under outside_json's limit: a damaged header nested past Python's recursion raised
            # RecursionError out of the command (the body is read once the header's sha256 matches it).
            header = outside_json.loads(header_line, str(self.path))
            if (
                header["format"] != FORMAT
                or header["digest"] != self.digest
                or header["body"] != hashlib.sha256(body.encode()).hexdigest()
                or any(_env_digest(os.environ.get(k)) != v for k, v in header["env"].items())
            ):
                return None
            payload = json.loads(body)
            origins = {k: Origin(*v) for k, v in payload["provenance"].items()}
            shadowed = {k: Shadow(*v) for k, v in payload["shadowed"].items()}
            return Plain(payload["data"], Provenance(origins, shadowed), payload["hydra"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def first_sight(self) -> bool:
        """True the first time this command line misses: it is marked (an empty file, which reads as a
        miss) and not stored. A direct composition takes a few milliseconds, as much as scanning and
        writing its entry, and most lines are composed once (each point of a sweep, each trial or bound
        of a search, a line typed once); a line composed again is stored then. A line Hydra composes is
        stored at once: it costs tens of times that, and Hydra's import."""
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            return True
        return False

    def store(self, body: str, env: Mapping[str, str | None]) -> None:
        """Write the entry: `body` (`_body`) under a header of its inputs' digests."""
        header = {
            "format": FORMAT,
            "digest": self.digest,
            "env": {k: _env_digest(v) for k, v in env.items()},
            "body": hashlib.sha256(body.encode()).hexdigest(),
        }
        with contextlib.suppress(OSError):
            atomic_write_text(self.path, json.dumps(header) + "\n" + body)
            _prune(self.path.parent)


def _shown_from(cwd: str, dirs: Sequence[str]) -> list[str | None]:
    """What a composition's file names depend on in the working directory: for each directory of the
    search path as `search_path.display_path` names its files (the package's resolved, each config dir
    absolute), where it lies against `cwd`. A file below both is shown relative to `cwd`, and one of the
    two then holds the other; any other directory's files are shown absolute. Keyed on this rather than
    on `cwd` itself, a line composed from any directory outside the search path (a test's own, a run's
    folder) is the same entry."""
    here = PurePath(cwd)
    shown = []
    for directory in [str(package_dir(PACKAGE)), *dirs]:
        root = PurePath(directory)
        if root.is_relative_to(here):
            shown.append(f"below:{root.relative_to(here)}")
        elif here.is_relative_to(root):
            shown.append(f"holds:{here.relative_to(root)}")
        else:
            shown.append(None)
    return shown


def on_search_path(config_path: str, config_dirs: Sequence[str] = ()) -> bool:
    """True when `<config_path>.yaml` is a file in a directory of the search path (Hydra would find
    it); False means unknown here — ask Hydra (`launch.config.compose`)."""
    found = roots([os.path.abspath(os.path.expanduser(d)) for d in config_dirs]) or []
    return any(os.path.isfile(os.path.join(root, f"{config_path}.yaml")) for root in found)


def _key_of(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def _inputs_digest(roots: Sequence[str], plugins: bool = False) -> str:
    """Digest of what composition reads besides the command line and the environment: every .yaml
    file (name and bytes) and directory name on the search path, the composition code, and versions;
    with `plugins`, every .py file of Hydra's plugins."""
    digest = hashlib.sha256(repr((FORMAT, sys.version, package_versions(VERSIONED))).encode())
    here = Path(__file__).parents[1]
    for name in CODE:
        digest.update(name.encode() + b"\0" + _file_digest(str(here / name)))
    for root in roots:
        _update(digest, b"root", root, ".yaml")
    if plugins:
        spec = importlib.util.find_spec(PLUGINS)
        locations = spec.submodule_search_locations if spec is not None else None
        for location in locations or []:
            _update(digest, b"plugins", location, ".py")
    return digest.hexdigest()


def _update(digest: Any, kind: bytes, root: str, suffix: str) -> None:
    """Add the directory names and the `suffix` files (name and bytes) below `root` to `digest`."""
    digest.update(kind + b"\0" + root.encode() + b"\0")
    for directory, files in _walk(root, suffix):
        digest.update(b"dir\0" + directory.encode() + b"\0")
        for file in files:
            digest.update(f"file\0{file}\0".encode() + _file_digest(os.path.join(root, directory, file)))


# Each file's sha256, with the status it was read at (inode, size, modification and change times): a
# file whose status is unchanged is not read again in this process (every composition digests ~90
# files: 4 ms of each validate in a warm process, read again for every command line a search or a
# test composes). A write changes the change time, but within one tick of a coarse clock two writes
# can leave the same status, so a status is trusted only once it is older than _SETTLED_NS when read
# (git treats its index's "racily clean" files the same way); a newer file is read every time.
_FILE_DIGESTS: dict[str, tuple[tuple[int, int, int, int], bytes]] = {}
_SETTLED_NS = 2_000_000_000


def _file_digest(path: str) -> bytes:
    """sha256 of the file's bytes."""
    status = os.stat(path)
    key = (status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)
    known = _FILE_DIGESTS.get(path)
    if known is not None and known[0] == key:
        return known[1]
    with open(path, "rb") as handle:
        found = hashlib.sha256(handle.read()).digest()
    if time.time_ns() - max(status.st_mtime_ns, status.st_ctime_ns) > _SETTLED_NS:
        _FILE_DIGESTS[path] = (key, found)
    else:
        _FILE_DIGESTS.pop(path, None)
    return found


def _walk(root: str, suffix: str) -> Iterator[tuple[str, list[str]]]:
    """(dir relative to root, its `suffix` files) in a stable order, following links once."""
    seen: set[tuple[int, int]] = set()  # (device, inode) of each directory walked: one realpath's answer

    def fail(error: OSError) -> None:
        raise error

    for directory, subdirs, files in os.walk(root, onerror=fail, followlinks=True):
        status = os.stat(directory)
        real = (status.st_dev, status.st_ino)
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__") if real not in seen else []
        seen.add(real)
        yield os.path.relpath(directory, root), sorted(f for f in files if f.endswith(suffix))


def _identical(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (True is not 1, a tuple is not a list)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_identical(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_identical(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _prune(directory: Path) -> None:
    entries = list(directory.glob("*.json"))
    if len(entries) <= MAX_ENTRIES:
        return
    entries.sort(key=lambda p: p.stat().st_mtime_ns)
    for old in entries[: len(entries) - MAX_ENTRIES]:
        old.unlink(missing_ok=True)
