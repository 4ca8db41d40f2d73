"""Credentials in spellings no earlier round listed (docs/how-to/secrets.md, "Where a secret could
leave"): a URL password holding `@` (a URL's user information ends at its last `@`), a token as a URL's
user with a password after it (`https://<token>:x-oauth-basic@github.com`), a credential named in
camelCase (`accessToken`, `clientSecret`: a JavaScript or Java client's, a plugin's field), in upper
case with a longer word (`MY_PASSWORD=V`) or after a dot (`eval.engine.api_key=V`), a secret flag's
value in a list's repr or JSON (a `CalledProcessError` quoting its argv), a `Cookie` header, an OpenPGP
private key, a name and value quoted inside JSON inside JSON (a tool call's arguments in
trajectories.jsonl) or a header as a mapping's entry, every value of a credential's sweep or list, and
a search space over a credential (Optuna writes what it tries past every scrub). Each with its unmasked
neighbour: what is not a credential stays visible.

Each test plants its own value: values this process has masked once stay masked.
"""

from __future__ import annotations

import json
import string
import subprocess
from pathlib import Path

import pytest

from launch.config.secrets import scrub_obj, scrub_text
from t3rl_core.secret import mask_text
from t3rl_core.secret_names import is_secret_name, looks_like_credential
from t3rl_core.secret_shapes import PemLines
from tests.support.cli_app import invoke
from tests.support.draws import SeededDraws
from tests.support.planted import isolate, leaks

ALPHABET = string.ascii_letters + string.digits
random_source = SeededDraws(__name__)  # the same values every run: tests/support/draws.py


def planted() -> str:
    """A random value of no known form that looks random, never seen by this process."""
    while True:
        value = "".join(random_source.choice(ALPHABET) for _ in range(24))
        if looks_like_credential(value):
            return value


def words() -> str:
    """A password of words and a number (no random run: only its name can tell it is one)."""
    return "-".join(random_source.choice(["correct", "horse", "battery", "staple"]) for _ in range(4)) + str(
        random_source.randbelow(10**6)
    )


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate(tmp_path, monkeypatch, {})


# ------------------------------------------------------------------ URLs


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://alice:p@ss{v}@db.example.com:5432/app",
        "https://alice:{v}@@host.example.com/",
        "redis://:{v}@x@cache:6379/0",
        "https://{v}:x-oauth-basic@github.com/org/repo.git",
    ],
    ids=["at-in-password", "password-ending-in-at", "empty-user", "token-user-with-password"],
)
def test_a_urls_user_information_is_masked_up_to_its_last_at(url: str) -> None:
    """`postgresql://alice:p@ss<v>@db…`: the password ran to the first `@` only, so `ss<v>` stayed in
    clear (a URL's user information ends at its last `@`, as urllib and libpq read it); a token as the
    user stayed when a password followed it (`<token>:x-oauth-basic@`, GitHub's form)."""
    value = planted()
    text = url.format(v=value)
    masked = scrub_text(f"connecting to {text} failed")
    assert value not in masked and value[:12] not in masked and value[-12:] not in masked, masked
    host = text.rpartition("@")[2]
    assert masked.endswith(f"@{host} failed"), masked


def test_a_urls_host_port_and_query_stay_visible() -> None:
    """The neighbours: no user information, a user alone, an `@` in the path or the query, and what
    follows a URL's closing quote in minified JSON."""
    texts = [
        "https://huggingface.co/Qwen/Qwen3-4B@main",
        "https://alice@host.example.com/x",
        "http://my-service-7d9f8b6c5-x2k4p:8080/v1",
        "https://host.example.com/search?q=a@b",
    ]
    assert [scrub_text(t) for t in texts] == texts
    value = planted()
    minified = json.dumps({"url": f"https://u:{value}@h1", "mail": "ops@example.com"}, separators=(",", ":"))
    assert scrub_text(minified) == '{"url":"https://u:***@h1","mail":"ops@example.com"}'


@pytest.mark.parametrize("variable", ["DATABASE_URL", "GIT_REMOTE"])
def test_a_refused_url_is_quoted_masked(here: Path, variable: str) -> None:
    """The refusal of a URL holding a password quoted what followed its first `@`."""
    value = planted()
    urls = {
        "DATABASE_URL": f"postgresql://alice:p@ss{value}@db/app",
        "GIT_REMOTE": f"https://{value}:x@github.com/",
    }
    override = f"++hardware.env_vars.{variable}={urls[variable]}"
    result = invoke(["validate", "+experiment=quickstart", override])
    assert result.exit_code == 2, result.output
    assert "a password is embedded in this URL" in result.output, result.output
    assert value not in result.output and value[:12] not in result.output, result.output


