"""Hunt wave 6 (secrets): forms no earlier wave tried, each through `mask_text` (every writer's text
passes it) or `scrub_text` (the launcher's, with the values it knows), in-process.

- An environment dump, a command's output or a log line below a value under a credential's name was
  read as the value's continuation (the fold rule): `HF_TOKEN=V` above `LANG=C.UTF-8` lost that line,
  above `PATH=/usr/bin:/bin` became `HF_TOKEN=***:/bin`, above `--port 8080` lost `--port`.
- A record that keeps a credential's name and its value in two fields (`{"name": "DB_PASSWORD",
  "value": "V"}`: a Kubernetes or ECS `env` entry, SSM, a HAR file; `('X-Api-Key', 'V')`: a header list).
- A token or a secret glued to its qualifier as one lower-case word (Docker's `identitytoken`,
  `accesstoken`, `clientsecret`).
- A value after `=>` or a sign percent-encoded: masked only once another text had compiled the patterns
  (a fresh process's first line kept it), and a sign encoded twice (`password%253DV`) never.
- HTTP Digest's `response` (a hash of the password a dictionary recovers it from).
- A table whose header names a credential's column (AWS's credentials.csv, Markdown, TSV, rich).
- A credential inside base64 of a document (a `.dockerconfigjson`), a known value in base64 twice.
- A value a call or a sign gives a credential (`setPassword("V")`, `setenv("API_KEY", "V", 1)`, `:=`, `?=`).
"""

from __future__ import annotations

import base64
import json

import pytest

from launch.config.secrets import scrub_text
from t3rl_core import secret_prose, secret_shapes
from t3rl_core.secret import mask_text
from t3rl_core.secret_names import is_secret_name

V = "Zq81Lm20Xc77Rt5mN8"

# ------------------------------------------------------------------ a line of its own below a value

FIRST_LINES = [f"password={V}", f"HF_TOKEN={V}", f"api_key: {V}", f"Authorization: Bearer {V}", f"token={V}"]
OWN_LINES = [
    "PATH=/usr/bin:/bin",
    "LANG=C.UTF-8",
    "export HOME=/root",
    "port=8080",
    "--port 8080",
    "--port=8080",
    "- item",
    "+ echo hi",
    "2026-11-29 12:00:01 INFO ready",
    "0.5",
    "/usr/bin/python3",
    "...",
    "ERROR x",
    "12345 tokens",
]


@pytest.mark.parametrize("first", FIRST_LINES)
def test_a_line_of_its_own_below_a_named_value_is_kept_whole(first: str) -> None:
    """An environment dump's next variable, a flag, a date, a path, a level word: a record of its own,
    not the rest of the value above it (which is masked whole)."""
    for own in OWN_LINES:
        masked = mask_text(f"{first}\n{own}")
        assert masked.endswith("\n" + own) and V[:6] not in masked, (first, own, masked)


def test_an_environment_dump_keeps_every_other_variable() -> None:
    dump = f"HOME=/root\nMyApiKey={V}\nPATH=/usr/local/bin:/usr/bin\nDB_PASSWORD={V}x\nLANG=C.UTF-8\n"
    assert (
        mask_text(dump)
        == "HOME=/root\nMyApiKey=***\nPATH=/usr/local/bin:/usr/bin\nDB_PASSWORD=***\nLANG=C.UTF-8\n"
    )


@pytest.mark.parametrize("rest", ["77Rt5mN8", "AbCd9==", "AbCd9=", "-xYz99Q", "Rt5mN8qZ81LmXc77Aa then"])
def test_a_fold_whose_rest_is_no_record_of_its_own_is_still_read_joined(rest: str) -> None:
    """The rest of a random value (a mix of cases and digits, base64's padding, a `-` not starting a
    flag) still continues the value a renderer folded."""
    masked = mask_text(f"password=Zq81Lm20Xc\n{rest}")
    assert "Zq81Lm20Xc" not in masked and rest.split()[0] not in masked, masked


# ------------------------------------------------------------------ a name and its value in two fields

NAMED_FIELDS = [
    f'{{"name": "DB_PASSWORD", "value": "{V}"}}',
    f'{{"Name": "/prod/db_password", "Value": "{V}", "Type": "SecureString"}}',
    f'{{"name": "x-api-key", "value": "{V}"}}',
    f'{{"value": "{V}", "name": "API_TOKEN"}}',
    f'{{"ParameterKey": "DbPassword", "ParameterValue": "{V}"}}',
    f"{{'key': 'api.key', 'value': '{V}'}}",
    f"env:\n- name: MODEL\n  value: qwen3\n- name: DB_PASSWORD\n  value: {V}\n",
    f'- name: API_TOKEN\n  value: "{V}"',
    f"[('Content-Type', 'application/json'), ('X-Api-Key', '{V}')]",
    f"((b'Host', b'api'), (b'X-Auth-Token', b'{V}'))",
    f'[["x-api-key", "{V}"]]',
]


