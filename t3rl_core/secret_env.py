"""The environment of a child that runs code t3rl does not vouch for, without t3rl's credentials.

An OpenEnv environment's server (a `command` service) executes what the model asks for: a variable it
inherits can be printed into an observation, and from there into trajectories, slime's rollouts and
the trained weights. Such a child gets the environment without credentials: secret-named variables,
random values under key-like names, tokens known by their form whatever the name, values a `Secret`
revealed in this process (not in another: a plain-named variable only another process reads as a
`Secret` stays). The variables its own command reads by reference (`env:NAME`, revealed by
`t3rl_core.secret_launch` in the child) stay.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from t3rl_core.secret import revealed
from t3rl_core.secret_names import is_credential_at, is_secret_name

# Values this short ("1", "true") are as likely another variable's by chance as a copy of a credential.
MIN_CREDENTIAL_LEN = 6


def credential_values(environ: Mapping[str, str]) -> frozenset[str]:
    """The values of `environ`'s variables that hold credentials: the same text under any other name
    (`NOTE: ${oc.env:HF_TOKEN}` composed into a config) is the same credential."""
    return frozenset(
        value
        for name, value in environ.items()
        if len(value) >= MIN_CREDENTIAL_LEN and (is_secret_name(name) or is_credential_at(name, value))
    )


def without_credentials(
    environ: Mapping[str, str], keep: Iterable[str] = (), values: Iterable[str] = ()
) -> dict[str, str]:
    """`environ` without the variables that hold credentials (by name, by form, as a value a `Secret`
    revealed here or one of `values`), except those named in `keep`."""
    kept, known = set(keep), revealed() | set(values)
    return {
        name: value
        for name, value in environ.items()
        if name in kept or not (is_secret_name(name) or is_credential_at(name, value) or value in known)
    }


def referenced_variables(argv: Iterable[str]) -> set[str]:
    """The variables `argv`'s `env:NAME` references (as `--flag env:NAME` or `--flag=env:NAME`) read."""
    names = set()
    for token in argv:
        reference = token.partition("=")[2] if token.startswith("-") else token
        kind, _, name = reference.partition(":")
        if kind == "env" and name:
            names.add(name)
    return names
