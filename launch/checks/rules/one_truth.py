"""One truth per setting: a value the user set that a later layer silently replaces is refused, naming
both places.

- An experiment's own keys merge where `_self_` stands in its defaults list: a group file merged after
  it replaces what the experiment wrote (`Provenance.shadowed`).
- A managed service writes its URL into the env key it serves (`env_url_key`): a URL the user set
  there would be replaced.
- A variable in `hardware.env_vars` that t3rl derives for the job (launch.plan.slime_args.job_env)
  and a pass-through flag that t3rl derives (launch.plan.pass_through) are refused where the argv is
  built.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from launch.checks.context import Context
from launch.config.errors import Problem


def experiment_values_kept(ctx: Context) -> Iterator[Problem]:
    """A key an experiment file sets is not replaced by a config file merged after it."""
    for key, shadow in ctx.provenance.shadowed.items():
        value = _value(ctx.data, key)
        yield Problem(
            key,
            f"{shadow.source} sets {key}={_text(shadow.raw)}, but {shadow.by}, merged after it (the "
            f"experiment's defaults list puts `_self_` before that default), replaces it with {_text(value)}",
            source=shadow.source,
            fix=f"set {key}={_text(shadow.raw)} (or put `_self_` last in the experiment's defaults list, "
            "so that its own values win)",
        )


def service_urls_not_set_twice(ctx: Context) -> Iterator[Problem]:
    """An env key a service writes its URL into is not also set by the user to something else."""
    for name, service in ctx.run.services.items():
        if service.env_url_key is None:
            continue
        key = f"env.{service.env_url_key}"
        origin = ctx.provenance.origin(key)
        value = _value(ctx.data, key)
        if origin is None or not origin.source.startswith("override") or value in (None, service.url):
            continue
        yield Problem(
            key,
            f"{key} is set to {value}, but services.{name} serves that key: the stages it runs with get "
            f"{service.url} instead",
            fix=f"set services.{name}.env_url_key=null (use your URL and start no service), or drop the "
            f"override of {key}",
        )


def _value(data: Any, key: str) -> Any:
    for part in key.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ",".join(_text(v) for v in value) + "]"
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)


RULES = (experiment_values_kept, service_urls_not_set_twice)