# ------------------------------------------------------------------ camelCase names


@pytest.mark.parametrize("name", ["accessToken", "clientSecret", "dbPassword"])
def test_a_credential_named_in_camel_case_is_masked(here: Path, name: str) -> None:
    """`++hardware.env_vars.accessToken=<words>`: only a random-looking value was masked under such a name
    (`is_key_like`), so a password of words stayed in config.yaml, overrides.yaml, manifest.json,
    provenance.json, the composition cache and the printed `run it:` line."""
    value = words()
    result = invoke(["plan", "+experiment=quickstart", f"++hardware.env_vars.{name}={value}"])
    assert result.exit_code == 0, result.output
    assert value not in result.output, result.output
    assert leaks({"the password": value}, here) == []


def test_camel_case_names_that_are_no_credentials_stay_visible() -> None:
    """The neighbours: counts of tokens, a vocabulary's special token, names ending in another word."""
    assert [is_secret_name(n) for n in ["accessToken", "clientSecret", "apiKey", "hfToken"]] == [True] * 4
    others = ["maxTokens", "tokenizerPath", "secretary", "keyboardLayout", "compat"]
    assert not any(map(is_secret_name, others))
    data = {
        "maxTokens": 4096,
        "eosToken": "<|im_end|>",
        "padTokenId": 151643,
        "accessToken": "env:ACCESS_KEY",
    }
    assert scrub_obj(data) == data


@pytest.mark.parametrize(
    "text",
    [
        '{{"accessToken": "{v}"}}',
        "clientSecret={v}",
        "refreshToken: '{v}'",
        "const dbPassword = '{v}'",
    ],
)
def test_a_camel_case_credential_in_text_is_masked(text: str) -> None:
    """The same names in text (a client's JSON, a dumped config): `token` after `s` was read as part of
    another word (`monkey`), so the value stayed."""
    value = planted()
    masked = scrub_text(text.format(v=value))
    assert value not in masked and "***" in masked, masked


# ------------------------------------------------------------------ a flag's value in a list


def test_a_secret_flags_value_in_a_failed_commands_argv_is_masked() -> None:
    """`Command '['sglang', '--api-key', '<v>']' returned non-zero exit status 1`: a flag's value was
    masked after a space only, not after the `', '` of a list's repr or the `", "` of JSON."""
    value = planted()
    argv = ["python", "-m", "sglang.launch_server", "--api-key", value, "--admin-api-key", value[::-1]]
    texts = [str(subprocess.CalledProcessError(1, argv)), json.dumps(argv), repr(tuple(argv))]
    for text in texts:
        masked = scrub_text(text)
        assert value not in masked and value[::-1] not in masked, masked
        assert "'--api-key', '***'" in masked or '"--api-key", "***"' in masked, masked


def test_a_list_of_ordinary_flags_stays_visible() -> None:
    flags = ["--max-tokens", "4096", "--tokenizer-path", "Qwen/Qwen3-4B"]
    texts = [str(flags), '["--key-column", "id2text"]']
    assert [scrub_text(t) for t in texts] == texts


# ------------------------------------------------------------------ cookies


@pytest.mark.parametrize("header", ["Cookie: session={v}", "set-cookie: sid={v}; Path=/; HttpOnly"])
def test_a_cookie_header_is_masked(header: str) -> None:
    """A request log's `Cookie:` (a logged-in session, as good as a password) stayed in clear."""
    value = planted()
    masked = scrub_text(f"DEBUG request headers: {header.format(v=value)}")
    assert value not in masked and "***" in masked, masked


def test_prose_about_cookies_stays_visible() -> None:
    texts = ["cookie: none set", "the cookie jar holds 3 entries"]
    assert [scrub_text(t) for t in texts] == texts


# ------------------------------------------------------------------ an OpenPGP private key


def test_an_armoured_pgp_private_key_is_masked_between_its_markers() -> None:
    """`-----BEGIN PGP PRIVATE KEY BLOCK-----` (a release job's signing key dumped to its log): PEM's
    markers end in `PRIVATE KEY-----`, OpenPGP's in `PRIVATE KEY BLOCK-----`, so its body stayed; also
    line by line, as the log copiers read it."""
    body = [planted() + planted() for _ in range(3)]
    key = "\n".join(
        ["-----BEGIN PGP PRIVATE KEY BLOCK-----", "", *body, "-----END PGP PRIVATE KEY BLOCK-----"]
    )
    masked = scrub_text(f"dumping the environment:\n{key}\ndone")
    assert not any(line in masked for line in body), masked
    assert masked.startswith("dumping the environment:\n-----BEGIN PGP PRIVATE KEY BLOCK-----")
    assert masked.endswith("-----END PGP PRIVATE KEY BLOCK-----\ndone"), masked
    lines = PemLines()
    by_line = [lines(mask_text(line)) for line in f"{key}\ndone\n".splitlines(keepends=True)]
    assert not any(part in "".join(by_line) for part in body) and by_line[-1] == "done\n", by_line


