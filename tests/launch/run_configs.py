"""Run configs for the launcher tests, composed from the repo's own conf/ files (no Hydra).

A plain module (not conftest.py) so tests import it by a name no other test folder uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from omegaconf import OmegaConf

from launch.config.schema import RunConfig

CONF = Path(__file__).resolve().parents[2] / "conf"


def group(name: str) -> dict[str, Any]:
    """A group file's mapping, over the options of its group its defaults list names (an option built on
    another, as Hydra composes it)."""
    data: dict[str, Any] = yaml.safe_load((CONF / f"{name}.yaml").read_text())
    defaults = data.pop("defaults", None)
    if not defaults:
        return data
    folder = name.rpartition("/")[0]
    merged = OmegaConf.create()
    for entry in defaults:
        merged = OmegaConf.merge(merged, data if entry == "_self_" else group(f"{folder}/{entry}"))
    return OmegaConf.to_container(merged)  # type: ignore[return-value]


def make_run(
    *,
    stages: dict[str, Any] | None = None,
    model: str = "model/qwen3_4b_instruct_2507",
    hardware: str = "hardware/h200x8",
    tracking: str = "tracking/tensorboard",
    **top: Any,
) -> RunConfig:
    """A RunConfig built from conf/ group files, with `stages` and any top-level field given."""
    data: dict[str, Any] = {
        "name": "test_run",
        "model": group(model),
        "hardware": group(hardware),
        "env": group("env/bfcl_multi_turn"),
        "reward": group("reward/progress"),
        "tracking": group(tracking),
        "paths": {
            "runs_dir": "runs",
            "checkpoints_dir": "/ckpt",
            "models_dir": "/models",
            "cache_dir": "/cache",
            "slime_root": "/root/slime",
            "megatron_root": "/root/Megatron-LM",
            "python": "python3",
        },
        "stages": stages or {},
        **top,
    }
    resolved = OmegaConf.to_container(OmegaConf.create(data), resolve=True)
    return RunConfig.model_validate(resolved)


def t3rl_stages(stage2: bool = False) -> dict[str, Any]:
    stages: dict[str, Any] = {
        "prepare_data": {"kind": "prepare_data"},
        "prepare_model": {"kind": "prepare_model"},
        "convert_base": {"kind": "convert_hf_to_torch_dist"},
        "train_stage1": {"kind": "train", "curriculum": group("curriculum/bfcl_stage1")},
    }
    if stage2:
        stages["train_stage2"] = {
            "kind": "train",
            "curriculum": group("curriculum/bfcl_stage2"),
            "init_from": "train_stage1",
            "hardware": {"context_parallel": 4},
        }
    return stages
