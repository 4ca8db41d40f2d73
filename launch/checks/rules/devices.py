"""Torch devices (fields of the kind `Device`: an HF engine's `device`) of the eval stages that run on this
machine (the local executor, Ray's `other_stages: local`) exist here: `cuda` needs a GPU this machine
has, `cuda:N` its N+1-th, `mps` a Mac. Otherwise the eval stage fails after the data, model and
training stages before it ran.

GPUs are counted without torch (its import takes seconds): NVIDIA's driver lists each in
/proc/driver/nvidia/gpus, narrowed by CUDA_VISIBLE_DEVICES. A machine with another kind of device
node (AMD's /dev/kfd, WSL's /dev/dxg) is not judged.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterator
from pathlib import Path

from launch.checks.context import Context
from launch.checks.eval_configs import eval_configs, eval_key
from launch.checks.rules.local_dirs import fields_of_kind
from launch.config.errors import Problem

_OTHER_GPUS = ("/dev/kfd", "/dev/dxg")


def visible_cuda_gpus() -> int | None:
    """CUDA devices a process started here sees; None when this machine may have GPUs t3rl cannot count."""
    if any(os.path.exists(node) for node in _OTHER_GPUS):
        return None
    listed = Path("/proc/driver/nvidia/gpus")
    count = len(list(listed.iterdir())) if listed.is_dir() else 0
    if count == 0 and any(Path("/dev").glob("nvidia[0-9]*")):
        return None  # device nodes without the driver's listing (a container): not counted
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        count = min(count, len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"]))
    return count


def _missing(device: str) -> str | None:
    """Why `device` cannot be used here, or None when it can (or may)."""
    if device == "mps":
        return None if platform.system() == "Darwin" else "mps is Apple's GPU: this machine is not a Mac"
    if not device.startswith("cuda"):
        return None
    gpus = visible_cuda_gpus()
    index = int(device.partition(":")[2] or 0)
    if gpus is None or index < gpus:
        return None
    return "this machine has no CUDA GPU" if gpus == 0 else f"this machine has {gpus} CUDA GPU(s)"


def devices_exist_here(ctx: Context) -> Iterator[Problem]:
    """An eval stage run on this machine uses a torch device it has."""
    executor = ctx.run.executor
    if not (executor.kind == "local" or (executor.kind == "ray" and executor.other_stages == "local")):
        return  # the eval stages run on the cluster (or, under the dry executor, nowhere)
    for stage, config, overrides in eval_configs(ctx.run):
        for field, device, _ in fields_of_kind(config, "device"):
            why = _missing(device)
            if why is not None:
                key = eval_key(stage, overrides, field)
                yield Problem(
                    key,
                    f"{key} is {device}, but {why} (the eval stage runs here)",
                    fix=f"set {key}=cpu",
                )


RULES = (devices_exist_here,)
