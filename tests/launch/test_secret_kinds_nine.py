"""Credentials round eight left unmasked, and a hash it masked (docs/how-to/secrets.md, Limits), each
kind generated in many shapes and checked in every record kind (as round eight's tests check theirs):

- `user:password@host` whose host is a bare name (`alice:V@db`, `alice:V@db/app`), where code reads
  the same way (`x[i:n@self.w]`, `lambda x:x@W`): told apart by what stands around it and by the
  password's look, and checked against real code (the standard library's modules);
- a random-looking key after a credential's word and a sub-command (`mytool token add V`);
- a JSON Web Token folded over two lines exactly at its `.eyJ…` claims;
- Twilio's and Mailgun's keys cut short by a view (`SK0123abcd…`, `key-0123abcd…`);
- a core dump of a process holding a credential (its memory, the value in it, in a file of its working
  directory or with the host's handler): such a process and what it starts dump none;
- and the other way round: a hash (sha256, a git sha) under a data key's name (`cache_key`, `sortKey`)
  is no credential, while under an environment variable's name (`DD_APP_KEY`) or a secret's word
  (`signing_key`) a hex key stays one.

Each test fails at the parent commit (run against `git archive` of it).
"""

from __future__ import annotations

import json
import os
import re
import resource
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from launch.config.secrets import scrub_obj, scrub_text
from t3rl_core.secret import bare_userinfo_spans, mask_episode_text, mask_text
from t3rl_core.secret_names import is_credential_at, looks_like_credential
from tests.launch.test_secret_kinds_eight import RANDOM_KEYS, assert_masked, assert_refused, records

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------ user:password@<bare name>


BARE_USERS = st.sampled_from(["alice", "postgres", "svc-deploy", "u_01", "admin.ro"])
# As people write passwords: 6+ characters, a letter and a digit or a sign among them.
PASSWORDS = st.text(
    "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789!#%^*_+-.~", min_size=6, max_size=24
).filter(lambda v: re.search(r"[A-Za-z]", v) and re.search(r"[^A-Za-z]", v) and v[0] not in "-*")
BARE_NAMES = st.sampled_from(["db", "postgres", "redis", "mongo-1", "cache", "W"])


@given(BARE_USERS, PASSWORDS, BARE_NAMES, st.integers(0, 7))
@SETTINGS
def test_a_password_before_a_bare_host_name_is_masked(user: str, value: str, host: str, framing: int) -> None:
    """A compose file's service name as the host, with a path, a query, at a sentence's end."""
    userinfo = f"{user}:{value}@{host}"
    text = [
        userinfo,
        f"mytool --db {userinfo}",
        f"DATABASE={userinfo}/app",
        json.dumps({"dsn": userinfo}),
        f"connecting to '{userinfo}' failed",
        f"could not reach {userinfo}: connection refused",
        f"psql {userinfo}?sslmode=disable.",
        shlex.join(["psql", userinfo]),
    ][framing]
    assume(text.count(value) == 1 and value not in "".join(records("x").values()))
    assert_masked(value, text)
    assert_refused(value, text)


@given(
    st.sampled_from(["sha256", "sha1", "md5", "blake2b"]),
    st.text("0123456789abcdef", min_size=7, max_size=64),
    st.sampled_from(["db", "e3e70682-c209-4cac-629f-6fbed82c07cd", "host.example.com"]),
)
@SETTINGS
def test_a_digest_before_an_at_is_no_user_information(algorithm: str, digest: str, host: str) -> None:
    """`sha256:<hex>@…` is a content address (a digest written as git and sha256sum write it), not a user
    `sha256` with a password: round nine's bare-host rule masked it (found by round eight's property
    of ordinary words, at random)."""
    text = f"{algorithm}:{digest}@{host}"
    assert bare_userinfo_spans(text) == []
    assert mask_text(text) == text and mask_episode_text(text) == text


# What code writes with a colon before an `@` (a slice of a matrix product, a lambda, a comprehension),
# with names and numbers of any look.
NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)


