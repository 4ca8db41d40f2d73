"""No credential is written into the config itself, and none shows up where it would be masked.

URLs carry no password and argument lists no secret flag's value: both would reach config.yaml,
runtime YAMLs and commands; the fix is a reference that the process using the credential resolves (a
`Secret` field: env:NAME or file:PATH). A flag given by reference is revealed only where t3rl starts
the program through its secret launcher (the eval's server, a service); elsewhere the program would
get the reference's text. A credential's value in any other config value (the run's name, a stage's
name, a path) is refused: every file and every line printed masks it, so plan.sh would name a
directory or address that does not exist. A literal that looks like a credential under a key that
takes one is a warning: t3rl masks it, but it sits in a config file or the shell's history.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from launch.checks.context import Context
from launch.checks.eval_configs import eval_configs, eval_key
from launch.config.errors import Problem
from launch.config.secrets import is_reference, is_secret_flag, secret_values
from t3rl_core.secret import revealed, url_passwords
from t3rl_core.secret_names import is_credential_at, is_secret_key
from t3rl_core.secret_shapes import any_credentials_in, credentials_in, is_shaped_credential

_FIX = (
    "remove the credential and pass it by reference: export NAME=<the credential>, then set the "
    "section's credential field to env:NAME (e.g. eval.engine.api_key=env:SGLANG_API_KEY, "
    "env.user.api_key=env:USER_SIM_API_KEY; job variables: hardware.env_vars.NAME='${oc.env:NAME}')"
)
# _REVEALING_LISTS is a string, compiled by `re` (and cached) when first used, not on import: a cold `t3rl
# validate +experiment=stage2_bfcl` never uses it.
# Argument lists of programs t3rl starts through t3rl_core.secret_launch (a flag's reference is
# revealed by the program's own process): the eval's server, a managed service.
_REVEALING_LISTS = r"^((stages\.[^.]+\.)?eval\.server|services\.[^.]+)\.extra_args$"
# A credential shorter than this is not looked for inside other values (it would match by chance).
_MIN_FOUND_LEN = 6


def no_password_in_urls(ctx: Context) -> Iterator[Problem]:
    """`scheme://user:password@host` anywhere in the config."""
    for key, value in ctx.walk.strings:
        if url_passwords(value):
            yield Problem(key, "a password is embedded in this URL (user:password@host)", fix=_FIX)


def no_secret_flag_values(ctx: Context) -> Iterator[Problem]:
    """`--api-key X` / `--token=X` in any argument list (extra_args and the like); `--api-key env:NAME`
    only where the program's own process reveals it."""
    for key, items in ctx.walk.lists:
        for i, item in enumerate(items):
            if not (isinstance(item, str) and is_secret_flag(item)):
                continue
            flag, eq, value = item.partition("=")
            if not eq and i + 1 < len(items):
                value = str(items[i + 1])
            if value and not is_reference(value):
                yield Problem(f"{key}.{i}", f"a credential follows the secret flag {flag}", fix=_FIX)
            elif value and not re.match(_REVEALING_LISTS, key):
                yield Problem(
                    f"{key}.{i}",
                    f"{flag} {value}: this program would get the reference's text, not the credential "
                    "(only the eval's server and services reveal references in their extra_args)",
                    fix="remove the flag and pass the credential through the environment: "
                    "hardware.env_vars.NAME='${oc.env:NAME}' with NAME exported where the job runs",
                )


def no_shaped_credentials(ctx: Context) -> Iterator[Problem]:
    """A credential known by its shape (`sk-…`, `hf_…`, a JWT, `?token=…`, `Bearer …`) in an ordinary
    value, whatever the key is called: masked in every file and line, so the command, URL or name
    that holds it would not be what the run uses. A job variable that is one whole token is only
    warned about (literal_credentials): the job reads it from its own environment."""
    walk = ctx.walk
    named = ((key, name, True) for key, name in walk.keys)
    entries = [*named, *((key, value, False) for key, value in walk.strings)]
    if not any_credentials_in(value for _, value, _ in entries):
        return  # the usual case, in one scan instead of one per name and value
    for key, value, is_name in entries:
        if not credentials_in(value) or (not is_name and is_secret_key(key)):
            continue
        if not is_name and _in_environment(key) and is_shaped_credential(value):
            continue
        yield Problem(
            key.rpartition(".")[0] if is_name else key,
            f"{'the name of an entry under it' if is_name else 'it'} holds a credential, known by its "
            "form (a token prefix such as sk- or hf_, a JWT, a URL query parameter named token or key, "
            "an Authorization header): every file and line t3rl writes masks it, so what runs would not "
            "be what the config says",
            fix=_FIX,
        )


def _in_environment(key: str) -> bool:
    return key.rpartition(".")[0].rsplit(".", 1)[-1] in ("env_vars", "runtime_env")


