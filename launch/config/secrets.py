"""Keeps secrets out of everything t3rl writes, prints or caches.

Credentials reach the jobs only through the environment or a `t3rl_core.secret.Secret` reference
(`env:NAME`, `file:PATH`) that the process using it resolves. Whatever t3rl persists or prints — the
run dir (config.yaml, overrides.yaml, manifest.json, plan.sh, command.sh, runtime YAMLs, logs), the
tracked config, `t3rl show` and error messages — passes through `scrub_text` / `scrub_obj` first, and
the composition cache never stores a config that holds a secret (`holds_secret`).

What counts as a secret:
- the value of a secret-named environment variable (HF_TOKEN, *_API_KEY, *_SECRET, …), and of any
  variable whose whole value is a credential by its form (`MODEL_OPTS=<a random 40-character key>`);
- the value of a config key or override with a secret-looking name (api_key, token, password,
  secret, …), of any key under a `secrets` node, and of a secret-named variable under
  `hardware.env_vars` / `runtime_env`;
- the password of a URL (`https://user:password@host`);
- a credential known by its shape wherever it is (`sk-…`, `hf_…`, a JWT, `?token=…`, a Bearer header:
  t3rl_core.secret_shapes);
- the value after a secret flag in an argument list (`--api-key X`, `--token=X`).
`remember_config` / `remember_overrides` note the values a command's config carries, so that every
later scrub in this process masks them wherever they reappear (an error message, a log line).
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any

from launch.config.declared_fields import fields_holding
from t3rl_core.secret import (
    Secret,
    SecretResolutionError,
    mask_text,
    no_core_dumps,
    revealed,
    url_passwords,
)
from t3rl_core.secret_commands import argv_credentials
from t3rl_core.secret_names import (
    is_credential_at,
    is_key_like,
    is_reference,
    is_secret_flag,
    is_secret_key,
    is_secret_name,
    looks_like_credential,
    reference_default,
)
from t3rl_core.secret_pieces import mask_values
from t3rl_core.secret_shapes import SEPARATOR, any_credentials_in, credentials_in, is_shaped_credential

MASK = "***"

# `--flag=value`, `--flag,value` or `--flag value` inside an override's text (a Hydra list or string).
# A flag starts a token: the `-credentials` inside `~/.git-credentials,~/.docker` is part of a path,
# and the next item no credential.
# Each item may be quoted (`['--api-key', 'V']`) and a sweep's function call closes after the value.
_FLAG_IN_TEXT = re.compile(
    r"(?<![^\s\[,'\"=(])(--?[A-Za-z][\w-]*)['\"]?(?:=|,\s*|\s+)['\"]?([^,\])\s'\"]+)"
)
# _OC_ENV_NAME is a string, compiled by `re` (and cached) when first used, not on import: a cold `t3rl
# validate +experiment=stage2_bfcl` never uses it.
# `${oc.env:NAME…}` in a value: NAME.
_OC_ENV_NAME = r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)"
# More than a credential file holds: a longer file is not one.
_MAX_SECRET_FILE = 65536
# Values this short are too likely to occur by chance ("1", "true") to be masked inside other text.
_MIN_SECRET_LEN = 6
# Values this process has seen in secret places (see remember_config).
_REMEMBERED: set[str] = set()
# The environment `secret_values` last read (its raw bytes) and the credentials it held.
_ENVIRONMENT_SEEN: list[Any] = [None, frozenset()]


def secret_values(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The credentials of `environ` (default: this process's environment) by their names and looks,
    the secret values this process has remembered and every value a `Secret` revealed in it."""
    if environ is not None:
        return _environment_credentials(environ) | _known()
    # Every line t3rl prints asks (a plan: ~240 times); reading the environment through os.environ
    # decodes each variable each time, so its credentials are kept while its raw bytes stay the same.
    raw = getattr(os.environ, "_data", None)  # CPython's bytes dict under os.environ
    if not isinstance(raw, dict):
        return _environment_credentials(os.environ) | _known()
    if raw != _ENVIRONMENT_SEEN[0]:
        _ENVIRONMENT_SEEN[:] = [dict(raw), _environment_credentials(os.environ)]
    return _ENVIRONMENT_SEEN[1] | _known()