def test_a_public_key_and_prose_stay_visible() -> None:
    texts = [
        "-----BEGIN PGP PUBLIC KEY BLOCK-----\nmQINBGA1b2c3\n-----END PGP PUBLIC KEY BLOCK-----",
        "where the PRIVATE KEY lives: -----BEGIN CERTIFICATE-----\nMIIB1a2b\n-----END CERTIFICATE-----",
    ]
    assert [scrub_text(t) for t in texts] == texts
    lines = PemLines()
    assert [lines(line) for line in texts[1].splitlines(keepends=True)] == texts[1].splitlines(keepends=True)


# ------------------------------------------------------------------ quoted, and JSON inside JSON


@pytest.mark.parametrize(
    "entry",
    [
        {"api_key": "{v}"},
        {"password": "{v}"},
        {"accessToken": "{v}"},
        {"Authorization": "Basic {v}"},
        {"Proxy-Authorization": "Bearer {v}"},
        {"headers": {"Authorization": "token {v}"}},
        {"Cookie": "theme=dark; sid={v}"},
    ],
    ids=["api_key", "password", "camel", "authorization", "proxy-authorization", "nested-header", "cookie"],
)
@pytest.mark.parametrize("written", ["json", "json-in-json", "repr"])
def test_a_credential_in_a_mapping_written_out_is_masked(entry: dict, written: str) -> None:
    """A tool call's arguments are JSON inside the JSON of a trajectories.jsonl line, a JSON log line
    holds a request's body, a traceback shows `headers={'Authorization': 'Basic …'}`: the name's closing
    quote escaped (`\\"api_key\\": \\"V\\"`) hid the value, and a header written as a mapping's entry
    (the quote after `Authorization`) was not read as a header at all."""
    value = planted()
    filled = json.loads(json.dumps(entry).replace("{v}", value))
    text = {
        "json": json.dumps(filled),
        "json-in-json": json.dumps({"role": "tool", "arguments": json.dumps(filled)}),
        "repr": f"request failed: headers={filled!r}",
    }[written]
    masked = scrub_text(text)
    assert value not in masked and "***" in masked, masked


def test_quoted_mappings_without_credentials_stay_visible() -> None:
    texts = [
        json.dumps(
            {"arguments": json.dumps({"max_tokens": 4096, "eos_token": "<|im_end|>", "path": "a/b1"})}
        ),
        json.dumps({"Authorization": "required", "note": "token budget 4096"}),
    ]
    assert [scrub_text(t) for t in texts] == texts


# ------------------------------------------------------------------ a search over a credential

SEARCH = """# @package _global_
defaults:
  - override /hydra/sweeper: optuna
objective:
  stage: eval_reference
  metric: overall.accuracy
hydra:
  sweeper:
    direction: maximize
    study_name: mine
    n_trials: 2
    params:
      {entry}
"""


@pytest.mark.parametrize("where", ["file", "command line"])
def test_a_search_over_a_credential_is_refused_unquoted(here: Path, where: str) -> None:
    """`hydra.sweeper.params: {++hardware.env_vars.DB_PASSWORD: choice(<a>, <b>)}` validated and ran;
    Optuna wrote the best one into the sweep dir's optimization_results.yaml in clear (and every value it
    tried into its study storage), which no scrub of t3rl's reaches."""
    first, second = words(), words()
    entry = f"++hardware.env_vars.DB_PASSWORD: choice({first},{second})"
    search = here / "mine" / "hparams_search" / "mine.yaml"
    search.parent.mkdir(parents=True)
    search.write_text(SEARCH.format(entry=entry if where == "file" else "seed: interval(0, 3)"))
    typed = [] if where == "file" else [f"++hardware.env_vars.DB_PASSWORD=choice({first},{second})"]
    argv = [
        "validate",
        "-m",
        "--config-dir",
        "mine",
        "+experiment=quickstart",
        "+hparams_search=mine",
        *typed,
    ]
    result = invoke(argv)
    assert result.exit_code == 2, result.output
    assert "Optuna writes every value it tries in clear" in result.output, result.output
    assert first not in result.output and second not in result.output, result.output