def no_secret_in_names(ctx: Context) -> Iterator[Problem]:
    """A credential's value (a secret-named variable's, one of this config's, one a Secret revealed)
    in an ordinary value or name of the config: masked in every file, plan.sh would not match the
    directories and addresses the run uses."""
    values = sorted((v for v in secret_values() if len(v) >= _MIN_FOUND_LEN), key=len, reverse=True)
    if not values:
        return
    for key, text, is_name in _names_and_values(ctx.data, ""):
        found = next((v for v in values if v in text), None)
        if found is None or found in url_passwords(text) or found in credentials_in(text):
            continue  # reported above
        what = "the name of an entry under it" if is_name else "it"
        yield Problem(
            key.rpartition(".")[0] if is_name else key,
            f"{what} holds {_what(found)}: every file and line t3rl writes masks it, so plan.sh, "
            "config.yaml and the run dir's name would not show what the run uses",
            fix="use another value here (names and paths must not contain a credential)",
        )


def no_credential_in_config_dirs(ctx: Context) -> Iterator[Problem]:
    """A `--config-dir` whose path holds a credential (known by its form, or a credential's value):
    manifest.json records it masked and the "run it:" line prints it masked, so a resume of the run
    (`t3rl run --run-dir`) would look for a directory that does not exist."""
    values = [v for v in secret_values() if len(v) >= _MIN_FOUND_LEN]
    for directory in ctx.config_dirs:
        if credentials_in(directory) or url_passwords(directory) or any(v in directory for v in values):
            yield Problem(
                "--config-dir",
                "the config dir's path holds a credential: every record masks it, so the run's "
                "manifest.json and its resume command would name a directory that does not exist",
                source=f"--config-dir {directory}",
                fix="rename or move the directory so that its path holds no credential",
            )


def literal_credentials(ctx: Context) -> Iterator[Problem]:
    """A literal that looks like a credential under a key that takes one (a warning: it is masked)."""
    for key, value in ctx.walk.leaves:
        if not is_credential_at(key, value) or (is_shaped_credential(value) and not _in_environment(key)):
            continue  # a token by its form outside a job's environment: refused (no_shaped_credentials)
        name = key.rpartition(".")[2]
        if _in_environment(key):
            reference = f"{key}='${{oc.env:{name}}}'"
            effect = f"the job reads ${{{name}}} from the environment where it runs, not this value"
        else:
            reference = f"{key}=env:NAME (or file:PATH) in a credential field"
            effect = "it is masked in every file t3rl writes, but sits in your config or shell history"
        yield Problem(
            key,
            f"looks like a credential written into the config: {effect}",
            fix=f"export it and pass it by reference: {reference}",
            severity="warning",
        )


def keys_sent_in_clear(ctx: Context) -> Iterator[Problem]:
    """An eval engine's key sent over plain http to another machine (a warning: an internal network
    may be trusted, but every machine on the way can read the header)."""
    for stage, config, overrides in eval_configs(ctx.run):
        engine = config.with_server_key().engine
        url, key = getattr(engine, "url", None), getattr(engine, "api_key", None)
        if not url or key is None or not _in_clear(url):
            continue
        yield Problem(
            eval_key(stage, overrides, "engine.url"),
            f"the engine sends the key of {key} to {urlsplit(url).hostname} over plain http: every "
            "machine on the way can read it",
            fix="put TLS in front of the server and use https://, or reach it through an SSH tunnel "
            "(ssh -L 30000:127.0.0.1:30000 HOST, then eval.engine.url=http://127.0.0.1:30000)",
            severity="warning",
        )


def _in_clear(url: str) -> bool:
    """`http://` to a host other than this machine's loopback."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme != "http" or host == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True  # a name: another machine


def _what(value: str) -> str:
    """Where a credential's value comes from, without the value."""
    names = sorted(k for k, v in os.environ.items() if v == value)
    if names:
        return f"the value of the environment variable {names[0]}"
    if value in revealed():
        return "the value of a Secret (env:NAME / file:PATH) of this config"
    return "the value of a credential of this config"


def _names_and_values(node: Any, key: str) -> Iterator[tuple[str, str, bool]]:
    """Every mapping key and string value outside credential entries: (dotted key, text, is a key)."""
    if isinstance(node, dict):
        for k, v in node.items():
            child = f"{key}.{k}" if key else str(k)
            yield child, str(k), True
            if not (is_secret_key(child) or is_credential_at(child, v)):
                yield from _names_and_values(v, child)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            if i and isinstance(node[i - 1], str) and is_secret_flag(node[i - 1]):
                continue  # the value of `--api-key`: a credential's place
            yield from _names_and_values(v, f"{key}.{i}")
    elif isinstance(node, str) and not is_reference(node):
        yield key, node, False


RULES = (
    no_password_in_urls,
    no_secret_flag_values,
    no_shaped_credentials,
    no_secret_in_names,
    no_credential_in_config_dirs,
    literal_credentials,
    keys_sent_in_clear,
)