# A value a call or a sign gives a credential.
CALLS = [
    f'ds.setPassword("{V}");',  # Java's setter
    f'client.setApiKey("{V}")',
    f'builder.withToken("{V}")',
    f'keyring.set_password("svc", "alice", "{V}")',  # the last argument is the password
    f'setenv("API_KEY", "{V}", 1)',  # C: the name as an argument, the value after it
    f'config.set("auth", "token", "{V}")',  # configparser
    f'r.hset("creds", "password", "{V}")',  # Redis
    f'password := "{V}"',  # Go
    f"PASSWORD ?= {V}",  # make
    f"export PASSWORD+={V}",
]


@pytest.mark.parametrize("text", NAMED_FIELDS + CALLS)
def test_a_value_in_the_field_beside_its_name_or_given_by_a_call_is_masked(text: str) -> None:
    masked = mask_text(text)
    assert V not in masked and masked.count("***") == 1, masked


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "max_tokens", "value": "4096abc1"}',
        '{"name": "tokenizer", "value": "Qwen3-8B-v2"}',
        "- name: HF_TOKEN\n  valueFrom:\n    secretKeyRef: {name: hf, key: token}",
        '{"name": "api_key", "value": "env:API_KEY1"}',
        '{"name": "DB_PASSWORD", "value": "${oc.env:DB_PASSWORD}"}',
        "[('Content-Type', 'application/json'), ('X-Request-Id', 'abc123def456')]",
        "- name: alice\n  value: abc123def456",
        '{"username": "alice", "value": "abc123def456"}',
        'getpass("Password: ")',
        'keyring.get_password("svc", "alice1234")',  # a getter's arguments say whose, not the value
        'setMaxTokens("4096abcd")',
        '["password", "confirm_pw"]',
        'required=["api_key", "base_url"]',
        "count += 12345678a",
    ],
)
def test_a_field_beside_a_plain_name_a_reference_or_a_getter_stays(text: str) -> None:
    assert mask_text(text) == text


# ------------------------------------------------------------------ glued names


@pytest.mark.parametrize(
    "name", ["identitytoken", "accesstoken", "refreshtoken", "clientsecret", "registrytoken", "ACCESSTOKEN"]
)
def test_a_token_or_secret_glued_to_its_qualifier_is_a_credential(name: str) -> None:
    assert is_secret_name(name)
    for text in (f'{{"auths": {{"ghcr.io": {{"{name}": "{V}"}}}}}}', f"{name}={V}", f"{name}: {V}"):
        assert V not in mask_text(text), text


@pytest.mark.parametrize("name", ["maxtokens", "numtokens", "pagetoken", "tokenizer", "secretsauce"])
def test_a_glued_word_that_counts_or_pages_stays_data(name: str) -> None:
    assert not is_secret_name(name)
    assert mask_text(f"{name}=4096abc1") == f"{name}=4096abc1"


# ------------------------------------------------------------------ the same answer in a fresh process

SIGNS = [
    f"'password' => '{V}'",
    f"$cfg['api_key'] => \"{V}\"",
    f"auth => '{V}'",
    f'"token"=>"{V}"',
    f"?next=%2Flogin%3Fpassword%3D{V}",
    f"password%3A%20{V}",
    f"password%253D{V}",
    f"password%25253A%252520{V}",
    f"PASSWORD ?= {V}",
    f"export PASSWORD+={V}",
]


