"""A total count of GPUs typed as a key of the hardware section (`hardware.num_gpus=8`, `world_size=16`).

Other launchers take the GPUs of a job as one number (torchrun's world size, verl's `n_gpus_per_node ×
nnodes` written as a total, Ray's `num_gpus`). t3rl declares the total as a product the schema computes
(`HardwareConfig.world_size` = `nodes` × `gpus_per_node`), and `node_gpus` is what one node has, not
what trains: the nearest spelling (`node_gpus`) validated, yet left a one-GPU profile training on one GPU.
The fix is the total split as the section declares it, over the nodes' GPUs, so it validates when
applied and trains on the GPUs asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from launch.config.fixes import value_at

# The names a total count of a job's GPUs goes by elsewhere, once its counting words are dropped (`num`,
# `n`, `total`, `count`): the words `gpus`/`gpu` alone, or the product's own name.
_TOTAL_WORDS = frozenset({"num", "n", "total", "count", "of", "nb"})
_PRODUCT = "world_size"


def total_gpus_fix(typed: str, value: Any, root: Mapping[str, Any]) -> str | None:
    """The fix of an unknown `typed` key of a hardware section that names a total count of GPUs, with
    the count `value` typed; None for any other key."""
    section, _, name = typed.rpartition(".")
    if section.rpartition(".")[2] != "hardware" or not _names_a_total(name):
        return None
    hardware = value_at(root, section)
    # the value as typed: a number, or its text (an override's refusal quotes what was typed)
    count = int(value) if isinstance(value, str) and value.isdigit() else value
    if (
        not isinstance(hardware, Mapping)
        or isinstance(count, bool)
        or not isinstance(count, int)
        or count < 1
    ):
        return None
    per_node = hardware.get("node_gpus") or hardware.get("gpus_per_node")
    if not isinstance(per_node, int) or per_node < 1:
        return None
    why = (
        f"t3rl trains on {section}.nodes × {section}.gpus_per_node GPUs ({section}.node_gpus: what one "
        f"node has, {per_node} here)"
    )
    if count <= per_node:
        return f"set {section}.nodes=1 {section}.gpus_per_node={count} ({why})"
    one_node = f"or set {section}.node_gpus={count} {section}.gpus_per_node={count} (one node of {count})"
    if count % per_node == 0:
        # the local executor starts one Ray head on this machine: nodes beyond it are a cluster's
        cluster = " executor=slurm" if value_at(root, "executor.kind") == "local" else ""
        split = f"{section}.nodes={count // per_node} {section}.gpus_per_node={per_node}{cluster}"
        return f"set {split} ({why}); {one_node}"
    return f"{why}: {count} GPUs do not split into nodes of {per_node}; {one_node}"


def _names_a_total(name: str) -> bool:
    """`num_gpus`, `n_gpus`, `gpus`, `total_gpus`, `ngpus`, `gpu_count`, `world_size`; not `node_gpus`
    or `gpus_per_node` (a node's)."""
    words = name.lower().replace("ngpus", "n_gpus").split("_")
    return name.lower() == _PRODUCT or (
        bool({"gpus", "gpu"} & set(words)) and set(words) <= _TOTAL_WORDS | {"gpus", "gpu"}
    )
