"""The environment of a child that runs code t3rl does not vouch for, without t3rl's credentials.

An OpenEnv environment's server (a `command` service) executes what the model asks for: a variable it
inherits can be printed into an observation, and from there into trajectories, slime's rollouts and
the trained weights. Such a child gets the environment without credentials: secret-named variables,
random values under key-like names, tokens known by their form whatever the name, values a `Secret`
revealed in this process (not in another: a plain-named variable only another process reads as a
`Secret` stays), and any variable whose value holds one of those inside longer text (a proxy's URL
with its password, `HTTPS_PROXY=http://user:pass@proxy:3128`; a note quoting a token). The variables
its own command reads by reference (`env:NAME`, revealed by `t3rl_core.secret_launch` in the child)
stay. A sandbox cell's environment follows the same rule (`t3rl_core.sandbox.config`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from t3rl_core.secret import revealed, url_passwords
from t3rl_core.secret_name_words import looks_like_credential
from t3rl_core.secret_names import is_credential_at, is_secret_name
from t3rl_core.secret_pieces import mask_values
from t3rl_core.secret_shapes import credentials_in

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


def holds_credential(name: str, value: str, known: Iterable[str] = ()) -> bool:
    """The variable `name=value` holds a credential: by its name, as its whole value, inside its value
    (a URL's password, a token known by its form, `api_key=V`, `?token=V`), or one of `known` (values of
    credential variables, revealed values) anywhere in its value, in any form (`holds_known`)."""
    return (
        is_secret_name(name)
        or is_credential_at(name, value)
        or bool(url_passwords(value) or credentials_in(value))
        or holds_known(value, known)
    )


def holds_known(value: str, known: Iterable[str]) -> bool:
    """`value` holds one of `known` in any form the masking of text knows it by (`mask_values`: as it
    is, percent-encoded, JSON-escaped, in base64 beside other bytes, as a registry's `auth` of
    `user:V`, in hex, its beginning or end of 12+ characters): one rule for what a file may not show
    and what a child may not inherit."""
    values = [k for k in known if len(k) >= MIN_CREDENTIAL_LEN]
    return bool(values) and mask_values(value, values, looks_like_credential) != value


def without_credentials(
    environ: Mapping[str, str], keep: Iterable[str] = (), values: Iterable[str] = ()
) -> dict[str, str]:
    """`environ` without the variables that hold credentials (`holds_credential`: by name, by form,
    inside their value, a value a `Secret` revealed here or one of `values`), except those named in
    `keep`."""
    kept, known = set(keep), revealed() | set(values)
    return {
        name: value
        for name, value in environ.items()
        if name in kept or not holds_credential(name, value, known)
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


def environment_for_untrusted(argv: Iterable[str], environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of a process that runs what the model asks (a `command` service, an OpenEnv
    `env.command` server): `environ` without its credentials, but for the variables `argv` reads by
    reference (`--api-key env:NAME`, revealed in that process's own code)."""
    return without_credentials(environ, referenced_variables(argv), credential_values(environ))
