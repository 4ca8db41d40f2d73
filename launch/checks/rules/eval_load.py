"""An eval's concurrency against what its engine and this machine allow.

- The SGLang engine holds one connection per request in flight, at most
  min(`eval.concurrency`, `eval.engine.concurrency`) at once, each a file descriptor of the eval's
  process: where the stage runs here, that many at or above this process's open-files limit
  (`ulimit -n`, inherited by the stage) fails with "Too many open files" once the eval is under way
  (refused; within a margin of it, warned about).
- Episodes beyond `eval.engine.concurrency` never reach the engine at once: `eval.concurrency` above it
  does not hold what it says (a warning).
"""

from __future__ import annotations

import resource
from collections.abc import Iterator

from launch.checks.context import Context
from launch.checks.eval_configs import eval_configs, eval_key
from launch.checks.model_options import largest_option
from launch.config.errors import Problem
from launch.config.model_size import GIB, param_counts

# Descriptors an eval process holds besides its connections: surely its standard streams; in practice
# also the interpreter's, its logs, data files and the env's (a margin, warned about).
STANDARD_STREAMS = 3
RESERVED_FILES = 64


def open_files_limit() -> int | None:
    """This process's soft limit of open files (a stage started here inherits it); None = unlimited."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def connections_fit(ctx: Context) -> Iterator[Problem]:
    """An SGLang eval's connections in flight, against the engine's bound and the open-files limit."""
    limit = open_files_limit() if ctx.stages_run_here else None
    for name, config, overrides in eval_configs(ctx.run):
        engine = config.engine
        if engine.name != "sglang":
            continue
        slots, bound = (
            eval_key(name, overrides, "concurrency"),
            eval_key(name, overrides, "engine.concurrency"),
        )
        in_flight = min(config.concurrency, engine.concurrency)  # type: ignore[attr-defined]
        if limit is not None and in_flight + RESERVED_FILES > limit:
            key = ctx.latest(slots, bound)
            certain = in_flight + STANDARD_STREAMS > limit
            yield Problem(
                key,
                f"up to {in_flight} requests in flight (min of {slots} {config.concurrency} and {bound} "
                f"{engine.concurrency}), one connection each, but a process here may open {limit} files "
                f"(ulimit -n), "
                + (
                    "its standard streams among them: the eval would fail with 'Too many open files'"
                    if certain
                    else f"and the interpreter, its logs and the env take some: {RESERVED_FILES} are kept"
                ),
                fix=f"set {key}={max(1, limit - RESERVED_FILES)} (or raise ulimit -n)",
                severity="error" if certain else "warning",
            )
        elif config.concurrency > engine.concurrency:
            yield Problem(
                slots,
                f"{slots} {config.concurrency} episodes at the engine at once, but the engine sends at most "
                f"{bound} {engine.concurrency} requests at once: the rest wait for it",
                fix=f"set {slots}={engine.concurrency}, or raise {bound}",
                severity="warning",
            )


# Bytes per weight of the HF engine's dtypes.
_DTYPE_BYTES = {"float32": 4, "bfloat16": 2}


def memory_bytes() -> int | None:
    """This machine's memory (Linux /proc/meminfo MemTotal); None when it cannot be read."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def hf_weights_fit_here(ctx: Context) -> Iterator[Problem]:
    """An HF engine on the CPU loads the run's model into this machine's memory: its weights alone
    (parameters × the dtype's bytes) must fit, or the eval stage dies of OOM after the stages before it
    (a warning: validate may run on another machine than the run)."""
    total = memory_bytes() if ctx.stages_run_here else None
    if total is None:
        return
    params = param_counts(ctx.run.model.architecture).total
    for name, config, overrides in eval_configs(ctx.run):
        engine = config.engine
        if engine.name != "hf" or engine.model_path is not None or engine.device != "cpu":  # type: ignore[attr-defined]
            continue  # another model's directory, or a device's own memory
        dtype = eval_key(name, overrides, "engine.dtype")
        need = params * _DTYPE_BYTES[engine.dtype]  # type: ignore[attr-defined]
        if need <= total:
            continue
        halved = engine.dtype != "bfloat16" and params * _DTYPE_BYTES["bfloat16"] <= total  # type: ignore[attr-defined]
        yield Problem(
            ctx.latest("model.name", dtype),
            f"eval stage {name or 'eval'} loads {ctx.run.model.name} ({params / 1e9:.1f}B parameters) on "
            f"this machine's CPU in {engine.dtype}: {need / GIB:.0f} GiB of weights, and the machine "  # type: ignore[attr-defined]
            f"has {total / GIB:.0f} GiB",
            fix=f"set {dtype}=bfloat16" if halved else _smaller_model(ctx, total),
            # validate may run on another machine than the run (a laptop before a workstation), as for
            # GPUs: warned here, where the stage would die of OOM
            severity="warning",
        )


def _smaller_model(ctx: Context, total: int) -> str:
    """The model option with the most parameters whose float32 weights fit in `total` bytes."""
    name = largest_option(
        ctx.config_dirs, lambda _, arch: param_counts(arch).total * _DTYPE_BYTES["float32"] <= total
    )
    if name is None:
        return "evaluate on GPUs (engine sglang)"
    return f"set model={name} (the largest model option this machine holds)"


RULES = (connections_fit, hf_weights_fit_here)