def _environment_credentials(env: Mapping[str, str]) -> frozenset[str]:
    return frozenset(
        v
        for k, v in env.items()
        # The cached name checks first.
        if len(v) >= _MIN_SECRET_LEN
        and (((is_secret_name(k) or is_key_like(k)) and is_credential_at(k, v)) or is_shaped_credential(v))
    )


def _known() -> frozenset[str]:
    return frozenset(_REMEMBERED) | frozenset(v for v in revealed() if len(v) >= 2)


def scrub_text(text: str, secrets: Iterable[str] | None = None) -> str:
    """`text` with every secret value replaced by the mask (longest first, so overlaps stay masked;
    also folded over lines or cut short: t3rl_core.secret_pieces), and every URL password and every
    credential known by its shape (t3rl_core.secret_shapes)."""
    values = secret_values() if secrets is None else frozenset(secrets) | _known()
    # The same text scrubbed again with nothing learnt in between (a problem's texts, made again for its
    # report; a file's path, the source of many problems): the same answer, not another scan. The key is
    # all the answer depends on: the values and which of them are cut short (`_cuttable`).
    key = (text, values, frozenset(_REMEMBERED), revealed())
    done = _SCRUBBED.get(key)
    if done is not None:
        return done
    # Whole, folded over lines by a renderer, or (a credential's) cut short by a view.
    scrubbed = mask_text(mask_values(text, values, _cuttable))
    if len(text) <= _SCRUBBED_TEXT:
        if len(_SCRUBBED) >= _SCRUBBED_COUNT:  # bounded: a long run's every log line passes here
            _SCRUBBED.clear()
        _SCRUBBED[key] = scrubbed
    return scrubbed


# `scrub_text`'s recent answers for short texts, by text and what else the answer depends on.
_SCRUBBED: dict[tuple[str, frozenset[str], frozenset[str], frozenset[str]], str] = {}
_SCRUBBED_TEXT = 4096
_SCRUBBED_COUNT = 512


def scrub_texts(texts: Sequence[str], secrets: Iterable[str] | None = None) -> list[str]:
    """`scrub_text` of each of `texts`, in one scrub of them all when that changes nothing (the usual
    case: a run's ~700 provenance keys): joined by a space, which no credential's shape, URL or query
    value runs on across, and `SEPARATOR`, where a line's reader sees a text begin (`password: a b 1234`
    is its own line's entry), every text that a scrub would change changes the joined text too."""
    values = secret_values() if secrets is None else frozenset(secrets)
    joined = f" {SEPARATOR} ".join(texts)
    if scrub_text(joined, values) == joined:
        return list(texts)
    return [scrub_text(text, values) for text in texts]


def _cuttable(value: str) -> bool:
    """A value whose beginning or end alone is masked too: known as a credential (remembered from a
    secret place, revealed) or random-looking (a path under a secret-named variable is neither)."""
    return value in _REMEMBERED or value in revealed() or looks_like_credential(value)


def scrub_obj(obj: Any, secrets: Iterable[str] | None = None) -> Any:
    """A copy of JSON-like data: secret keys and secret flags' values masked, secret values and URL
    passwords cut out of strings, mapping keys included."""
    values = secret_values() if secrets is None else frozenset(secrets) | _known()
    # The usual case (a plan's config and manifest, ~400 keys and strings each) is decided by one joined
    # scrub rather than one scrub per text: nothing to mask, so the copy is the data as it is.
    if not holds_secret(obj, values):
        return _copied(obj)
    return _scrub(obj, values, "")