# ------------------------------------------------------------------ a sweep's values in text


@pytest.mark.parametrize(
    "text",
    [
        "++hardware.env_vars.DB_PASSWORD={a},{b}",
        "eval.engine.api_key=[{a},{b}]",
        "db_password=choice({a}, {b})",
        '{{"password": ["{a}", "{b}"]}}',
    ],
    ids=["sweep", "list", "choice", "json-list"],
)
def test_every_value_of_a_credentials_sweep_in_text_is_masked(text: str) -> None:
    """A sweep of a credential written out (an override quoted in a log, a list in JSON): the first value
    after the name was masked, the others stayed."""
    first, second = planted(), planted()
    masked = scrub_text(f"point failed: {text.format(a=first, b=second)}")
    assert first not in masked and second not in masked, masked


def test_what_follows_a_credential_in_a_list_of_assignments_stays() -> None:
    value = planted()
    masked = scrub_text(f"password={value},user=alice2024, tokens=[151643,151645], the run went on")
    assert masked == "password=***,user=alice2024, tokens=[151643,151645], the run went on", masked


@pytest.mark.parametrize(
    "name", ["MY_PASSWORD", "DB_PASSWD", "GPG_PASSPHRASE", "AWS_CREDENTIALS", "URL_SIGNATURE"]
)
def test_an_upper_case_credential_name_in_text_is_masked(name: str) -> None:
    """`MY_PASSWORD=V` in an environment a child dumped: the rest of the name's word (`WORD`, `PHRASE`) was
    read in lower case only, so only `HF_TOKEN=V`-like names (the word whole) had their value masked."""
    value = planted()
    masked = scrub_text(f"environment of the failed job:\n{name}={value}\nPATH=/usr/bin")
    assert value not in masked and f"{name}=***" in masked, masked


@pytest.mark.parametrize(
    "text", ["eval.engine.api_key={v}", "env.user.api_key: {v}", "self.password = '{v}'"]
)
def test_a_dotted_credential_name_in_text_is_masked(text: str) -> None:
    """An override quoted in a child's log (`eval.engine.api_key=V`), an attribute in a traceback: a dot
    before the name's word was read as more of another word, so the value stayed."""
    value = planted()
    masked = scrub_text(f"failed: {text.format(v=value)}")
    assert value not in masked and "***" in masked, masked


# ------------------------------------------------------------------ more issuers' prefixes

HEX = "0123456789abcdef"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def drawn(alphabet: str, n: int) -> str:
    return "".join(random_source.choice(alphabet) for _ in range(n))


ISSUED = {
    "NVIDIA (nvapi-)": lambda: "nvapi-" + drawn(ALPHABET + "_-", 64),
    "LangSmith (lsv2_pt_)": lambda: f"lsv2_pt_{drawn(HEX, 32)}_{drawn(HEX, 10)}",
    "Databricks (dapi)": lambda: "dapi" + drawn(HEX, 32),
    "Vault (hvs.)": lambda: "hvs." + drawn(ALPHABET, 24),
    "Docker Hub (dckr_pat_)": lambda: "dckr_pat_" + drawn(ALPHABET, 27),
    "SendGrid (SG.)": lambda: f"SG.{drawn(ALPHABET, 22)}.{drawn(ALPHABET, 43)}",
    "Stripe webhook (whsec_)": lambda: "whsec_" + drawn(ALPHABET, 32),
    "age (AGE-SECRET-KEY-1)": lambda: "AGE-SECRET-KEY-1" + drawn(BECH32, 58),
}


@pytest.mark.parametrize("issuer", list(ISSUED))
def test_a_token_of_more_issuers_is_known_by_its_prefix(issuer: str) -> None:
    """Keys a training job or its cluster holds (an NVIDIA NIM endpoint's, LangSmith's tracing key, a
    Databricks or Vault token, a Docker Hub token pulling images, an age key decrypting configs) under
    a plain name or in a log line: no name tells them, only their issuer's prefix."""
    token = ISSUED[issuer]()
    masked = scrub_text(f'job env: NOTE={token}; log: "{token}"')
    assert token not in masked and token[-12:] not in masked and masked.count("***") == 2, masked


def test_words_beginning_like_those_prefixes_stay() -> None:
    texts = ["dapi is a word; SG.1 and hvs.x are short; nvapi-docs, whsec_ alone", "lsv2_pt_1_2"]
    assert [scrub_text(t) for t in texts] == texts
