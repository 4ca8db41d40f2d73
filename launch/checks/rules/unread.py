"""Settings typed on the command line that the run never reads (a warning): a value that does nothing
looks as if it did something. Each section declares when it is read:

- `eval.server.*`, `stages.<stage>.eval.server.*`: the SGLang server an eval stage starts on its model,
  which it does only with the sglang engine and no `engine.url` (a running server is used instead);
- `tracking.*` besides `kind`: the tracker's settings, read by no tracker under `kind: none`.

Only overrides are judged: a shipped file's settings are defaults, not the user's word.
"""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.checks.eval_configs import eval_configs
from launch.config.errors import Problem

SERVER = "server"


def _servers_read(ctx: Context) -> set[str]:
    """The server sections an eval stage starts a server from (`eval.server`, `stages.<s>.eval.server`)."""
    read = set()
    for stage, config, overrides in eval_configs(ctx.run):
        if config.engine.name == "sglang" and getattr(config.engine, "url", None) is None:
            read.add(f"stages.{stage}.eval.server" if stage and SERVER in overrides else "eval.server")
    return read


def _typed(ctx: Context) -> Iterator[tuple[str, str]]:
    """(key, the override) of every leaf an override set."""
    for key, origin in ctx.provenance.items():
        if origin.source.startswith("override") and not origin.deleted:
            yield key, origin.source


def typed_settings_are_read(ctx: Context) -> Iterator[Problem]:
    """A setting typed on the command line is one some stage reads."""
    servers = _servers_read(ctx)
    for key, _ in _typed(ctx):
        parts = key.split(".")
        section = ".".join(parts[: parts.index(SERVER) + 1]) if SERVER in parts and "eval" in parts else None
        if section in ("eval.server", *(f"stages.{s}.eval.server" for s in ctx.run.stages)):
            if section in servers or section == key:
                continue
            yield Problem(
                key,
                f"{key} is set, but no eval stage starts an SGLang server from {section} (each uses a "
                "running server's engine.url, or another engine): it does nothing",
                fix=f"drop it: ~{key} (or set the stage's engine.url=null to have it start the server)",
                severity="warning",
            )
        elif (
            parts[0] == "tracking"
            and len(parts) == 2
            and parts[1] != "kind"
            and ctx.run.tracking.kind == "none"
        ):
            yield Problem(
                key,
                f"{key} is set, but tracking.kind is none: no tracker reads it",
                fix=f"drop it: ~{key} (or set tracking.kind=tensorboard or wandb)",
                severity="warning",
            )


RULES = (typed_settings_are_read,)