@pytest.mark.parametrize("text", SIGNS)
def test_a_value_after_any_sign_is_masked_before_any_pattern_was_compiled(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`_value_after` tries the name's patterns where its prefilter (`_value_may_follow`) says a value
    may follow, or always once they are compiled: a prefilter that did not read `=>` or an encoded sign
    as the patterns do masked these only after another text had compiled them (a fresh process's first
    line kept the value)."""
    monkeypatch.setattr(secret_shapes, "_NAMED_VALUE", [])  # as a fresh process starts
    masked = mask_text(text)
    assert V not in masked, masked


def test_a_number_after_an_encoded_sign_stays() -> None:
    assert mask_text("max_tokens%253D4096") == "max_tokens%253D4096"


# ------------------------------------------------------------------ HTTP Digest

DIGEST = (
    'Authorization: Digest username="alice", realm="api", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", '
    'uri="/v1", qop=auth, nc=00000001, cnonce="0a4f113b", response="6629fae49393a05397450978507c4ef1", '
    'opaque="5ccc069c403ebaf9f0171e9517f40e41"'
)


def test_a_digest_response_is_masked() -> None:
    masked = mask_text(DIGEST)
    assert "6629fae49393a05397450978507c4ef1" not in masked and 'response="***"' in masked
    assert 'username="alice"' in masked and "5ccc069c403ebaf9f0171e9517f40e41" in masked
    quoted = json.dumps({"headers": DIGEST.partition(": ")[2]})  # the header's value alone, in a log
    assert "6629fae49393a05397450978507c4ef1" not in mask_text(quoted)


@pytest.mark.parametrize(
    "text",
    [
        'WWW-Authenticate: Digest realm="api", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093"',
        "sha256 digest = 6629fae4",
    ],
)
def test_a_challenge_or_a_file_digest_stays(text: str) -> None:
    assert mask_text(text) == text


# ------------------------------------------------------------------ a table's column

TABLES = {
    "aws credentials.csv": f"User name,Password,Access key ID,Console login link\nalice,{V},AKIAX,https://x\n",
    "markdown": f"| user | password |\n|---|---|\n| alice | {V} |\n| bob | {V}b |\n\nafter, that",
    "tsv": f"name\tapi_key\tmodel\nsvc1\t{V}\tqwen3\nsvc2\t{V}2\tllama",
    "rich": f"┃ user  ┃ token        ┃\n┡━━━━━━━╇━━━━━━━━━━━━━━┩\n│ alice │ {V} │\n└───────┴──────┘",
    "semicolon": f"host;port;db_password\ndb;5432;{V}",
}


@pytest.mark.parametrize("text", TABLES.values(), ids=list(TABLES))
def test_a_value_in_a_credential_column_is_masked(text: str) -> None:
    masked = mask_text(text)
    assert V not in masked, masked
    assert masked.replace("***", V).replace(f"{V}b", V).replace(f"{V}2", V) != masked  # cells kept in place


@pytest.mark.parametrize(
    "text",
    [
        "step,max_tokens,reward\n1,4096,0.5\n2,8192abc1,0.7",
        "key,value\nlr,1e-5\nseed,42abcdef1",
        "model,tokenizer,tokens\nqwen3,Qwen3-8B-tok1,12345678a",
        "user,password\nalice,env:DB_PASS1\n",
        "api_key,model\n\nZq81Lm20Xc77,qwen3,extra",  # a row of another width is not the table's
    ],
)
def test_a_table_without_a_credential_column_stays(text: str) -> None:
    assert mask_text(text) == text


def test_the_launcher_scrub_reads_the_same_forms() -> None:
    """`scrub_text` (the launcher's) masks through `mask_text`: every form above, with no value known."""
    for text in (*NAMED_FIELDS[:2], SIGNS[0], DIGEST, TABLES["markdown"]):
        assert V not in scrub_text(text, []) and "6629fae4939" not in scrub_text(text, [])


# ------------------------------------------------------------------ base64 of a document


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


KNOWN = "tulipgarden1987"  # a value t3rl knows (a Secret revealed it), looking like no key
DOCKER_CONFIG = json.dumps({"auths": {"ghcr.io": {"auth": _b64(f"alice:{KNOWN}")}}})
PLAIN_DOC = "".join(f"key{i}: value number {i} of the config, plain text\n" for i in range(12))


@pytest.mark.parametrize(
    "text",
    [
        f"data:\n  .dockerconfigjson: {_b64(DOCKER_CONFIG)}\n",  # kubectl get secret -o yaml
        f"config.yaml: {_b64(PLAIN_DOC + f'password: {V}' + chr(10))}",
        f'{{"data": {{"env": "{_b64(PLAIN_DOC + "export HF_TOKEN=hf_" + "aB3" * 12)}"}}}}',
        f"twice: {_b64(_b64(PLAIN_DOC + f'api_key={V}'))}",
    ],
)
def test_a_credential_inside_base64_of_a_document_is_masked(text: str) -> None:
    masked = mask_text(text)
    assert "***" in masked and masked.count("***") == 1, masked
    assert scrub_text(text, [KNOWN]) == masked


def test_a_known_value_inside_base64_twice_is_masked() -> None:
    """A registry's `auth` (base64 of `user:V`) inside a base64 `.dockerconfigjson`: `encodings` holds a
    value's base64 forms once only; the document decoded is searched for the value."""
    # Under no credential's name and longer than a key: nothing but the known value makes it one.
    outer = _b64(json.dumps({"note": "plain words " * 20, "login": _b64(f"alice:{KNOWN}")}))
    assert mask_text(f"cfg {outer}") == f"cfg {outer}"
    assert scrub_text(f"cfg {outer}", [KNOWN]) == "cfg ***"


def test_base64_of_a_plain_document_or_of_binary_stays() -> None:
    plain = f"config.yaml: {_b64(PLAIN_DOC)}"
    binary = "png: " + base64.b64encode(bytes(range(256)) * 2).decode()
    assert mask_text(plain) == plain and mask_text(binary) == binary
    assert scrub_text(plain, [KNOWN]) == plain


@pytest.mark.parametrize("ids", [300, 3000])
def test_json_lines_are_not_read_as_a_table(ids: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Records a line each (trajectories.jsonl as a copier reads it, line breaks kept) hold a credential's
    word and hundreds of commas, as many on every line: no cell of them is judged as a column's name
    (each was: 100 M instructions a 40 KB record, against 14 M for all of mask_text)."""
    judged: list[str] = []
    monkeypatch.setattr(secret_prose, "is_secret_name", lambda name: judged.append(name) or False)
    record = json.dumps({"token_ids": list(range(ids)), "note": "the api key is unset"}) + "\n"
    assert mask_text(record * 2) == record * 2
    assert judged == [], judged[:5]
