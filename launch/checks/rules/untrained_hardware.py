"""A root hardware key typed on the command line of a run that trains nothing: `hardware.tensor_parallel=2`
on quickstart (data, a model built offline, two evals on the CPU) was accepted without a word, though no
stage of the run reads the training layout.

Which root hardware fields a stage reads is what the plan reads (`stage_hardware._read_from_root`: the plan
built behind a recorder), and, for a self-served SGLang eval or a managed service, what the checks of its
server read of the root section (declared below: they judge a server's GPUs against the root layout). A
field typed that none of them reads does nothing: a warning, with the override dropped as the fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from launch.checks.context import Context
from launch.checks.eval_configs import eval_config_of
from launch.checks.rules.stage_hardware import _read_from_root
from launch.config.errors import Problem
from launch.config.fixes import typed_text, value_at
from launch.config.schema import EvalStage

# The root hardware fields the checks of a self-served eval server and of a managed service read beside
# the plan (`eval_server.eval_server_fits`, `service_gpus`: a node's GPUs, their memory and type, the
# share SGLang takes of it).
_SERVERS_READ = frozenset({"gpus_per_node", "node_gpus", "gpu_memory_gib", "gpu_type", "sglang_mem_fraction"})


def typed_hardware_read_without_training(ctx: Context) -> Iterator[Problem]:
    """A root hardware key typed on the command line of a run with no train stage is one a stage reads."""
    if any(scope.stage is not None for scope in ctx.scopes):
        return  # a train stage reads the root layout (stage_hardware judges the fields it replaces)
    read = _read_from_root(ctx)
    if read is None:
        return  # the plan is not built: its refusal says why
    if ctx.run.services or any(_serves(ctx, spec) for spec in ctx.run.stages.values()):
        read |= _SERVERS_READ
    said: set[str] = set()
    for key, origin in ctx.provenance.items():
        field = key.split(".")[1] if key.startswith("hardware.") else ""
        typed = re.fullmatch(r"override `(\+{0,2}hardware\.[^`]*)`", origin.source)
        if not field or field == "name" or field in read or typed is None or origin.deleted:
            continue
        if typed[1] in said:
            continue  # one override of a section (`hardware.recompute={…}`): said once
        said.add(typed[1])
        key = typed[1].lstrip("+").split("=", 1)[0]  # the key typed (its containers share its source)
        stages = ", ".join(ctx.run.stages)
        yield Problem(
            key,
            f"{key} is set to {typed_text(value_at(ctx.data, key))}, but no stage of this run trains (its "
            f"stages: {stages}) and none reads hardware.{field}: it does nothing",
            fix=f"drop `{typed[1]}`",
            severity="warning",
        )


def _serves(ctx: Context, spec: object) -> bool:
    """The stage is an eval that starts its own SGLang server."""
    config = eval_config_of(ctx.run, spec) if isinstance(spec, EvalStage) else None
    return (
        config is not None and config.engine.name == "sglang" and getattr(config.engine, "url", None) is None
    )


RULES = (typed_hardware_read_without_training,)
