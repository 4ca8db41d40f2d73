"""The sbatch options t3rl writes into every job script (launch.run.executors.sbatch), each with the
config key it follows (None: t3rl's own bookkeeping). An `executor.extra_sbatch` entry naming one of
them would make the script say it twice, and sbatch keeps the last: pre-flight refuses it and points at
the key. sbatch accepts any unambiguous prefix of a long option, so prefixes count too."""

from __future__ import annotations

DERIVED: dict[str, str | None] = {
    "job-name": None,
    "nodes": "hardware.nodes",
    "ntasks-per-node": None,
    "gpus-per-node": "hardware.gpus_per_node",
    "cpus-per-task": "executor.cpus_per_task",
    "exclusive": "executor.exclusive",
    "time": "executor.time_limit",
    "account": "executor.account",
    "partition": "executor.partition",
    "output": None,
}
# Other spellings of the GPUs a job asks for: with --gpus-per-node, SLURM counts the GPUs twice.
GPU_REQUESTS = ("gpus", "gres", "gpus-per-task", "tres-per-node")
# Generic resource lists: a GPU request only when they name GPUs (--gres=nvme:1 asks for none).
_RESOURCE_LISTS = ("gres", "tres-per-node")
# sbatch options of their own whose names begin one t3rl writes: getopt reads an exact name as itself.
_OWN_NAMES = ("ntasks",)
# The shortest prefix sbatch reads as an abbreviation here ("--ti" would also be --time).
_MIN_PREFIX = 3


def derived_option(option: str) -> tuple[str, str | None] | None:
    """(the option t3rl writes, the key it follows) when `option` (`--name[=value]`) repeats or
    contradicts one; a GPU request in another spelling counts as --gpus-per-node."""
    name, _, value = option.lstrip("-").partition("=")
    if name in GPU_REQUESTS and (name not in _RESOURCE_LISTS or "gpu" in value):
        return "gpus-per-node", DERIVED["gpus-per-node"]
    if name in _OWN_NAMES:
        return None
    matches = [d for d in DERIVED if d == name or (len(name) >= _MIN_PREFIX and d.startswith(name))]
    if len(matches) == 1:
        return matches[0], DERIVED[matches[0]]
    return None