def _copied(obj: Any) -> Any:
    """What `_scrub` returns for data it masks nothing of: mappings as dicts, lists and tuples as their
    own type, each new; strings and other leaves as they are."""
    if isinstance(obj, Mapping):
        return {k: _copied(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_copied(v) for v in obj)
    return obj


def holds_secret(obj: Any, secrets: Iterable[str] | None = None) -> bool:
    """True when `scrub_obj` would change `obj` (JSON-like data): it must not be cached or printed as
    it is. Decided without building the scrubbed copy: an entry or flag value `scrub_obj` masks whole
    answers at once, else every text it would scrub (keys and strings) is scrubbed in one joined text
    (`scrub_texts`), each on its own only when that text changes."""
    texts: list[str] = []
    if _masks_whole(obj, "", texts):
        return True
    return scrub_texts(texts, secrets) != texts


def _masks_whole(obj: Any, key: str, texts: list[str]) -> bool:
    """True when `_scrub` masks an entry or a list item of `obj` that is not the mask already; else
    `texts` gets every text `_scrub` would pass to `scrub_text`, in its order."""
    # Strings first, and a dict before the (slower) abstract Mapping: most nodes are one of them.
    if isinstance(obj, str):
        texts.append(obj)
    elif isinstance(obj, dict | Mapping):
        for k, v in obj.items():
            child = f"{key}.{k}" if key else str(k)
            if isinstance(k, str):
                texts.append(k)
            if _is_secret_entry(child, v):
                if v != MASK:
                    return True
            elif _masks_whole(v, child, texts):
                return True
    elif isinstance(obj, list | tuple):
        items = list(obj)
        if _mask_flag_values(items) != items:
            return True
        for v in items:
            if is_credential_at(key, v):
                if v != MASK:
                    return True
            elif _masks_whole(v, key, texts):
                return True
    return False


def holds_referenced_value(config: Any, *others: Any) -> bool:
    """True when a value a reference of the resolved `config` points at (env:NAME, file:PATH, a kept
    `${oc.env:NAME}`) is also written out in it or in `others`, e.g. in the run's name: a credential
    only validation tells apart (a Secret field's value, whatever it is called), so none of it may be
    cached. Nothing is remembered."""
    own = _texts(config, [])
    values = {value for value in _referenced(own) if len(value) >= _MIN_SECRET_LEN}
    if not values:  # the usual case: the other texts are not read
        return False
    texts = _texts(list(others), own)
    # A value without a space is in one of the texts exactly when it is in them joined by a space.
    joined = " ".join(texts)
    return any(value in text for value in values if value in joined or " " in value for text in texts)


def _texts(obj: Any, into: list[str]) -> list[str]:
    """`into` with the keys and strings of `obj` appended."""
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            into.append(str(key))
            _texts(value, into)
    elif isinstance(obj, list | tuple):
        for value in obj:
            _texts(value, into)
    elif isinstance(obj, str):
        into.append(obj)
    return into


def _referenced(texts: list[str]) -> list[str]:
    """The values the references in `texts` point at, where they resolve here (a variable's name in
    `${oc.env:NAME}` does not run across the space that joins them)."""
    found = [os.environ.get(name, "") for name in re.findall(_OC_ENV_NAME, " ".join(texts))]
    for text in texts:
        if text.startswith("env:"):
            found.append(os.environ.get(text[4:], ""))
        elif text.startswith("file:") and len(text) > 5:
            try:
                with open(os.path.expanduser(text[5:]), encoding="utf-8", errors="replace") as file:
                    found.append(file.read(_MAX_SECRET_FILE).strip())
            except OSError:
                pass
    return found


def _is_secret_entry(key: str, value: object) -> bool:
    """An entry masked whole: a credential, or any non-empty subtree under a secret key."""
    if isinstance(value, Mapping | list | tuple):
        return bool(value) and is_secret_key(key)
    return is_credential_at(key, value)


def _scrub(obj: Any, values: frozenset[str], key: str) -> Any:
    if isinstance(obj, Mapping):
        out = {}
        for k, v in obj.items():
            child = f"{key}.{k}" if key else str(k)
            # A key is written as much as its value (a variable named with a token).
            name = scrub_text(k, values) if isinstance(k, str) else k
            out[name] = MASK if _is_secret_entry(child, v) else _scrub(v, values, child)
        return out
    if isinstance(obj, list | tuple):
        items = _mask_flag_values(list(obj))
        return type(obj)(MASK if is_credential_at(key, v) else _scrub(v, values, key) for v in items)
    if isinstance(obj, str):
        return scrub_text(obj, values)
    return obj


def _mask_flag_values(items: list[Any]) -> list[Any]:
    """`["--api-key", "X"]` → `["--api-key", MASK]`; `["--token=X"]` → `["--token=***"]` (a reference
    such as `env:NAME` stays: it is where the value lives)."""
    if all(type(item) is str for item in items):
        return list(_masked_texts(tuple(items)))
    return _masked_flags(items)


# Cached: a resolve masks each of the config's ~240 lists (argv arrays, module lists), the same lists
# from one resolve to the next.
@lru_cache(maxsize=4096)
def _masked_texts(items: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(_masked_flags(list(items)))


def _masked_flags(items: list[Any]) -> list[Any]:
    out = list(items)
    for i, item in enumerate(items):
        if isinstance(item, str) and is_secret_flag(item):
            flag, eq, value = item.partition("=")
            if eq and not is_reference(value):
                out[i] = flag + "=" + MASK
            elif not eq and i + 1 < len(items) and isinstance(items[i + 1], str):
                following = items[i + 1]
                if not following.startswith("-") and not is_reference(following):
                    out[i + 1] = MASK
    # A program's credential in its argv (`["mysql", "-pV"]`, `["curl", "-u", "alice:V"]`): no item
    # alone shows it.
    for index, start, end in reversed(argv_credentials(out)):
        out[index] = out[index][:start] + MASK + out[index][end:]
    return out


def secrets_in(obj: Any, key: str = "") -> list[str]:
    """Every secret value `obj` (config data) holds, by the rules of this module."""
    texts = [leaf for leaf in _leaves(obj) if isinstance(leaf, str)]
    # Each text is searched for shaped credentials and URL passwords only when all of them joined hold
    # one (a config usually holds none: one scan instead of one per text, ~6 M instructions of a cold
    # validate, which reads a composed config twice).
    shaped, urls = any_credentials_in(texts), any("://" in text for text in texts)
    return _secrets_in(obj, key, shaped, urls)


def _secrets_in(obj: Any, key: str, shaped: bool, urls: bool) -> list[str]:
    found: list[str] = []
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            child = f"{key}.{k}" if key else str(k)
            if isinstance(v, _SCALARS):
                found += _scalar_secrets(child, v, shaped, urls)
            elif isinstance(v, Mapping | list | tuple) and is_secret_key(child):
                found += [str(x) for x in _leaves(v) if is_credential_at(child, x)]
            elif is_credential_at(child, v):
                found.append(str(v))
            elif is_credential_at(child, reference_default(v)):
                found.append(str(reference_default(v)))  # the reference stays; its fallback is masked
            else:
                found += _secrets_in(v, child, shaped, urls)
    elif isinstance(obj, list | tuple):
        items = list(obj)
        for i, item in enumerate(items):
            if isinstance(item, str) and is_secret_flag(item):
                if "=" in item:
                    found.append(item.split("=", 1)[1])
                elif i + 1 < len(items) and isinstance(items[i + 1], str):
                    found.append(items[i + 1])
            found += [str(item)] if is_credential_at(key, item) else _secrets_in(item, key, shaped, urls)
        found += [
            value
            for index, start, end in argv_credentials(items)
            if len(value := items[index][start:end]) >= _MIN_SECRET_LEN
        ]
    elif isinstance(obj, str):
        found += url_passwords(obj) if urls else []
        found += [v for v in credentials_in(obj) if len(v) >= _MIN_SECRET_LEN] if shaped else []
    return [value for value in found if value and value != MASK and not is_reference(value)]


# A mapping's scalar holds the same secrets wherever it is met: each composition of a process reads
# mostly the same ~700 (key, value) pairs, whose reading was a third of a direct composition's CPU.
_SCALARS = (str, int, float, type(None))  # bool is an int


@lru_cache(maxsize=16384, typed=True)  # typed: 1, 1.0 and True are read apart, as their texts differ
def _scalar_secrets(key: str, value: str | float | None, shaped: bool, urls: bool) -> tuple[str, ...]:
    """`_secrets_in` of a mapping's scalar `value` at `key` (a pure function of these four)."""
    if is_credential_at(key, value):
        found = [str(value)]
    elif is_credential_at(key, default := reference_default(value)):
        found = [str(default)]
    else:
        found = _secrets_in(value, key, shaped, urls)
    return tuple(value for value in found if value and value != MASK and not is_reference(value))


def _leaves(obj: Any) -> list[Any]:
    if isinstance(obj, Mapping):
        return [leaf for v in obj.values() for leaf in _leaves(v)]
    if isinstance(obj, list | tuple):
        return [leaf for v in obj for leaf in _leaves(v)]
    return [obj]


def remember(values: Iterable[str]) -> None:
    """Mask these values in everything this process scrubs from now on."""
    _REMEMBERED.update(v for v in values if v and v != MASK and len(v) >= 2)


def remember_config(data: Any) -> None:
    """Remember every secret a (composed) config holds."""
    remember(secrets_in(data))
    _LAST_CONFIG[0] = data


# The config `remember_config` last read (kept, so that its identity stays its own).
_LAST_CONFIG: list[Any] = [None]


def remember_expanded(data: Any, composed: Any) -> None:
    """`remember_config(data)`, where `data` is `composed` with strings replaced (`expand_home`: `~/x`
    made `/home/u/x`) and `composed` is the config this process's composition remembered last: only the
    entries that differ are read again (a cold plan read its ~700 keys twice, ~10 M instructions). An
    entry's secrets depend on its key path and value alone, and a list's on all its items (flags and
    their values), so the secrets of `data` are those of `composed` and those of its differing entries,
    each mapping cut to its differing keys, each list whole."""
    if composed is not _LAST_CONFIG[0]:  # composed elsewhere (forked ahead, a cache hit): read it all
        remember_config(data)
        return
    remember(secrets_in(_differing(data, composed)))
    _LAST_CONFIG[0] = data


def _differing(new: Any, old: Any) -> Any:
    """`new` cut, in each mapping also in `old`, to the keys whose values differ (compared deeply, as
    data); anything else whole."""
    if not (isinstance(new, dict) and isinstance(old, dict)):
        return new
    return {
        key: _differing(value, old[key]) for key, value in new.items() if key not in old or old[key] != value
    }


def remember_overrides(overrides: Sequence[str]) -> None:
    """Remember the values of overrides of secret keys (before composition, so that even an
    override Hydra rejects is masked in the error), and URL passwords in any override."""
    for override in overrides:
        key, eq, value = override.lstrip("+~").partition("=")
        if eq and is_credential_at(key, value.strip("'\"")):
            remember([value, value.strip("'\"")])
        default = reference_default(value) if eq else None
        if is_credential_at(key, default):
            remember([str(default)])
        remember(url_passwords(override))
        remember(m.group(2) for m in _FLAG_IN_TEXT.finditer(override) if is_secret_flag(m.group(1)))
    if _REMEMBERED:
        hide_from_own_command_line()


def hide_from_own_command_line() -> bool:
    """Mask what this process's command line gives away (`t3rl run ++hardware.env_vars.DB_PASS=V`, a
    job variable pre-flight only warns about) where every user of the machine reads it for the whole
    run: `/proc/<pid>/cmdline`, `ps`. That file shows the process's own memory between `arg_start` and
    `arg_end` (`/proc/self/stat`), the argv the kernel gave it, which is rewritten in place, each
    argument scrubbed and the rest padded with NULs. False where nothing changed or the region is not
    the command line (a process that moved it: `PR_SET_MM`, setproctitle)."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        with open("/proc/self/cmdline", "rb") as f:
            shown = f.read()
    except OSError:  # not Linux, or /proc not mounted
        return False
    fields = stat[stat.rindex(b")") + 2 :].split()  # from field 3 (state) on: a name may hold spaces
    start, end = int(fields[48 - 3]), int(fields[49 - 3])  # arg_start, arg_end
    tokens = shown.rstrip(b"\0").split(b"\0")
    masked = [scrub_text(t.decode(errors="surrogateescape")).encode(errors="surrogateescape") for t in tokens]
    rewritten = b"\0".join(masked) + b"\0"
    if masked == tokens or end - start != len(shown) or len(rewritten) > len(shown):
        return False
    import ctypes  # lazy: only a command line that holds a credential is rewritten

    if ctypes.string_at(start, len(shown)) != shown:
        return False
    ctypes.memmove(start, rewritten.ljust(len(shown), b"\0"), len(shown))
    return True


def remember_revealed(config: Any) -> None:
    """Reveal every `Secret` a validated config (pydantic models, any depth) holds that resolves here,
    so that this process masks its value wherever it shows up, e.g. in a stage's output (a reference
    that does not resolve here is left to the process that needs it)."""
    for _, secret in secret_references(config):
        try:
            secret.reveal()
        except SecretResolutionError:
            continue


def secret_references(node: Any, prefix: str = "") -> Iterator[tuple[str, Secret]]:
    """(dotted key under `prefix`, reference) of every `Secret` under validated config data: models,
    mappings, lists and tuples, at any depth. The one walk for them (the masking here, the pre-flight
    probe of references: launch.checks.rules.kinds); a model's fields that cannot hold one (an int, a
    list of str) are passed by, read once per class (launch.config.declared_fields)."""
    if isinstance(node, Secret):
        yield prefix, node
        return
    if hasattr(node, "__pydantic_fields__"):  # a config model (pydantic is not imported here)
        items: Iterable[tuple[Any, Any]] = (
            (name, getattr(node, name)) for name in fields_holding(type(node), Secret)
        )
    elif isinstance(node, Mapping):
        items = node.items()
    elif isinstance(node, list | tuple):
        items = enumerate(node)
    else:
        return
    for name, value in items:
        yield from secret_references(value, f"{prefix}.{name}" if prefix else str(name))


def mask_override(override: str) -> str:
    """An override as it may be written or printed: a secret key's value masked, then scrubbed."""
    key, eq, value = override.partition("=")
    if eq and is_credential_at(key.lstrip("+~"), value.strip("'\"")):
        return f"{key}={MASK}"
    return scrub_text(override)


