"""No credential is written into the config itself: URLs carry no password, argument lists no secret
flag's value. Both would reach config.yaml, runtime YAMLs and commands; the fix is a reference that the
process using the credential resolves (a `Secret` field: env:NAME or file:PATH)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from launch.checks.context import Context
from launch.config.errors import Problem
from launch.config.secrets import is_reference, is_secret_flag
from t3rl_core.secret import url_passwords

_FIX = (
    "remove the credential and pass it by reference: export NAME=<the credential>, then set the "
    "section's credential field to env:NAME (e.g. eval.engine.api_key=env:SGLANG_API_KEY, "
    "env.user.api_key=env:USER_SIM_API_KEY; job variables: hardware.env_vars.NAME='${oc.env:NAME}')"
)


def no_password_in_urls(ctx: Context) -> Iterator[Problem]:
    """`scheme://user:password@host` anywhere in the config."""
    for key, value in _strings(ctx.data, ""):
        if url_passwords(value):
            yield Problem(key, "a password is embedded in this URL (user:password@host)", fix=_FIX)


def no_secret_flag_values(ctx: Context) -> Iterator[Problem]:
    """`--api-key X` / `--token=X` in any argument list (extra_args and the like)."""
    for key, items in _lists(ctx.data, ""):
        for i, item in enumerate(items):
            if not (isinstance(item, str) and is_secret_flag(item)):
                continue
            flag, eq, value = item.partition("=")
            if not eq and i + 1 < len(items):
                value = str(items[i + 1])
            if value and not is_reference(value):
                yield Problem(f"{key}.{i}", f"a credential follows the secret flag {flag}", fix=_FIX)


def _strings(node: Any, key: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _strings(v, f"{key}.{k}" if key else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _strings(v, f"{key}.{i}")
    elif isinstance(node, str):
        yield key, node


def _lists(node: Any, key: str) -> Iterator[tuple[str, list[Any]]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _lists(v, f"{key}.{k}" if key else str(k))
    elif isinstance(node, list):
        yield key, node
        for i, v in enumerate(node):
            yield from _lists(v, f"{key}.{i}")


RULES = (no_password_in_urls, no_secret_flag_values)