@given(NAMES, NAMES, NAMES, NAMES, st.integers(0, 6))
@SETTINGS
def test_slices_of_matrix_products_lambdas_and_comprehensions_are_no_user_information(
    a: str, b: str, c: str, d: str, framing: int
) -> None:
    text = [
        f"y = x[{a}:{b}@{c}]",
        f"y = x[{a}:{b}@self.{c}]",
        f"y = f(x[{a}:{b}@{c}.{d}])",
        f"g = lambda {a}:{b}@{c}",
        f"m = {{{a}:{b}@{c} for {a} in {d}}}",
        f"z = x[:, {a}:{b}@{c}.T]",
        f"print(x[{a}:{b}@{c}], {d})",
    ][framing]
    assert mask_text(text) == text and mask_episode_text(text) == text and scrub_text(text) == text


def test_the_standard_librarys_code_holds_no_user_information() -> None:
    """Real code: every line of the standard library's modules holding `:` and `@` (its tests, which
    write URLs with passwords on purpose, left out)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    found = []
    for path in sorted(stdlib.glob("**/*.py")):
        if {"test", "tests", "idle_test", "site-packages"} & set(path.relative_to(stdlib).parts):
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if "@" in line and ":" in line and bare_userinfo_spans(line):
                found.append((str(path), line))
    assert found == []


# ------------------------------------------------------------------ a key after a sub-command


@given(RANDOM_KEYS, st.integers(0, 4))
@SETTINGS
def test_a_random_key_after_a_credentials_word_and_sub_commands_is_masked(value: str, framing: int) -> None:
    text = [
        f"mytool token add {value}",
        f"acme auth set-key default {value}",
        f"$ vendorctl login --profile ci {value}\nok",
        f"vendorctl apikey create '{value}'",
        f"run: mytool token set prod {value}",
    ][framing]
    assert_masked(value, text, episode=False)
    assert_refused(value, text)


@pytest.mark.parametrize(
    "text",
    [
        "mytool token add new-user",
        "please login as admin with the password hunter2",
        "git log token list 3f9ac1d2b7e84a6c9d0e1f2a3b4c5d6e7f8091a2",
        "mytool token add the new one 8f3KxQ2mN9pL4vR7tY1wZ6bC",  # four words: prose, not a command
    ],
)
def test_words_hashes_and_prose_after_those_words_stay(text: str) -> None:
    assert scrub_text(text) == text and mask_text(text) == text


# ------------------------------------------------------------------ a JWT folded at its claims


SEGMENTS = st.from_regex(r"[A-Za-z0-9_-]{10,40}", fullmatch=True)


@given(SEGMENTS, SEGMENTS, SEGMENTS, st.integers(0, 3))
@SETTINGS
def test_a_jwt_folded_exactly_at_its_claims_is_masked(
    header: str, claims: str, sig: str, framing: int
) -> None:
    """A renderer folds a long word where the line ends: at the `.` before `eyJ…` as anywhere."""
    head, rest = f"eyJ{header}.", f"eyJ{claims}.{sig}"
    text = [
        f"{head}\n{rest}",
        f"token: {head}\n  {rest}",
        f"│ {head} │\n│ {rest} │",
        f"Bearer {head}\n{rest} end",
    ][framing]
    for where, written in {"mask_text": mask_text(text), "scrub_text": scrub_text(text)}.items():
        assert head not in written and rest not in written, (where, written)


def test_a_line_beginning_with_a_token_after_a_sentences_dot_is_still_read_apart() -> None:
    """Only a JWT's header and dot join the next line's `eyJ…`: a sentence's end and another token on
    the next line stay two words (each masked as what it is)."""
    text = "see the notes.\nhf_" + "a" * 34
    assert mask_text(text) == "see the notes.\n***"


# ------------------------------------------------------------------ Twilio and Mailgun cut short


HEX = st.from_regex(r"[0-9a-f]{32}", fullmatch=True).filter(
    lambda v: re.search("[a-f]", v[:8]) and re.search("[0-9]", v[:8])
)


@given(st.sampled_from(["SK", "key-"]), HEX, st.integers(8, 30), st.sampled_from(["…", "..."]))
@SETTINGS
def test_twilio_and_mailgun_keys_cut_short_by_a_view_are_masked(
    prefix: str, body: str, shown: int, ellipsis: str
) -> None:
    cut = prefix + body[:shown]
    text = f"│ {cut}{ellipsis} │ twilio │"
    for written in (mask_text(text), scrub_text(text), mask_episode_text(text)):
        assert cut not in written, written


@pytest.mark.parametrize("text", ["SKIPPED…", "key-value…", "SK20240101…", "key-deadbeef…", "SKU-2291…"])
def test_words_cut_short_stay(text: str) -> None:
    assert mask_text(text) == text and mask_episode_text(text) == text


# ------------------------------------------------------------------ a hash under a data key's name


HASHES = st.one_of(
    st.from_regex(r"[0-9a-f]{7,12}|[0-9a-f]{40}|[0-9a-f]{64}|sha256:[0-9a-f]{64}", fullmatch=True)
).filter(lambda v: re.search("[a-f]", v) and re.search("[0-9]", v))
DATA_KEYS = st.sampled_from(["cache_key", "sort_key", "cacheKey", "content-key", "dedup_key", "key"])


@given(DATA_KEYS, HASHES, st.integers(0, 3))
@SETTINGS
def test_a_hash_under_a_data_keys_name_is_no_credential(name: str, value: str, framing: int) -> None:
    text = [f"{name}={value}", f'{{"{name}": "{value}"}}', f"{name}: {value}", f"--{name} {value}"][framing]
    assert scrub_text(text) == text and mask_text(text) == text
    assert scrub_obj({"data": {name: value}}) == {"data": {name: value}}
    assert not is_credential_at(f"data.{name}", value)


SECRET_KEYS = st.sampled_from(["DD_APP_KEY", "STRIPE_KEY", "signing_key", "hmacKey", "encryption-key"])


HEX_KEYS = st.from_regex(r"[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{64}", fullmatch=True).filter(
    looks_like_credential
)


@given(SECRET_KEYS, HEX_KEYS)
@SETTINGS
def test_a_hex_key_under_a_secrets_name_stays_masked(name: str, value: str) -> None:
    assert_masked(value, f"{name}={value}", episode=False)
    assert is_credential_at(f"data.{name}", value)


# ------------------------------------------------------------------ core dumps


PROJECT = Path(__file__).resolve().parents[2]
CORE_LIMIT = "import resource; print(resource.getrlimit(resource.RLIMIT_CORE)[0])"
REVEAL_AND_CRASH = f"""
import os, subprocess, sys
from t3rl_core.secret import Secret
Secret("env:T3RL_KINDS_NINE_CRED").reveal()
print(subprocess.run([sys.executable, "-c", {CORE_LIMIT!r}], capture_output=True, text=True).stdout.strip())
sys.stdout.flush()
os.abort()
"""
LAUNCHER = f"""
import subprocess, sys
from launch.config.secrets import scrub_standard_streams
scrub_standard_streams()
print(subprocess.run([sys.executable, "-c", {CORE_LIMIT!r}], capture_output=True, text=True).stdout.strip())
"""


def _cores_allowed() -> None:
    """The child starts with its soft core limit as high as its hard one (a user's `ulimit -c
    unlimited`, a container's default)."""
    _, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


def _python(code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
    if hard != resource.RLIM_INFINITY and hard < 1 << 20:
        pytest.skip("a hard core limit below a MiB: nothing to lower")
    environ = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(PROJECT), **env}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        preexec_fn=_cores_allowed,
        timeout=600,
    )


def test_a_process_that_reveals_a_secret_and_what_it_starts_dump_no_core(tmp_path: Path) -> None:
    """Before: the soft limit stayed unlimited, and where `core_pattern` names a file the crash wrote the
    process's memory, the revealed value in it, into its working directory."""
    value = "kinds9-" + "Zq8x7Kp2Wm9vB3nR5tY1"
    done = _python(REVEAL_AND_CRASH, tmp_path, T3RL_KINDS_NINE_CRED=value)
    assert done.returncode < 0, done  # it crashed
    assert done.stdout.strip() == "1", done  # the child it started inherits the limit
    written = [p for p in tmp_path.iterdir() if value.encode() in p.read_bytes()]
    assert written == []


def test_a_launcher_with_a_credential_in_its_environment_starts_processes_that_dump_no_core(
    tmp_path: Path,
) -> None:
    done = _python(LAUNCHER, tmp_path, HF_TOKEN="hf_" + "Zq8x7Kp2Wm9vB3nR5tY1aC4dE6fG8hJ0kL")
    assert done.returncode == 0, done
    assert done.stdout.strip() == "1", done
    # Without one, the limit stays as the user set it (a crash of a process holding no credential).
    plain = _python(LAUNCHER, tmp_path)
    assert plain.stdout.strip() != "1", plain


# ------------------------------------------------------------------ an environment's server


ENV_DUMP = """
import json, os, sys
with open(sys.argv[1], "w") as out:
    json.dump(dict(os.environ), out)
sys.exit(3)
"""


def test_an_openenv_server_the_world_starts_gets_none_of_t3rls_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`env.command` runs an environment's server, which runs what the model asks (a coding
    environment runs its code), as a `command` service does: before, it inherited t3rl's whole
    environment (HF_TOKEN, a proxy's password, a key under any name)."""
    from t3rl_core.envs.openenv.config import OpenEnvEnvConfig
    from t3rl_core.envs.openenv.server import EnvServer, EnvServerError
    from tests.support.tiny_stack import free_port

    token = "hf_" + "Zq8x7Kp2Wm9vB3nR5tY1aC4dE6fG8hJ0kL"
    monkeypatch.setenv("HF_TOKEN", token)
    monkeypatch.setenv("HTTPS_PROXY", "http://build:S3cretPass99@proxy:3128")
    monkeypatch.setenv("VENDOR_NOTE", f"use {token} here")
    monkeypatch.setenv("KINDS_NINE_PLAIN", "--fast")
    script, dump = tmp_path / "server.py", tmp_path / "environ.json"
    script.write_text(ENV_DUMP)
    config = OpenEnvEnvConfig(
        url=f"http://127.0.0.1:{free_port()}",
        command=[sys.executable, str(script), str(dump)],
        startup_timeout_s=600,
    )
    with pytest.raises(EnvServerError, match="exited with 3"):
        EnvServer(config)
    seen = json.loads(dump.read_text())
    assert not {"HF_TOKEN", "HTTPS_PROXY", "VENDOR_NOTE"} & set(seen), sorted(seen)
    assert token not in dump.read_text() and "S3cretPass99" not in dump.read_text()
    assert seen["KINDS_NINE_PLAIN"] == "--fast"  # what is no credential stays


def test_a_pure_calls_worker_gets_none_of_t3rls_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """The workers of pure tool calls and of math grading run functions of the model's text (bfcl-eval's
    tools, math-verify's parser): before, they inherited t3rl's whole environment."""
    import asyncio

    from t3rl_core.envs.bounded_calls import CallWorkers

    token = "hf_" + "Zq8x7Kp2Wm9vB3nR5tY1aC4dE6fG8hJ0kL"
    monkeypatch.setenv("HF_TOKEN", token)
    monkeypatch.setenv("KINDS_NINE_PLAIN", "--fast")
    workers = CallWorkers([])

    async def expanded() -> str | None:
        return await workers.run("posixpath:expandvars", ["$HF_TOKEN|$KINDS_NINE_PLAIN"], 600.0)

    try:
        seen = asyncio.run(expanded())
    finally:
        workers.close()
    assert seen == "$HF_TOKEN|--fast"  # unset there; what is no credential stays


# ------------------------------------------------------------------ a .pgpass line's host


PATHS = st.from_regex(r"/?[a-z0-9]{1,4}(?:/[a-z0-9]{1,4})?", fullmatch=True)


@given(st.integers(0, 99999), st.lists(PATHS, min_size=3, max_size=3))
@SETTINGS
def test_a_number_alone_is_no_pgpass_host(hour: int, fields: list[str]) -> None:
    """Round eight's own property test found `12:00:00:/a/0:/0` masked as a `.pgpass` line (host `12`,
    user `/a/0`): a time and paths joined by colons. A host is a name, an address or `*`."""
    text = f"{hour}:00:" + ":".join(fields)
    assert mask_text(text) == text and mask_episode_text(text) == text


@pytest.mark.parametrize("host", ["db", "10.0.0.7", "*", "pg-1.internal"])
def test_pgpass_lines_of_any_host_are_still_masked(host: str) -> None:
    value = "Zq8x7Kp2Wm9v"
    assert_masked(value, f"{host}:5432:app:alice:{value}")
