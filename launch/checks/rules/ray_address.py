"""The `RAY_ADDRESS` exported here is the cluster's address when `executor.address` is unset
(`launch.config.ray_address`): it is judged by the field's own kind, as if typed there."""

from __future__ import annotations

import os
from collections.abc import Iterator

from pydantic import TypeAdapter, ValidationError

from launch.checks.context import Context
from launch.config.errors import Problem
from launch.config.ray_address import VARIABLE, exported_address
from t3rl_core.fields import Corrected, RayAddress

KEY = "executor.address"


def exported_address_is_a_dashboard(ctx: Context) -> Iterator[Problem]:
    executor = ctx.run.executor
    if executor.kind != "ray" or executor.address is not None:
        return
    address = exported_address(os.environ)
    if address is None:
        return  # t3rl run asks for one before it submits anything (ray_jobs.dashboard_address)
    try:
        TypeAdapter(RayAddress).validate_python(address)
    except ValidationError as error:
        item = error.errors(include_url=False)[0]
        cause = item.get("ctx", {}).get("error")
        meant = (
            f"set {KEY}={cause.value}" if isinstance(cause, Corrected) else f"set {KEY}=http://<head>:8265"
        )
        why = str(cause or item["msg"]).partition("; use ")[0]
        yield Problem(
            KEY,
            f"{KEY} is unset, so t3rl submits to ${VARIABLE}, exported here as {os.environ[VARIABLE]!r}, "
            f"which is no Ray dashboard: {why}",
            f"${VARIABLE} (exported in the environment t3rl runs in)",
            f"{meant} (the key wins over ${VARIABLE}); or export {VARIABLE} as that URL",
        )


RULES = (exported_address_is_a_dashboard,)
