"""Hunt wave 3 (secrets): a passphrase folded at its spaces; a credential's name in the plural.

A credential with spaces (`correct horse battery staple`, a file: secret's pass phrase) is folded over
lines at its spaces by whatever lays text out in words: rich and textwrap put the break where the space
was, YAML (PyYAML's default width of 80, as a tool dumping a config writes it) too, with the next
line indented. Unfolded, the break and its padding are gone, so the value read back had no space
there and was not found: folded into pieces shorter than a cut-short beginning (12 characters), every
word of it stayed in the text. Now each run of a value's spaces may be where a line broke.

A name in the plural holds several credentials (`OPENAI_API_KEYS=k1,k2` to rotate through, `DB_PASSWORDS`,
`apiKeys`), and so does one numbered (`API_KEY_2`, `apiKey2`, `DB_PASS_2`) or with the word glued to the
one before (libpq's `PGPASSWORD`): `++hardware.env_vars.DB_PASSWORDS=V` was written in clear to
config.yaml, manifest.json, overrides.yaml and provenance.json and printed, as no name pattern took
them. TOKENS stays ordinary: it counts (`MAX_NEW_TOKENS`, `max_tokens`); so do names of what is no
credential after the word (`PASSWORD_FILE`, `API_KEY_ID`). In text (a child's log, a dumped
environment) the same names gave their value away likewise (`PGPASSWORD=V psql`, `"password2": "V"`),
and so did a value on the line below its name: after a shell's line continuation (`--api-key \\`) or a
YAML block scalar's indicator (`password: |`).
"""

from __future__ import annotations

import textwrap

import pytest
import yaml

from launch.config import secrets
from launch.config.secrets import mask_override, public_env, scrub_obj, scrub_text
from t3rl_core import secret
from t3rl_core.secret import mask_revealed

PHRASE = "velvet quarry 42 lantern mosaic"
WORDS = PHRASE.split()
SAID = f"error: login refused for password {PHRASE} (user alice)"


def _folds() -> list[str]:
    return [
        *(textwrap.fill(SAID, width) for width in (10, 16, 24, 40)),
        textwrap.indent(textwrap.fill(SAID, 20), "│ "),  # a panel's border before each line
        yaml.safe_dump({"error": SAID}, width=20),  # indented continuation lines
    ]


@pytest.mark.parametrize("text", _folds())
def test_a_passphrase_folded_at_its_spaces_is_masked_whole(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(secret, "_REVEALED", {PHRASE})  # as a Secret's reveal() leaves it
    for masked in (mask_revealed(text), scrub_text(text, [PHRASE])):
        assert not [word for word in WORDS if word in masked], masked
        assert "alice" in masked and "login" in masked, masked


def test_its_words_elsewhere_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the words in the value's order, with nothing but spaces or a line break between, are it."""
    monkeypatch.setattr(secret, "_REVEALED", {PHRASE})
    text = "the velvet\nquarry is closed; 42 lanterns\nmosaic tiles"
    assert mask_revealed(text) == text


PLURAL_VALUE = "tulip-garden-1987"  # no issuer's form, not random: only its name says what it is


@pytest.mark.parametrize(
    "key",
    [
        "hardware.env_vars.DB_PASSWORDS",
        "hardware.env_vars.OPENAI_API_KEYS",
        "eval.engine.apiKeys",
        "hardware.env_vars.SECRETS",
        "hardware.env_vars.API_KEY_2",
        "eval.engine.apiKey2",
        "hardware.env_vars.PGPASSWORD",
        "hardware.env_vars.DB_PASS_2",
    ],
)
def test_a_credentials_name_numbered_glued_or_in_the_plural_is_masked(
    key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(secrets, "_REMEMBERED", set())
    *parents, name = key.split(".")
    config: dict = {name: PLURAL_VALUE}
    for parent in reversed(parents):
        config = {parent: config}
    assert PLURAL_VALUE not in str(scrub_obj(config))  # config.yaml, manifest.json
    assert PLURAL_VALUE not in mask_override(f"++{key}={PLURAL_VALUE}")  # overrides.yaml, the printed command
    assert public_env({name: PLURAL_VALUE}) == {}  # a command's environment written next to it


def test_counts_and_a_credentials_file_or_id_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secrets, "_REMEMBERED", set())
    plain = {
        "MAX_NEW_TOKENS": "4096",
        "PASSWORD_FILE": "/run/secrets/db",
        "API_KEY_ID": "team-a",
        "NUM_KEYS": "8",  # a count: refused as a literal credential, and masked, when KEYS was read as one
        "MAX_KEYS": "1024",
    }
    config = {"hardware": {"env_vars": plain}, "eval": {"max_tokens": 512}}
    assert scrub_obj(config) == config
    assert mask_override("eval.max_tokens=512") == "eval.max_tokens=512"
    assert mask_override("++hardware.env_vars.NUM_KEYS=8") == "++hardware.env_vars.NUM_KEYS=8"


@pytest.mark.parametrize(
    "text",
    [
        "PGPASSWORD={v} psql -h db",  # a dumped environment, a command a log echoes
        "DB_PASSWORDS={v}",
        "API_KEY_2={v}",
        '{{"password2": "{v}"}}',
        "apiKey2: {v}",
        "run --password2 {v}",
    ],
)
def test_such_a_name_in_text_gives_its_value_away(text: str) -> None:
    """The same names in text (a child's log, a traceback): the value a letter and a digit make out."""
    assert PLURAL_VALUE not in scrub_text(text.format(v=PLURAL_VALUE), [])


@pytest.mark.parametrize("text", ["bypass={v}", "compass: {v}", "passwordless={v}", "layer_2={v}"])
def test_other_words_ending_or_numbered_so_give_nothing(text: str) -> None:
    assert scrub_text(text.format(v=PLURAL_VALUE), []) == text.format(v=PLURAL_VALUE)


@pytest.mark.parametrize(
    "text",
    [
        "mytool --api-key \\\n    {v} \\\n    --port 8000",  # a command over lines, as a log echoes it
        "DB_PASSWORD=\\\n{v}",
        "password: |\n  {v}\n",  # a YAML block scalar
        "db_password: >-\n  {v}",
    ],
)
def test_a_value_on_the_line_below_its_name_is_masked(text: str) -> None:
    assert PLURAL_VALUE not in scrub_text(text.format(v=PLURAL_VALUE), [])


@pytest.mark.parametrize("text", ["mytool --api-key \\\n  --port 8000", "password: |\n  the words of it\n"])
def test_a_line_below_without_a_credentials_value_stays(text: str) -> None:
    assert scrub_text(text, []) == text