def mask_overrides(overrides: Iterable[str]) -> list[str]:
    return [mask_override(o) for o in overrides]


def replayable(override: str) -> str:
    """An override as a command t3rl prints for pasting may hold it: a credential's literal (which every
    line printed masks, so `DB_PASS=***` would set the password to three stars) becomes the reference
    to a variable of the credential's name (`++hardware.env_vars.DB_PASS=${oc.env:DB_PASS}`)."""
    key, eq, value = override.partition("=")
    name = key.lstrip("+~")
    if not eq or not is_credential_at(name, value.strip("'\"")):
        return override
    variable = re.sub(r"\W", "_", name.rpartition(".")[2]).upper()
    return f"{key}=${{oc.env:{variable}}}"


def public_env(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without its secret-named variables: what may be written next to a command."""
    return {k: v for k, v in environ.items() if not is_secret_name(k)}


class ScrubbingStream:
    """A text stream that scrubs what is written through it (a backstop under every CLI output), a line
    at a time: `print(a, b)` writes `a`, the separator and `b` apart, so a credential's name and its
    value came in two writes (`print("password:", V)`, `print("https://alice:", rest, sep="")`) and
    neither alone showed the value. What follows the last line break is kept until the next write ends
    a line or the stream is flushed (rich's live display, a prompt, click's runner and the interpreter's
    exit flush), or it outgrows `_PENDING_MAX`."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._pending = ""
        self._pid = os.getpid()
        self._lock = threading.Lock()  # two threads' writes: neither's text is written twice or lost

    def _own_pending(self) -> str:
        """What waits for a line's end, of this process: a forked child (compose_ahead's) inherits its
        parent's, which the parent writes itself."""
        if self._pid != os.getpid():
            self._pid, self._pending = os.getpid(), ""
        return self._pending

    def write(self, text: str) -> int:
        with self._lock:
            joined = self._own_pending() + text
            end = len(joined) if len(joined) > _PENDING_MAX else joined.rfind("\n") + 1
            self._pending = joined[end:]
            if end:
                self.inner.write(scrub_text(joined[:end]))
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._own_pending():
                self.inner.write(scrub_text(self._pending))
                self._pending = ""
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


# A line longer than this without a break (a progress bar's dots never flushed) is written as it stands.
_PENDING_MAX = 1 << 20


def scrub_standard_streams() -> None:
    """Route this process's stdout and stderr through `ScrubbingStream`, and what rich renders
    through the scrubber before its layout (once; rich itself is not imported: launch.config.secret_rich)."""
    # lazy: the import hook, for a process that prints (the CLI), not for one that only composes configs
    from launch.config.secret_rich import scrub_rich

    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not isinstance(stream, ScrubbingStream):
            setattr(sys, name, ScrubbingStream(stream))
    scrub_rich(scrub_text)
    if secret_values():  # the environment's credentials (cached: every line printed asks again)
        no_core_dumps()  # nor does anything the command starts: each inherits the environment
